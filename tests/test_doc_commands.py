"""Every ``waygraph`` command line of the README and docs/ is one the CLI accepts (issue 37).

Each line is parsed by the command it names, as the shell would hand it over:
the command exists, every option is one it has (with a value of the right
kind, a choice among its choices), and its arguments fit. Nothing runs: the
lines need models, services and files a reader has, a test does not.
"""

from __future__ import annotations

import re
import shlex

import pytest
import typer
import typer._click as click  # typer carries its own click; the CLI's commands are its

from tests._doc_blocks import Block, all_blocks, command_lines
from waygraph.cli import app

# What a printed line carries besides the command: an optional part in
# brackets, a pipe or redirection, a comment, a `;`/`&&` and what follows it.
_TRIM = [re.compile(p) for p in (r"\s+\[[^\]]*\]", r"\s*(\||>|;|&&).*$", r"\s+#.*$")]


def _lines() -> list[object]:
    shells = [b for b in all_blocks("sh", "bash", "console") if b.marker != "illustrative"]
    lines = [(b, line) for b in shells for line in command_lines(b)]
    return [pytest.param(b, line, id=f"{b.where}:{line.split()[1]}") for b, line in lines]


def _argv(line: str) -> list[str]:
    for pattern in _TRIM:
        line = pattern.sub("", line)
    return shlex.split(line)[1:]


def _parse(argv: list[str]) -> click.Context:
    command: click.Command = typer.main.get_command(app)
    ctx = command.make_context("waygraph", list(argv), resilient_parsing=True)
    while hasattr(command, "get_command") and ctx._protected_args + ctx.args:
        name, *rest = ctx._protected_args + ctx.args
        sub = command.get_command(ctx, name)
        if sub is None:
            raise click.exceptions.UsageError(f"no command {name!r}", ctx)
        command = sub
        ctx = command.make_context(name, rest, parent=ctx)
    return ctx


@pytest.mark.parametrize(("block", "line"), _lines())
def test_every_command_line_parses(block: Block, line: str):
    try:
        _parse(_argv(line))
    except click.ClickException as exc:
        pytest.fail(f"{block.where}: `{line}`: {exc.format_message()}")
