"""``waygraph init``: a starter plan file that editors validate as it is typed.

The plan is YAML with a ``# yaml-language-server: $schema=...`` line on top,
pointing at the JSON Schema of plan files (``waygraph schema``), which init
writes to ``.waygraph/library.schema.json`` in the current folder: a folder
whose name starts with ``.`` is never read as plans, and VS Code's
``yaml.schemas`` setting can point there too (docs/cli.md).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Annotated

import typer

from waygraph.cli.app import app, display_path, err_console, friendly_errors, write_output
from waygraph.errors import ConfigError

__all__ = ["DEFAULT_PLAN", "DEFAULT_SCHEMA_FILE", "init", "starter_plan"]

#: Where ``waygraph init`` writes the plan when no PATH is given.
DEFAULT_PLAN = Path("plans") / "starter.yaml"
#: Where ``waygraph init`` writes the schema the plan's first line points at.
DEFAULT_SCHEMA_FILE = Path(".waygraph") / "library.schema.json"

STARTER = """\
# yaml-language-server: $schema={schema}
# A starter waygraph plan, written by `waygraph init`. Edit it, then run:
#   waygraph check {path}
# The format: docs/plans.md in the waygraph repository.
id: {plan_id}
name: {name}
description: >-
  A template to change: make the change the user asked for, run the tests, and go
  back to the change while they fail. After a third change that fails, a person is asked.
domains: [general]
triggers: [{trigger}]
trigger_threshold: 1
graph:
  start: start
  nodes:
    start:
      type: start
      name: Task requested
    make_change:
      type: task
      name: Make the change
      action: >-
        Make the change the user asked for, in small steps. Say which files you changed.
      verify: {{type: any_output}}
      max_retries: 2
    run_tests:
      type: task
      name: Run the tests
      action: Run the full test suite and read every failure.
      tool_hint: python -m pytest -q
      verify: {{type: exit_code_zero}}
      max_retries: 0
    ask_for_help:
      type: escalate
      name: Tests still fail
      reason: >-
        The tests still fail after three changes. Stop editing; show the user the last
        test output and what was tried, and ask how to continue.
    done:
      type: exit
      name: Tests pass
  edges:
    - {{from: start, to: make_change, condition: always}}
    - {{from: make_change, to: run_tests, condition: on_success}}
    - {{from: make_change, to: ask_for_help, condition: on_exhaust}}
    - {{from: run_tests, to: done, condition: on_success}}
    - {{from: run_tests, to: make_change, condition: on_fail}}
"""


def starter_plan(path: Path, schema: str) -> str:
    """The starter plan for ``path``: its id and name come from the file name.

    Example:
        >>> text = starter_plan(Path("plans/deploy-app.yaml"), "../schema.json")
        >>> text.splitlines()[0]
        '# yaml-language-server: $schema=../schema.json'
        >>> [line for line in text.splitlines() if line.startswith(("id:", "triggers:"))]
        ['id: deploy_app', 'triggers: [deploy app]']
    """
    plan_id = re.sub(r"[^a-z0-9_]+", "_", path.stem.lower()).strip("_") or "starter"
    if plan_id[0].isdigit():
        plan_id = f"plan_{plan_id}"
    words = plan_id.replace("_", " ")
    return STARTER.format(
        schema=schema,
        path=path.as_posix(),
        plan_id=plan_id,
        name=words.capitalize(),
        trigger=words,
    )


@app.command()
@friendly_errors
def init(
    path: Annotated[
        Path,
        typer.Argument(help="The plan file to write (YAML).", show_default=True),
    ] = DEFAULT_PLAN,
    force: Annotated[
        bool, typer.Option("--force", "-f", help="Overwrite the plan file if it exists.")
    ] = False,
    schema: Annotated[
        str | None,
        typer.Option(
            "--schema",
            help=(
                "What the plan's schema line points at (a URL or path), instead of "
                f"writing {DEFAULT_SCHEMA_FILE.as_posix()}."
            ),
            show_default=False,
        ),
    ] = None,
) -> None:
    """Write a starter plan file, with the schema line editors read, that passes waygraph check.

    The schema goes to .waygraph/library.schema.json (refreshed each time)
    unless --schema names one. An existing plan file is kept unless --force.

    Example: waygraph init plans/deploy.yaml
    """
    if path.suffix.lower() not in (".yaml", ".yml"):
        raise ConfigError(f"{display_path(path)}: waygraph init writes YAML (.yaml or .yml)")
    if path.exists() and not force:
        raise ConfigError(f"{display_path(path)} exists; pass --force to overwrite it")
    if schema is None:
        from waygraph.formats.schema import library_schema

        text = json.dumps(library_schema(), indent=2, ensure_ascii=False) + "\n"
        write_output(text, DEFAULT_SCHEMA_FILE, announce=False)
        # The line is read relative to the plan file's folder.
        schema = Path(os.path.relpath(DEFAULT_SCHEMA_FILE, path.parent or ".")).as_posix()
    write_output(starter_plan(path, schema), path, announce=False)
    err_console.print(
        f"wrote {display_path(path)} (schema: {schema}); check it with: "
        f"waygraph check {display_path(path)}",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
