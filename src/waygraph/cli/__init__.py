"""The ``waygraph`` command."""

from __future__ import annotations

import waygraph.cli.event_cmds  # registers worker, planner, events tail
import waygraph.cli.serve_cmds  # noqa: F401  (registers `waygraph serve`)
from waygraph.cli import (  # noqa: F401  (register commands)
    eval_cmds,
    integration_cmds,
    library_cmds,
    run_cmds,
)
from waygraph.cli.app import app

__all__ = ["app", "main"]


def main() -> None:
    app()
