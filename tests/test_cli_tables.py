"""Tables wrap between words at 80 columns: no word of a plan is split across lines."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from rich.console import Console

from waygraph.cli._tables import WordTable
from waygraph.library import load_library

WORD = re.compile(r"[\w'’-]+")


def wg(*args: str, columns: int = 80) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "waygraph", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": str(columns)},
    )


def shown_words(output: str) -> set[str]:
    return {w for line in output.splitlines() for w in WORD.findall(line)}


def prose_words(*texts: str | None) -> set[str]:
    """The words of ``texts``: whitespace tokens that are words, not code."""
    words = set()
    for text in texts:
        for token in (text or "").split():
            token = token.strip(".,;:!?()'\"")
            if WORD.fullmatch(token):
                words.add(token)
    return words


def test_show_plan_at_80_columns_splits_no_word():
    plan = load_library(None).get("bugfix_workflow")
    assert plan is not None
    out = wg("show", "bugfix_workflow")
    assert out.returncode == 0, out.stderr
    assert max(len(line) for line in out.stdout.splitlines()) <= 80
    texts = [plan.id, plan.name, plan.description, plan.goal, *plan.triggers]
    for node in plan.graph.nodes.values():
        texts += [node.id, node.type, node.name, node.tool, node.reason, node.pace_level]
    for edge in plan.graph.edges:
        texts += [edge.from_, edge.to, edge.condition]
    missing = prose_words(*texts) - shown_words(out.stdout)
    assert missing == set(), f"split or lost at 80 columns: {sorted(missing)}"
    assert "code_execution_tool" in out.stdout and "checkpoint" in out.stdout


def test_show_library_at_80_columns_splits_no_word_and_says_what_it_hid():
    library = load_library(None)
    out = wg("show")
    assert out.returncode == 0, out.stderr
    assert max(len(line) for line in out.stdout.splitlines()) <= 80
    texts = [t for plan in library for t in (plan.id, plan.name, *plan.domains)]
    missing = prose_words(*texts) - shown_words(out.stdout)
    assert missing == set(), f"split or lost at 80 columns: {sorted(missing)}"
    assert "hidden at this width: triggers" in " ".join(out.stdout.split())
    wide = wg("show", columns=250)
    assert "hidden at this width" not in wide.stdout and "triggers" in wide.stdout


def test_word_table_gives_spare_room_to_the_column_whose_word_does_not_fit():
    table = WordTable("node", "type", "name")
    table.add_row("cause_found", "checkpoint", "Cause identified in the pricing module at last")
    console = Console(width=40, record=True, color_system=None)
    console.print(table)
    text = console.export_text()
    assert "checkpoint" in text and "identified" in text
    assert max(len(line) for line in text.splitlines()) <= 40
