"""How the library commands print plans: folding tables, the plan list, one plan in detail."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from rich.table import Table
from rich.text import Text

from waygraph.cli._tables import WordTable
from waygraph.cli.app import console, display_path, plain, print_json

if TYPE_CHECKING:
    from waygraph.library import Library
    from waygraph.model import Edge, Node, Plan

__all__ = ["folding_table", "plural", "print_library", "print_plan"]


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def folding_table(
    *headers: str,
    title: str | None = None,
    ids: tuple[str, ...] = (),
    optional: tuple[str, ...] = (),
) -> Table:
    """A table that wraps between words and folds only tokens longer than a column.

    Columns get room for their longest word first (:class:`WordTable`); a
    token with no word boundary (a regex) folds instead of being cut with "…".
    Ids are what a reader copies into the next command, so the columns named
    in ``ids`` are shrunk last: the other columns wrap first. ``optional``
    columns are left out, in that order, on a terminal too narrow for all words.
    """
    table = WordTable(*headers, title=title, optional=optional)
    for header, column in zip(headers, table.columns, strict=True):
        column.overflow = "fold"
        # rich narrows only wrapping columns while it can; ids have no spaces
        # to wrap at, so no_wrap costs nothing and keeps them whole.
        column.no_wrap = header in ids
    return table


def _root(lib: Library) -> Path | None:
    """The folder sources are shown relative to (the table title names it)."""
    if lib.path is None:
        return None
    return lib.path if lib.path.is_dir() else lib.path.parent


class _PlanRow(TypedDict):
    """One plan's line of ``waygraph library list`` (and its ``--json`` object)."""

    id: str
    name: str
    domains: list[str]
    triggers: list[str]
    trigger_threshold: int
    nodes: int
    edges: int
    linear: bool
    source: str | None


def print_library(lib: Library, *, as_json: bool) -> None:
    rows: list[_PlanRow] = [
        {
            "id": plan.id,
            "name": plan.name,
            "domains": list(plan.domains),
            "triggers": list(plan.triggers),
            "trigger_threshold": plan.trigger_threshold,
            "nodes": len(plan.graph.nodes),
            "edges": len(plan.graph.edges),
            "linear": plan.linear,
            "source": lib.sources.get(plan.id),
        }
        for plan in lib
    ]
    if as_json:
        print_json({"plans": rows})
        return
    table = folding_table(
        "id",
        "name",
        "domains",
        "triggers",
        "nodes",
        "edges",
        "mode",
        "source",
        title=f"{plain(plural(len(rows), 'plan'))} in {plain(display_path(lib.path))}",
        ids=("id",),
        optional=("triggers", "source", "edges", "nodes", "domains"),
    )
    for row in rows:
        table.add_row(
            plain(row["id"]),
            plain(row["name"]),
            plain(", ".join(row["domains"])),
            plain(", ".join(row["triggers"])),
            str(row["nodes"]),
            str(row["edges"]),
            "linear" if row["linear"] else "graph",
            plain(display_path(row["source"], _root(lib))),
        )
    console.print(table)


def print_plan(lib: Library, plan: Plan) -> None:
    fields = Table.grid(padding=(0, 2))
    fields.add_column(style="bold")
    fields.add_column()
    rows: list[tuple[str, Any]] = [
        ("id", plan.id),
        ("name", plan.name),
        ("description", plan.description),
        ("goal", plan.goal),
        ("domains", ", ".join(plan.domains) or "(any)"),
        ("triggers", ", ".join(plan.triggers)),
        ("trigger_threshold", plan.trigger_threshold),
        ("match_mode", lib.match_mode_of(plan)),
        ("stale_after_turns", plan.stale_after_turns),
        ("max_transitions", plan.max_transitions),
        ("mode", "linear" if plan.linear else "graph"),
        ("start", plan.graph.start),
        ("source", display_path(lib.sources.get(plan.id))),
    ]
    for key, value in rows:
        if value is not None and value != "":
            fields.add_row(key, plain(str(value)))
    console.print(fields)
    console.print(
        _sparse_table(
            "nodes",
            ("node", "type", "name", "verify", "retries"),
            [
                (
                    node.id,
                    node.type,
                    _with_details(node.name, _node_details(node, plan)),
                    _verify_text(node),
                    _retries_text(node),
                )
                for node in plan.graph.nodes.values()
            ],
        )
    )
    console.print(
        _sparse_table(
            "edges",
            ("from", "to", "condition", "when"),
            [
                (e.from_, e.to, _with_details(e.condition, _edge_details(e)), _when_text(e))
                for e in plan.graph.edges
            ],
        )
    )


def _sparse_table(
    title: str, headers: tuple[str, ...], rows: list[tuple[str | Text, ...]]
) -> Table:
    """A table without the columns that are empty in every row (cells are shown as written)."""
    keep = [i for i in range(len(headers)) if i < 2 or any(row[i] for row in rows)]
    table = folding_table(*(headers[i] for i in keep), title=title, ids=("node", "from", "to"))
    for row in rows:
        table.add_row(*(Text(c) if isinstance(c := row[i], str) else c for i in keep))
    return table


def _with_details(text: str, details: list[str]) -> Text:
    """``text`` with ``details`` dim, one a line, below it: one column fewer, so
    at 80 columns every column has room for its longest word."""
    cell = Text(text)
    for part in details:
        cell.append("\n" + part, style="dim")
    return cell


def _verify_text(node: Node) -> str:
    from waygraph.draw import predicate_label

    if node.type not in ("task", "decision"):
        return ""
    return predicate_label(node.verify) or "(any result)"


def _when_text(edge: Edge) -> str:
    from waygraph.draw import predicate_label

    return predicate_label(edge.when)


def _retries_text(node: Node) -> str:
    if node.type not in ("task", "decision"):
        return ""
    return "unbounded" if node.max_retries is None else str(node.max_retries)


def _node_details(node: Node, plan: Plan) -> list[str]:
    parts = []
    if node.type == "human":
        from waygraph.verify_types.people import choice_labels

        parts.append(f"asks: {node.question}")
        labels = choice_labels(plan.graph, node.id)
        parts.append("choices: " + (" | ".join(labels) if labels else "(none)"))
    if node.tool:
        parts.append(f"tool {node.tool}")
    if node.join == "all":
        parts.append("join all")
    if node.on_fail:
        parts.append(f"on fail {node.on_fail}")
    if node.required is False:
        parts.append("optional")
    if node.type == "exit":
        parts.append(f"status {node.exit_status}")
    if node.reason:
        parts.append(f"reason: {node.reason}")
    if node.pace_level:
        parts.append(f"pace {node.pace_level}")
    return parts


def _edge_details(edge: Edge) -> list[str]:
    parts = []
    if edge.weight:
        parts.append(f"weight {edge.weight:g}")
    if edge.on_event:
        parts.append(f"on event {edge.on_event}")
    if edge.label:
        parts.append(f"label {edge.label!r}")
    return parts
