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
from rich.table import Table
from rich.text import Text

from waygraph.cli._library_tables import folding_table, plural, print_library, print_plan
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
    plain,
    print_json,
    write_output,
)
from waygraph.errors import ConfigError, PlanFormatError, WaygraphError

if TYPE_CHECKING:
    from waygraph.check import Problem
    from waygraph.model import Plan

OutputOption = Annotated[
    Path | None,
    typer.Option("--output", "-o", help="Write to this file instead of stdout."),
]


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

    Library plans, event-driven state machines and generated plans (JSON or
    YAML) are all checked. Every file is checked even when another one does not
    load: a file that cannot be read or parsed is reported as a 'load-error' problem.

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
            f"{plural(errors, 'error')}, {plural(warnings, 'warning')} "
            f"in {plural(plan_count, 'plan')}"
        )
        style = "red" if errors else ("yellow" if warnings else "green")
        console.print(Text(summary, style=style))
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
    others = 0
    for file in files:
        other = _check_other_kind(file)
        if other is not None:
            problems.extend(other)
            others += 1
            continue
        if file.suffix.lower() in (".dot", ".gv"):
            # Every problem of a DOT file at once, not the first: porting a
            # pipeline is then one pass, not fix-and-rerun.
            found = _dot_problems(file)
            problems.extend(found)
            if any(p.level == "error" for p in found):
                continue
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
    from waygraph.cli._pipeline_lint import without_superseded

    return without_superseded(problems), len(plans) + others


def _dot_problems(file: Path) -> list[Problem]:
    """Every error and warning :func:`~waygraph.formats.dot.read_dot` finds in ``file``, then
    the Attractor lint's, coded by rule id (none for a file it cannot read: the loader
    reports that)."""
    from waygraph.formats.dot import read_dot

    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    report = read_dot(text, file=str(file))
    found = [_load_problem(err, file) for err in report.errors]
    for warning in report.warnings:
        problem = _load_problem(warning, file)
        found.append(dataclasses.replace(problem, code="dot-attribute", level="warning"))
    from waygraph.cli._pipeline_lint import lint_problems  # the specification's lint (§7)

    return found + lint_problems(report, file)


def _check_other_kind(file: Path) -> list[Problem] | None:
    """The problems of a state-machine or generated-plan file; None for a library file.

    Anything that does not read or parse is left to the library loader, which
    reports it as a load-error.
    """
    from waygraph.check import check_generated_plan, check_state_machine

    data = _other_kind_data(file)
    if data is None:
        return None
    kind, content = data
    if kind == "state_machine":
        return check_state_machine(content, name=file.stem, file=str(file))
    return check_generated_plan(content, file=str(file))


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
    from waygraph.ids import shown_id

    text = display_path(problem.file) if problem.file else ""
    # A refused id is shown escaped: its U+202E would reverse the row.
    location = shown_id(problem.plan or "")
    for part in (problem.node, problem.edge):
        if part:
            location += f"/{shown_id(part)}"
    if location:
        text = f"{text}:{location}" if text else location
    if problem.field:
        text += f" field {problem.field}"
    return text


