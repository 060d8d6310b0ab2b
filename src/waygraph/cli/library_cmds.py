"""Library commands: check, show, draw, convert, schema.

Each command that reads plans takes the shared ``--library`` option (the
shipped plans by default). The inspection commands (show, draw, convert) load
without the semantic checks, so a plan with a mistake can still be looked at,
drawn and converted; ``waygraph check`` is the gate that reports every problem.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from waygraph.cli.app import (
    JsonOption,
    LibraryOption,
    app,
    console,
    display_path,
    err_console,
    find_plan,
    friendly_errors,
    load,
    print_json,
    write_output,
)
from waygraph.errors import ConfigError, PlanFormatError, WaygraphError

if TYPE_CHECKING:
    from waygraph.check import Problem
    from waygraph.library import Library
    from waygraph.model import Edge, Node, Plan

OutputOption = Annotated[
    Path | None,
    typer.Option("--output", "-o", help="Write to this file instead of stdout."),
]


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


# ---------------------------------------------------------------- check


@app.command()
@friendly_errors
def check(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="PATH",
            help="Plan files or folders to check. Default: --library.",
            show_default=False,
        ),
    ] = None,
    strict: Annotated[bool, typer.Option("--strict", help="Warnings also fail (exit 1).")] = False,
    as_json: JsonOption = False,
    library: LibraryOption = None,
) -> None:
    """Check plan files for errors and warnings; exit 1 when there are errors.

    Every file is checked even when another one does not load: a file that
    cannot be read or parsed is reported as a 'load-error' problem.

    Example: waygraph check plans/ --strict
    """
    from waygraph.library import shipped_library_path

    roots = list(paths or []) or [library or shipped_library_path()]
    problems: list[Problem] = []
    plan_count = 0
    for root in roots:
        found, count = _check_path(root)
        problems.extend(found)
        plan_count += count
    errors = sum(1 for p in problems if p.level == "error")
    warnings = len(problems) - errors
    if as_json:
        print_json(
            {
                "problems": [_problem_data(p) for p in problems],
                "errors": errors,
                "warnings": warnings,
                "plans": plan_count,
            }
        )
    else:
        if problems:
            console.print(_problem_table(problems))
        summary = (
            f"{_plural(errors, 'error')}, {_plural(warnings, 'warning')} "
            f"in {_plural(plan_count, 'plan')}"
        )
        style = "red" if errors else ("yellow" if warnings else "green")
        console.print(f"[{style}]{summary}[/]", highlight=False)
    if errors or (strict and warnings):
        raise typer.Exit(1)


def _check_path(root: Path) -> tuple[list[Problem], int]:
    """Check one file or folder as one library; return ``(problems, plans loaded)``.

    Files load one by one so that a broken file is reported and the rest are
    still checked; plan ids must be unique within the folder.
    """
    from waygraph.library import Library, load_library

    problems: list[Problem] = []
    files = _plan_files(root)
    if root.is_dir() and not files:
        problems.append(
            _problem(
                "no-plans",
                "no plan files (.json, .yaml, .yml, .dot, .gv) in this folder",
                file=str(root),
            )
        )
    plans: list[Plan] = []
    sources: dict[str, str] = {}
    meta: dict[str, Any] = {}
    for file in files:
        try:
            loaded = load_library(file, validate=False)
        except WaygraphError as exc:
            problems.append(_load_problem(exc, file))
            continue
        meta = meta or loaded.meta
        for plan in loaded:
            if plan.id in sources:
                problems.append(
                    _problem(
                        "duplicate-plan",
                        f"plan id {plan.id!r} is already defined in {sources[plan.id]}",
                        file=str(file),
                        plan=plan.id,
                    )
                )
                continue
            sources[plan.id] = str(file)
            plans.append(plan)
    combined = Library(plans, meta=meta, sources=sources, files=files, path=root)
    problems.extend(combined.check())
    return problems, len(plans)


def _plan_files(root: Path) -> list[Path]:
    """The plan files :func:`waygraph.load_library` would read from ``root``.

    A path that is not a folder is returned as is, so that a missing file or
    a wrong suffix is reported when it is loaded.
    """
    from waygraph.formats import format_of

    if not root.is_dir():
        return [root]
    return sorted(
        f
        for f in root.rglob("*")
        if f.is_file()
        and format_of(f)
        and not any(part.startswith(".") for part in f.relative_to(root).parts)
    )


def _problem(code: str, message: str, **where: str | None) -> Problem:
    """A problem found by the CLI itself; its level comes from ``check.CODES``."""
    from waygraph.check import CODES, Problem

    return Problem(code, CODES[code][0], message, **where)


def _load_problem(exc: WaygraphError, file: Path) -> Problem:
    if isinstance(exc, PlanFormatError):
        message = exc.reason
        if exc.has_value:
            shown = repr(exc.value)
            message += f" (got {shown if len(shown) <= 80 else shown[:77] + '...'})"
        if exc.line is not None:
            message = f"line {exc.line}: {message}"
        return _problem(
            "load-error",
            message,
            file=exc.file or str(file),
            plan=exc.plan,
            node=exc.node,
            edge=exc.edge,
            field=exc.field,
        )
    return _problem("load-error", str(exc), file=str(file))


def _problem_data(problem: Problem) -> dict[str, Any]:
    """A problem as a JSON-ready dict: every field, None where unknown."""
    return dataclasses.asdict(problem)


def _where(problem: Problem) -> str:
    """``file:plan/node`` (or ``/edge``), with `` field F`` when known."""
    text = display_path(problem.file) if problem.file else ""
    location = problem.plan or ""
    for part in (problem.node, problem.edge):
        if part:
            location += f"/{part}"
    if location:
        text = f"{text}:{location}" if text else location
    if problem.field:
        text += f" field {problem.field}"
    return text


def _table(*headers: str, title: str | None = None, ids: tuple[str, ...] = ()) -> Table:
    """A table that folds long words instead of cutting them with "…".

    Ids are what a reader copies into the next command, so the columns named
    in ``ids`` are shrunk last: the other columns wrap first.
    """
    table = Table(*headers, title=title)
    for header, column in zip(headers, table.columns, strict=True):
        column.overflow = "fold"
        # rich narrows only wrapping columns while it can; ids have no spaces
        # to wrap at, so no_wrap costs nothing and keeps them whole.
        column.no_wrap = header in ids
    return table


def _problem_table(problems: list[Problem]) -> Table:
    table = _table("level", "code", "where", "message", ids=("code",))
    for p in problems:
        level = "[red]error[/]" if p.level == "error" else "[yellow]warning[/]"
        table.add_row(level, escape(p.code), escape(_where(p)), escape(p.message))
    return table


# ---------------------------------------------------------------- show


@app.command()
@friendly_errors
def show(
    plan_id: Annotated[
        str | None,
        typer.Argument(metavar="PLAN", help="Show this plan in detail.", show_default=False),
    ] = None,
    as_json: JsonOption = False,
    library: LibraryOption = None,
) -> None:
    """List the library's plans, or show one plan's fields, nodes and edges.

    Example: waygraph show bugfix_workflow
    """
    lib = load(library, validate=False)
    if plan_id is None:
        _show_library(lib, as_json=as_json)
        return
    plan = find_plan(lib, plan_id)
    if as_json:
        from waygraph.formats.json_library import plan_to_data

        print_json({"id": plan.id, **plan_to_data(plan)})
        return
    _show_plan(lib, plan)


def _root(lib: Library) -> Path | None:
    """The folder sources are shown relative to (the table title names it)."""
    if lib.path is None:
        return None
    return lib.path if lib.path.is_dir() else lib.path.parent


def _show_library(lib: Library, *, as_json: bool) -> None:
    rows = [
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
    table = _table(
        "id",
        "name",
        "domains",
        "triggers",
        "nodes",
        "edges",
        "mode",
        "source",
        title=f"{_plural(len(rows), 'plan')} in {display_path(lib.path)}",
        ids=("id",),
    )
    for row in rows:
        table.add_row(
            escape(row["id"]),
            escape(row["name"]),
            escape(", ".join(row["domains"])),
            escape(", ".join(row["triggers"])),
            str(row["nodes"]),
            str(row["edges"]),
            "linear" if row["linear"] else "graph",
            escape(display_path(row["source"], _root(lib))),
        )
    console.print(table)


def _show_plan(lib: Library, plan: Plan) -> None:
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
            fields.add_row(key, escape(str(value)))
    console.print(fields)
    console.print(
        _sparse_table(
            "nodes",
            ("node", "type", "name", "verify", "max_retries", "details"),
            [
                (
                    node.id,
                    node.type,
                    node.name,
                    _verify_text(node),
                    _retries_text(node),
                    _node_details(node),
                )
                for node in plan.graph.nodes.values()
            ],
        )
    )
    console.print(
        _sparse_table(
            "edges",
            ("from", "to", "condition", "when", "details"),
            [
                (e.from_, e.to, e.condition, _when_text(e), _edge_details(e))
                for e in plan.graph.edges
            ],
        )
    )


def _sparse_table(title: str, headers: tuple[str, ...], rows: list[tuple[str, ...]]) -> Table:
    """A table without the columns that are empty in every row."""
    keep = [i for i in range(len(headers)) if i < 2 or any(row[i] for row in rows)]
    table = _table(*(headers[i] for i in keep), title=title, ids=("node", "from", "to"))
    for row in rows:
        table.add_row(*(escape(row[i]) for i in keep))
    return table


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


def _node_details(node: Node) -> str:
    parts = []
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
    return "; ".join(parts)


def _edge_details(edge: Edge) -> str:
    parts = []
    if edge.weight:
        parts.append(f"weight {edge.weight:g}")
    if edge.on_event:
        parts.append(f"on event {edge.on_event}")
    if edge.label:
        parts.append(f"label {edge.label!r}")
    return "; ".join(parts)


# ---------------------------------------------------------------- draw


class DrawFormat(StrEnum):
    mermaid = "mermaid"
    dot = "dot"
    svg = "svg"
    png = "png"


DRAW_FORMAT_BY_SUFFIX = {
    ".mmd": DrawFormat.mermaid,
    ".mermaid": DrawFormat.mermaid,
    ".dot": DrawFormat.dot,
    ".gv": DrawFormat.dot,
    ".svg": DrawFormat.svg,
    ".png": DrawFormat.png,
}


@app.command()
@friendly_errors
def draw(
    plan_id: Annotated[str, typer.Argument(metavar="PLAN", help="The plan to draw.")],
    fmt: Annotated[
        DrawFormat | None,
        typer.Option(
            "--format",
            "-f",
            help="Output format (default: from -o's suffix, else mermaid). "
            "png needs Graphviz; svg uses it when installed.",
            show_default=False,
        ),
    ] = None,
    output: OutputOption = None,
    state: Annotated[
        Path | None,
        typer.Option(
            "--state",
            help="A run record (JSON, as `waygraph sessions show --json` prints) to colour "
            "nodes by progress.",
        ),
    ] = None,
    library: LibraryOption = None,
) -> None:
    """Draw a plan as Mermaid or DOT text, as SVG, or as PNG through Graphviz.

    Example: waygraph draw bugfix_workflow -o bugfix.svg
    """
    from waygraph.draw import (
        GraphvizNotFoundError,
        render_with_graphviz,
        to_dot,
        to_mermaid,
        to_svg,
    )

    plan = find_plan(load(library, validate=False), plan_id)
    record = _read_state(state) if state is not None else None
    chosen = fmt or DRAW_FORMAT_BY_SUFFIX.get(output.suffix.lower() if output else "")
    chosen = chosen or DrawFormat.mermaid
    content: str | bytes
    if chosen is DrawFormat.mermaid:
        content = to_mermaid(plan, state=record)
    elif chosen is DrawFormat.dot:
        content = to_dot(plan, state=record)
    elif chosen is DrawFormat.svg:
        # SVG never needs Graphviz: without `dot` waygraph lays the plan out
        # itself (the dashboard's drawing), so say which one the user got.
        if shutil.which("dot") is None:
            err_console.print(
                "note: Graphviz 'dot' is not installed; drawn with waygraph's own layout",
                highlight=False,
                soft_wrap=True,
            )
        content = to_svg(plan, state=record)
    else:
        try:
            content = render_with_graphviz(to_dot(plan, state=record), chosen.value)
        except GraphvizNotFoundError as exc:
            # A missing optional program is the user's choice to make, not a
            # usage error: exit 1 with the fix, as the docs promise.
            err_console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
            raise typer.Exit(1) from None
    write_output(content, output)


def _read_state(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read the run record {path}: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"the run record {path} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"the run record {path} must be a JSON object")
    return data


# ---------------------------------------------------------------- convert


class ConvertFormat(StrEnum):
    json = "json"
    yaml = "yaml"
    dot = "dot"


CONVERT_FORMAT_BY_SUFFIX = {
    ".json": ConvertFormat.json,
    ".yaml": ConvertFormat.yaml,
    ".yml": ConvertFormat.yaml,
    ".dot": ConvertFormat.dot,
    ".gv": ConvertFormat.dot,
}

_UNSAFE_FILE_CHARS = re.compile(r"[^A-Za-z0-9._-]")


@app.command()
@friendly_errors
def convert(
    path: Annotated[
        Path | None,
        typer.Argument(
            metavar="PATH",
            help="Plan file or folder to convert. Default: --library.",
            show_default=False,
        ),
    ] = None,
    to: Annotated[
        ConvertFormat | None,
        typer.Option(
            "--to", "-t", help="Target format (default: from -o's suffix).", show_default=False
        ),
    ] = None,
    plan_id: Annotated[
        str | None, typer.Option("--plan", "-p", help="Convert only this plan.")
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Output file (a folder for --to dot with several plans). Default: stdout.",
        ),
    ] = None,
    library: LibraryOption = None,
) -> None:
    """Convert plans between JSON, YAML and DOT.

    JSON and YAML are always written as a library ({"_meta", "plans"}), even
    from a one-plan DOT file. A DOT file holds one plan, so a library of
    several plans converts to one <plan id>.dot file per plan in the -o folder.

    Example: waygraph convert plans.json --to dot -o plans/
    """
    from waygraph.formats.json_library import library_to_data, to_json
    from waygraph.formats.yaml_library import to_yaml

    target = to or CONVERT_FORMAT_BY_SUFFIX.get(output.suffix.lower() if output else "")
    if target is None:
        raise ConfigError("give the target format with --to json|yaml|dot")
    lib = load(path or library, validate=False)
    plans = [find_plan(lib, plan_id)] if plan_id else list(lib)
    if target is ConvertFormat.dot:
        _convert_to_dot(plans, output)
        return
    data = library_to_data(plans, lib.meta)
    write_output(to_json(data) if target is ConvertFormat.json else to_yaml(data), output)


def _convert_to_dot(plans: list[Plan], output: Path | None) -> None:
    # Without a run state, to_dot is formats.dot.plan_to_dot, with its refusals
    # (an edge to a missing node) turned into errors the CLI prints as one line.
    from waygraph.draw import to_dot as plan_to_dot

    if not plans:
        raise ConfigError("the library has no plans to convert")
    if len(plans) == 1 and not (output is not None and output.is_dir()):
        write_output(plan_to_dot(plans[0]), output)
        return
    if output is None or (output.exists() and not output.is_dir()):
        raise ConfigError(
            f"the library has {len(plans)} plans and a DOT file holds one: give -o FOLDER "
            "to write one <plan id>.dot file per plan, or --plan ID for one plan"
        )
    # Case-insensitive file systems would merge "Deploy.dot" and "deploy.dot".
    owners: dict[str, str] = {}
    names: list[str] = []
    for plan in plans:
        name = _UNSAFE_FILE_CHARS.sub("_", plan.id).lstrip(".") or "plan"
        if name.lower() in owners:
            raise ConfigError(
                f"plans {owners[name.lower()]!r} and {plan.id!r} would both be written to "
                f"{name}.dot; convert them one at a time with --plan"
            )
        owners[name.lower()] = plan.id
        names.append(name)
    for plan, name in zip(plans, names, strict=True):
        write_output(plan_to_dot(plan), output / f"{name}.dot", announce=False)
    err_console.print(f"wrote {len(plans)} DOT files to {output}", highlight=False, soft_wrap=True)


# ---------------------------------------------------------------- schema


@app.command()
@friendly_errors
def schema(output: OutputOption = None) -> None:
    """Print the JSON Schema (draft 2020-12) of plan library files.

    Example: waygraph schema -o waygraph-library.schema.json
    """
    from waygraph.formats.schema import library_schema

    write_output(json.dumps(library_schema(), indent=2, ensure_ascii=False) + "\n", output)
