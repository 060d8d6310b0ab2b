"""The Python blocks of the README and docs/ run as printed (issue 37).

Each page's blocks run in order in a fresh folder of their own (``file:``
blocks saved into it first), each in a new interpreter with the user's data
folder moved into the test's, so nothing reaches the real one. A block marked
``illustrative`` only has to compile (see tests/_doc_blocks.py for the markers).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests._doc_blocks import PAGES, Block, all_blocks, blocks
from tests.conftest import require_service

# Top-level ``await`` is allowed, as in a notebook or ``python -m asyncio``.
_RUNNER = """
import ast, asyncio, sys
source = open(sys.argv[1], encoding="utf-8").read()
code = compile(source, sys.argv[2], "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
result = eval(code, {"__name__": "__main__"})
if asyncio.iscoroutine(result):
    asyncio.run(result)
"""
_SERVICES = {"nats": ("NATS", "127.0.0.1", 4222), "postgres": ("PostgreSQL", "127.0.0.1", 5432)}
_NO_KEYS = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "WAYGRAPH_STORE", "WAYGRAPH_LIBRARY")


@pytest.mark.parametrize("block", all_blocks("python"), ids=lambda b: b.where)
def test_every_python_block_compiles(block: Block):
    try:
        compile(block.body, block.where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    except SyntaxError as exc:
        pytest.fail(f"{block.where}: {exc}")


def test_every_marker_names_a_reason_or_a_file():
    for block in all_blocks("python", "json", "yaml", "dot", "sh", "console", "bash", "text"):
        if block.marker in ("illustrative", "file", "needs"):
            assert block.arg, f"{block.where}: <!-- {block.marker}: ... --> says nothing"
        if block.marker == "needs":
            assert block.arg in _SERVICES, f"{block.where}: no service {block.arg!r}"


def _run(block: Block, source: str, folder: Path) -> str | None:
    script = folder / "_block.py"
    script.write_text(source, encoding="utf-8")
    runner = folder / "_runner.py"
    runner.write_text(_RUNNER, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in _NO_KEYS}
    env |= {"XDG_DATA_HOME": str(folder / "_data"), "COLUMNS": "200"}
    try:
        done = subprocess.run(
            [sys.executable, str(runner), str(script), block.where],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    except subprocess.TimeoutExpired:
        return f"{block.where}: still running after 120 s"
    if done.returncode != 0:
        return f"{block.where}: exit {done.returncode}\n{done.stderr[-2000:]}"
    return None


def _pages_with_python() -> list[Path]:
    return [p for p in PAGES if any(b.lang == "python" for b in blocks(p))]


@pytest.mark.parametrize("page", _pages_with_python(), ids=lambda p: p.name)
def test_the_python_blocks_of_a_page_run_as_printed(page: Path, tmp_path: Path):
    page_blocks = blocks(page)
    for block in page_blocks:
        if block.marker == "file":
            (tmp_path / block.arg).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / block.arg).write_text(block.body, encoding="utf-8")
    failures = []
    previous = ""
    for block in page_blocks:
        if block.lang != "python" or block.marker == "illustrative":
            continue
        if block.marker == "needs":
            require_service(*_SERVICES[block.arg])
        source = previous + block.body if block.marker == "continues" else block.body
        previous = source + "\n"
        failure = _run(block, source, tmp_path)
        if failure:
            failures.append(failure)
    assert failures == [], "\n\n".join(failures)
    # A snippet copied twice must not carry on a run it left in the user's own store.
    stray = sorted(p.name for p in (tmp_path / "_data").rglob("*.db"))
    assert stray == [], f"{page.name}: a block kept runs in the user's data folder"
