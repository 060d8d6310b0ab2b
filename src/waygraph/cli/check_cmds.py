"""The ``waygraph check`` command: every problem of plan files and folders.

Files load one by one, so a broken file is reported and the rest are still
checked. A DOT file is read with :func:`~waygraph.formats.dot.read_dot`
(every bad attribute at once, with its line) and linted by the Attractor
specification's rules (:mod:`waygraph.cli._pipeline_lint`); state machines
and generated plans get their own checks.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from waygraph.check._files import PlanFile, read_plan_file
from waygraph.cli._library_tables import folding_table, plural
from waygraph.cli.app import (
    JsonOption,
    LibraryOption,
    app,
    console,
    display_path,
    friendly_errors,
    plain,
    print_json,
)
from waygraph.cli.library_cmds import other_kind_data
from waygraph.errors import PlanFormatError, WaygraphError

if TYPE_CHECKING:
    from waygraph.check import Problem
    from waygraph.model import Plan


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
    from waygraph.library import Library

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
    read: dict[str, PlanFile] = {}
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
            loaded, file_meta = _load(file, read, problems)
        except WaygraphError as exc:
            problems.append(_load_problem(exc, file))
            continue
        meta = meta or file_meta
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
    for problem in combined.check():
        placed = read.get(problem.file or "")
        problems.append(placed.place(problem) if placed is not None else problem)
    problems.extend(_partial_problems(read))
    from waygraph.cli._pipeline_lint import without_superseded

    return without_superseded(problems), len(plans) + others


def _partial_problems(read: dict[str, PlanFile]) -> list[Problem]:
    """What the checks find in the plans that did not load, read without their broken fields.

    One pass then shows a plan's load errors and its other errors (an edge
    to a missing node, an unreachable exit), not the first kind only. Its
    warnings wait until it loads: a field left out (an edge's condition, say)
    changes what they would say.
    """
    from waygraph.check import check_plan

    found = []
    for file, plan_file in read.items():
        for plan in plan_file.partial:
            for problem in check_plan(plan, file=file):
                if problem.level == "error" and not plan_file.beside_errors(problem):
                    found.append(plan_file.place(problem))
    return found


def _load(
    file: Path, read: dict[str, PlanFile], problems: list[Problem]
) -> tuple[list[Plan], dict[str, Any]]:
    """The valid plans and ``_meta`` of ``file``; every problem of a JSON or YAML file,
    at its field's line, goes to ``problems`` (and the file to ``read``)."""
    from waygraph.formats import format_of
    from waygraph.library import load_library

    if format_of(file) not in ("json", "yaml") or not file.is_file():
        loaded = load_library(file, validate=False)
        return list(loaded), loaded.meta
    found = read_plan_file(file)
    read[str(file)] = found
    for error in found.errors:
        at = found.where(error.plan, error.node, error.edge, error.field)
        problems.append(_load_problem(error, file, at=at))
    return found.plans, found.meta


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

    data = other_kind_data(file)
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


def _problem(code: str, message: str, **where: Any) -> Problem:
    """A problem found by the CLI itself; its level comes from ``check.CODES``."""
    from waygraph.check import CODES, Problem

    return Problem(code, CODES[code][0], message, **where)


def _load_problem(exc: WaygraphError, file: Path, *, at: tuple[int, int] | None = None) -> Problem:
    """A load error as a problem; ``at`` is the field's ``(line, column)`` when known."""
    if isinstance(exc, PlanFormatError):
        message = exc.reason
        if exc.has_value:
            shown = repr(exc.value)
            message += f" (got {shown if len(shown) <= 80 else shown[:77] + '...'})"
        if exc.line is not None and at is None:
            message = f"line {exc.line}: {message}"
        return _problem(
            "load-error",
            message,
            file=exc.file or str(file),
            plan=exc.plan,
            node=exc.node,
            edge=exc.edge,
            field=exc.field,
            line=at[0] if at else exc.line,
            column=at[1] if at else None,
        )
    return _problem("load-error", str(exc), file=str(file))


def _problem_data(problem: Problem) -> dict[str, Any]:
    """A problem as a JSON-ready dict: every field, None where unknown."""
    return dataclasses.asdict(problem)


def _where(problem: Problem) -> str:
    """``file:plan/node`` (or ``/edge``), with `` field F`` when known."""
    from waygraph.ids import shown_id

    text = display_path(problem.file) if problem.file else ""
    if text and problem.line is not None:
        text += f":{problem.line}" + (f":{problem.column}" if problem.column else "")
    # A refused id is shown escaped: its U+202E would reverse the row.
    location = shown_id(problem.plan or "")
    for part in (problem.node, problem.edge):
        if part:
            location += f"/{shown_id(part)}"
    if location:
        sep = " " if problem.line is not None else ":"
        text = f"{text}{sep}{location}" if text else location
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