def _problem_table(problems: list[Problem]) -> Table:
    table = folding_table("level", "code", "where", "message", ids=("code",))
    for p in problems:
        level = "[red]error[/]" if p.level == "error" else "[yellow]warning[/]"
        table.add_row(level, plain(p.code), plain(_where(p)), plain(p.message))
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
        print_library(lib, as_json=as_json)
        return
    plan = find_plan(lib, plan_id)
    if as_json:
        from waygraph.formats.json_library import plan_to_data

        print_json({"id": plan.id, **plan_to_data(plan)})
        return
    print_plan(lib, plan)


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
    plan_id: Annotated[
        str,
        typer.Argument(
            metavar="PLAN",
            help="The plan to draw: a library plan id, a plan file holding one plan "
            "(a DOT pipeline, JSON or YAML), or a state-machine or generated-plan file.",
        ),
    ],
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

    An event-driven state machine is drawn with states as nodes and events on
    the edges; a generated plan as its DAG of steps.

    Example: waygraph draw bugfix_workflow -o bugfix.svg
    """
    from waygraph.draw import (
        GraphvizNotFoundError,
        render_with_graphviz,
        to_dot,
        to_mermaid,
        to_svg,
    )

    plan = (
        _other_kind_plan(Path(plan_id))
        or _plan_file(Path(plan_id), library)
        or find_plan(load(library, validate=False), plan_id)
    )
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
            content = render_with_graphviz(to_dot(plan, state=record), "png")  # the one left
        except GraphvizNotFoundError as exc:
            # A missing optional program is the user's choice to make, not a
            # usage error: exit 1 with the fix, as the docs promise.
            err_console.print(f"[bold red]error:[/] {plain(exc)}", highlight=False, soft_wrap=True)
            raise typer.Exit(1) from None
    write_output(content, output)


def _plan_file(path: Path, library: Path | None) -> Plan | None:
    """The one plan of a plan file named instead of a plan id (``waygraph draw pipeline.dot``);
    None when ``path`` is not such a file, or a library is given to look the id up in."""
    from waygraph.formats import format_of
    from waygraph.library import load_library

    if library is not None or not path.is_file() or not format_of(path):
        return None
    plans = list(load_library(path, validate=False))
    if len(plans) != 1:
        ids = ", ".join(p.id for p in plans)
        raise ConfigError(f"{path} holds {len(plans)} plans ({ids}); draw one: -l {path} ID")
    return plans[0]


def _other_kind_plan(path: Path) -> Plan | None:
    """A state-machine or generated-plan file compiled to the graph model; None otherwise.

    The compilers refuse what cannot be drawn (an unknown state, a cycle of
    steps) with the problem named; ``waygraph check`` lists every problem.
    """
    data = _other_kind_data(path)
    if data is None:
        return None
    kind, content = data
    if kind == "state_machine":
        from waygraph.events.statemachine import to_plan, validate_state_machine

        states = content.get("state_machine", content)
        machine = validate_state_machine(states, name=path.stem)
        return to_plan(machine, plan_id=path.stem, name=str(content.get("name") or path.stem))
    from waygraph.errors import InvalidPlanError
    from waygraph.planning import to_graph_plan
    from waygraph.planning._validate import parse_plan

    generated, problems = parse_plan(content, require_dependencies=False)
    if generated is None:
        raise InvalidPlanError(problems)
    return to_graph_plan(generated, path.stem)


def _other_kind_data(path: Path) -> tuple[str, Any] | None:
    """``(kind, parsed data)`` of a state-machine or generated-plan file, else None.

    Anything that does not read or parse is left to the caller's own loading.
    """
    from waygraph._check_kinds import kind_of
    from waygraph.formats import format_of
    from waygraph.formats.json_library import check_file_size, parse_json
    from waygraph.formats.yaml_library import parse_yaml

    fmt = format_of(path)
    if fmt not in ("json", "yaml") or not path.is_file():
        return None
    try:
        text = path.read_text(encoding="utf-8")
        check_file_size(len(text), fmt, str(path))
        # parse_json, not json.loads: a file nested past the recursion limit
        # is a PlanSyntaxError (then a load-error row), not a traceback.
        parse = parse_json if fmt == "json" else parse_yaml
        data = parse(text, file=str(path))
    except (OSError, UnicodeDecodeError, ValueError, WaygraphError):
        return None
    kind = kind_of(data)
    return None if kind == "library" else (kind, data)


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
    err_console.print(
        f"wrote {len(plans)} DOT files to {output}", markup=False, highlight=False, soft_wrap=True
    )


# ---------------------------------------------------------------- schema


@app.command()
@friendly_errors
def schema(output: OutputOption = None) -> None:
    """Print the JSON Schema (draft 2020-12) of plan library files.

    Example: waygraph schema -o waygraph-library.schema.json
    """
    from waygraph.formats.schema import library_schema

    write_output(json.dumps(library_schema(), indent=2, ensure_ascii=False) + "\n", output)
