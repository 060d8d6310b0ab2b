"""A missing extra is one line naming it, exit code 2, no traceback, nothing written.

Each command runs as a real subprocess in which an import hook makes the
extra's package unimportable, as on a machine where it was never installed.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

import waygraph
from waygraph._extras import EXTRAS, require
from waygraph.errors import ConfigError, MissingExtra

SRC = Path(waygraph.__file__).parent

#: Runs ``python -m waygraph ARGS`` with the top-level modules in $BLOCKED unimportable.
BLOCKING_MAIN = """
import os, runpy, sys
blocked = set(os.environ["BLOCKED"].split(","))
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in blocked:
            raise ImportError(f"No module named {name!r}")
sys.meta_path.insert(0, Block())
sys.argv[0] = "waygraph"
runpy.run_module("waygraph", run_name="__main__", alter_sys=True)
"""


def wg_without(blocked: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BLOCKED": blocked, "COLUMNS": "200", "HOME": str(cwd)}
    env.pop("OPENAI_BASE_URL", None)
    return subprocess.run(
        [sys.executable, "-c", BLOCKING_MAIN, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=cwd,
    )


LLM = ["--llm", "http://127.0.0.1:9/v1", "--model", "m"]


@pytest.mark.parametrize(
    ("blocked", "args", "extra"),
    [
        ("openai", ["plan", "a goal", *LLM], "llm"),
        ("openai", ["eval", *LLM, "--out", "results"], "llm"),
        ("openai", ["eval", "--scripted", "diligent", "--out", "results"], "llm"),
        ("openai", ["demo", "--llm", "http://127.0.0.1:9/v1", "--store", "sqlite:///r.db"], "llm"),
        ("nats", ["events", "tail"], "nats"),
        ("psycopg,psycopg_pool", ["sessions", "list", "--store", "postgresql://h/db"], "postgres"),
        ("mcp", ["mcp"], "mcp"),
        ("fastapi,uvicorn", ["serve", "--port", "0"], "serve"),
    ],
)
def test_a_missing_extra_is_one_line_naming_it_and_exit_2(
    blocked: str, args: list[str], extra: str, tmp_path: Path
):
    out = wg_without(blocked, *args, cwd=tmp_path)
    assert out.returncode == 2, out.stdout + out.stderr
    error = out.stderr.strip()
    assert "Traceback" not in error
    assert "\n" not in error, error
    assert error.startswith("error: ") and "not installed" in error
    # The install hint names the extra, brackets and all (rich markup ate them once).
    assert f"pip install 'waygraph[{extra}]'" in error
    assert list(tmp_path.iterdir()) == []  # no results folder, no session store


def test_require_returns_the_module_and_names_the_extra():
    assert require("llm").__name__ == "openai"
    with pytest.raises(MissingExtra) as caught:
        require("nats", "no_such_module_for_waygraph", purpose="NatsBus")
    err = caught.value
    assert isinstance(err, ConfigError) and isinstance(err, ImportError)
    assert (err.extra, err.module) == ("nats", "no_such_module_for_waygraph")
    assert str(err) == (
        "NatsBus needs the no_such_module_for_waygraph package, which is not installed: "
        "pip install 'waygraph[nats]'"
    )
    with pytest.raises(ValueError, match="unknown extra"):
        require("gpu")


def test_extras_match_pyproject():
    import tomllib

    pyproject = tomllib.loads((SRC.parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    declared = set(pyproject["project"]["optional-dependencies"])
    assert set(EXTRAS) <= declared


#: Modules that import an extra's package at the top and are only imported after
#: require() vouched for it (connect_bus, open_store, waygraph.server's __init__).
GUARDED_MODULES = {
    "events/nats_bus.py",
    "events/_nats_subscription.py",
    "store/postgres.py",
    "store/_pg_schema.py",  # imported by store/postgres.py alone
}


def test_every_optional_import_goes_through_require():
    optional = {name for names in EXTRAS.values() for name in names}
    unguarded = []
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        # A function importing an optional package must call require() first.
        for func in ast.walk(tree):
            if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            calls_require = any(
                isinstance(n, ast.Call) and ast.unparse(n.func).endswith("require")
                for n in ast.walk(func)
            )
            for node in ast.walk(func):
                if _imports(node, optional) and not calls_require:
                    unguarded.append(f"{rel}:{node.lineno} in {func.name}()")
        if rel in GUARDED_MODULES or rel.startswith("server/"):
            continue
        for node in tree.body:
            if _imports(node, optional):
                unguarded.append(f"{rel}:{node.lineno} at module level")
    assert unguarded == []


def _imports(node: ast.AST, optional: set[str]) -> bool:
    if isinstance(node, ast.Import):
        return any(alias.name.split(".")[0] in optional for alias in node.names)
    if isinstance(node, ast.ImportFrom):
        return node.level == 0 and (node.module or "").split(".")[0] in optional
    return False
