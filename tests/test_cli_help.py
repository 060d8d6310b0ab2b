"""Every command's --help names its arguments in capitals and shows no type on
flags; shell completion can be installed."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
import typer
from typer.testing import CliRunner

from waygraph.cli import app

runner = CliRunner()


def command_paths() -> Iterator[list[str]]:
    def walk(command: object, path: list[str]) -> Iterator[list[str]]:
        yield path
        for name, sub in getattr(command, "commands", {}).items():
            yield from walk(sub, [*path, name])

    yield from walk(typer.main.get_command(app), [])


PATHS = list(command_paths())


def test_the_walk_finds_nested_commands():
    assert ["plan"] in PATHS and ["sessions", "show"] in PATHS and ["events", "tail"] in PATHS


@pytest.mark.parametrize("path", PATHS, ids=lambda p: " ".join(p) or "waygraph")
def test_help_usage_names_arguments_and_flags_show_no_type(path: list[str]):
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    usage = next(line for line in result.output.splitlines() if "Usage:" in line)
    assert "{" not in usage and "}" not in usage, usage
    assert "<bool>" not in result.output


@pytest.mark.parametrize(
    ("path", "usage"),
    [
        (["plan"], "plan [OPTIONS] [GOAL]"),
        (["match"], "match [OPTIONS] MESSAGE"),
        (["sessions", "show"], "sessions show [OPTIONS] SESSION_ID"),
        (["check"], "check [OPTIONS] [PATH...]"),
    ],
)
def test_usage_lines_read_like_the_docs(path: list[str], usage: str):
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
    assert usage in result.output


def as_waygraph(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """Run the CLI under the program name ``waygraph``, as the installed script is."""
    code = "import sys; sys.argv[0] = 'waygraph'; from waygraph.cli import main; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )


def test_completion_is_offered_and_completes_commands():
    help_text = as_waygraph({"COLUMNS": "200"}, "--help").stdout
    assert "--install-completion" in help_text and "--show-completion" in help_text
    script = as_waygraph(
        {"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}, "--show-completion", "bash"
    )
    assert script.returncode == 0 and "_waygraph_completion()" in script.stdout
    words = as_waygraph(
        {"_WAYGRAPH_COMPLETE": "complete_bash", "COMP_WORDS": "waygraph se", "COMP_CWORD": "1"}
    )
    assert words.stdout.split() == ["serve", "sessions"]
