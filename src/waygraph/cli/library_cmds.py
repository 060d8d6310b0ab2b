"""Library commands: show, draw, convert, schema (``waygraph check`` is in ``check_cmds``).

Each command that reads plans takes the shared ``--library`` option (the
shipped plans by default). The inspection commands (show, draw, convert) load
without the semantic checks, so a plan with a mistake can still be looked at,
drawn and converted; ``waygraph check`` is the gate that reports every problem.
"""

from __future__ import annotations

import json
import re
import shutil
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from waygraph.cli._library_tables import print_library, print_plan
from waygraph.cli.app import (
    JsonOption,
    LibraryOption,
    app,
    err_console,
    find_plan,
    friendly_errors,
    load,
    plain,
    plan_file,
    print_json,
    write_output,
)
from waygraph.errors import ConfigError, WaygraphError

if TYPE_CHECKING:
    from waygraph.model import Plan

OutputOption = Annotated[
    Path | None,
    typer.Option("--output", "-o", help="Write to this file instead of stdout."),
]


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
    named = plan_file(plan_id, library) if plan_id is not None else None
    lib = named[0] if named is not None else load(library, validate=False)
    if plan_id is None:
        print_library(lib, as_json=as_json)
        return
    plan = named[1] if named is not None else find_plan(lib, plan_id)
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

    # A state machine or a generated plan first: plan_file would refuse it.
    plan = _other_kind_plan(Path(plan_id))
    if plan is None:
        named = plan_file(plan_id, library)
        plan = named[1] if named is not None else find_plan(load(library, validate=False), plan_id)
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


def _other_kind_plan(path: Path) -> Plan | None:
    """A state-machine or generated-plan file compiled to the graph model; None otherwise.

    The compilers refuse what cannot be drawn (an unknown state, a cycle of
    steps) with the problem named; ``waygraph check`` lists every problem.
    """
    data = other_kind_data(path)
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


def other_kind_data(path: Path) -> tuple[str, Any] | None:
    """``(kind, parsed data)`` of a state-machine or generated-plan file, else None.

    Anything that does not read or parse is left to the caller's own loading.
    """
    from waygraph.check._kinds import kind_of
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
