"""Text from plans, models, tools and errors prints as written: rich reads square
brackets as markup, so ``[waygraph]`` and ``waygraph[llm]`` once vanished.

Commands run as subprocesses; a static guard finds f-strings that put a value
into rich markup without ``waygraph.cli.app.plain()``.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import waygraph
from waygraph.testing import ScriptedChatServer

SRC = Path(waygraph.__file__).parent


def wg(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    env.pop("OPENAI_BASE_URL", None)
    return subprocess.run(
        [sys.executable, "-m", "waygraph", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=cwd,
    )


def test_an_error_message_keeps_its_brackets():
    out = wg("show", "[waygraph]")
    assert out.returncode == 2
    assert "no plan '[waygraph]' in the library" in out.stderr


def test_a_library_folder_with_brackets_is_named_in_the_table_title(tmp_path: Path):
    folder = tmp_path / "plans[v2]"
    folder.mkdir()
    plan = {
        "id": "deploy",
        "name": "Deploy [prod]",
        "graph": {
            "start": "s",
            "nodes": {"s": {"type": "start"}, "done": {"type": "exit", "name": "[waygraph] done"}},
            "edges": [{"from": "s", "to": "done"}],
        },
    }
    (folder / "deploy.json").write_text(json.dumps({"plans": {"deploy": plan}}))
    out = wg("show", "--library", str(folder), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "1 plan in plans[v2]" in out.stdout
    assert "Deploy [prod]" in out.stdout
    out = wg("show", "deploy", "--library", str(folder), cwd=tmp_path)
    assert "Deploy [prod]" in out.stdout and "[waygraph] done" in out.stdout


def test_demo_llm_shows_what_the_model_said_with_its_brackets(tmp_path: Path):
    said = "[waygraph] I fixed it [bold]already[/bold]"
    with ScriptedChatServer([said]) as server:
        out = wg("demo", "--llm", server.base_url, "--store", "memory://", cwd=tmp_path)
    assert "Traceback" not in out.stderr
    assert said in out.stdout
    # The guidance the model gets starts its closing line with [waygraph].
    assert "[waygraph] Plan: Bug Fix Workflow (bugfix_workflow)" in out.stdout


# ------------------------------------------------------------------ the guard

#: Calls whose string arguments rich reads as markup.
MARKUP_METHODS = {"print", "rule", "log", "add_row", "add_column", "add_task", "update", "status"}
MARKUP_CLASSES = {"Panel", "Table", "Column", "from_markup"}
MARKUP_KEYWORDS = {"title", "subtitle", "caption", "description", "last", "header", "footer"}
#: Calls whose result is safe inside markup: escaped text, literal Text, a number.
SAFE_CALLS = {"plain", "Text", "len"}
#: Variables that hold markup the code wrote itself ("[green]ok[/]"), a style
#: name, or text already passed through plain().
MARKUP_VALUES = {"mark", "style", "colour", "verdict", "why"}
#: Owned by another change in flight; the lead removes it from here on merge.
NOT_YET: set[str] = set()


def _unsafe(node: ast.AST) -> list[str]:
    """Values put into an f-string without plain() (a format spec marks a number)."""
    if isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[-1] in SAFE_CALLS:
        return []
    if isinstance(node, ast.JoinedStr):
        found = []
        for part in node.values:
            if not isinstance(part, ast.FormattedValue) or part.format_spec is not None:
                continue
            value = part.value
            if isinstance(value, ast.Call) and ast.unparse(value.func).split(".")[-1] in SAFE_CALLS:
                continue
            if isinstance(value, ast.Name) and value.id in MARKUP_VALUES:
                continue
            found.append(ast.unparse(value))
        return found
    return [text for child in ast.iter_child_nodes(node) for text in _unsafe(child)]


def test_no_f_string_puts_a_value_into_rich_markup_unescaped():
    files = [
        *sorted((SRC / "cli").glob("*.py")),
        *sorted((SRC / "demo").glob("*.py")),
        *sorted((SRC / "eval").glob("*.py")),
    ]
    unescaped = []
    for path in files:
        rel = path.relative_to(SRC).as_posix()
        if rel in NOT_YET:
            continue
        for call in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(call, ast.Call):
                continue
            if any(
                k.arg == "markup" and isinstance(k.value, ast.Constant) and k.value.value is False
                for k in call.keywords
            ):
                continue
            name = ast.unparse(call.func).split(".")[-1]
            if (name in MARKUP_METHODS and isinstance(call.func, ast.Attribute)) or (
                name in MARKUP_CLASSES
            ):
                args = [*call.args, *(k.value for k in call.keywords if k.arg in MARKUP_KEYWORDS)]
            else:
                args = [k.value for k in call.keywords if k.arg in MARKUP_KEYWORDS]
            unescaped += [f"{rel}:{call.lineno} {{{text}}}" for a in args for text in _unsafe(a)]
    assert unescaped == [], "wrap these in plain(): " + ", ".join(unescaped)
