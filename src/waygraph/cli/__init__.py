"""The ``waygraph`` command."""

# ruff: isort: skip_file
# Importing a module registers its commands; the import order is the order
# `waygraph --help` lists them in: plans, guided runs, integrations, the
# server, eval, then the event-driven commands.

from __future__ import annotations

import sys

from waygraph.cli import check_cmds  # noqa: F401
from waygraph.cli import library_cmds  # noqa: F401
from waygraph.cli import init_cmds  # noqa: F401
from waygraph.cli import run_cmds  # noqa: F401
from waygraph.cli import pipeline_cmds  # noqa: F401
from waygraph.cli import play_cmds  # noqa: F401
from waygraph.cli import session_cmds  # noqa: F401
from waygraph.cli import plan_cmds  # noqa: F401
from waygraph.cli import integration_cmds  # noqa: F401
from waygraph.cli import serve_cmds  # noqa: F401
from waygraph.cli import eval_cmds  # noqa: F401
from waygraph.cli import event_cmds  # noqa: F401
from waygraph.cli import event_outbox_cmds  # noqa: F401  (after event_cmds: on its group)
from waygraph.cli import learn_cmds  # noqa: F401
from waygraph.cli import stats_cmds  # noqa: F401
from waygraph.cli import tune_cmds  # noqa: F401
from waygraph.cli.app import app

__all__ = ["app", "main"]


def main() -> None:
    """The ``waygraph`` command's entry point: run the typer app on ``sys.argv``."""
    # Text from files and models reaches stdout and stderr in many places; a
    # character the stream cannot encode (a lone surrogate, or any non-ASCII
    # text under an ASCII locale) is written as an escape, not a traceback.
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    app()
