"""The model options of ``waygraph demo`` and ``waygraph eval`` reach the library.

``--tool-protocol``, ``--context-tokens`` (both commands), ``--max-turns`` and
``--max-tokens`` (demo; eval's ``--max-tokens`` is older): the function each
command calls is replaced by one that records what it was given.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from waygraph.cli import app
from waygraph.cli.app import ToolProtocol

runner = CliRunner()
URL = "http://127.0.0.1:1/v1"


@pytest.fixture
def demo_calls(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []

    def fake(**kwargs: Any) -> Any:
        calls.append(kwargs)
        raise SystemExit(0)

    monkeypatch.setattr("waygraph.demo.run_demo", fake)
    return calls


@pytest.fixture
def eval_configs(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    configs: list[Any] = []

    def fake(config: Any, on_record: Any = None) -> list[Any]:
        configs.append(config)
        return []

    monkeypatch.setattr("waygraph.eval.runner.run_eval", fake)
    monkeypatch.setattr("waygraph.cli._preflight.check_endpoint", lambda *a, **k: None)
    return configs


def test_the_demo_passes_its_model_options_to_run_demo(demo_calls: list[dict[str, Any]]):
    runner.invoke(app, ["demo", "--llm", URL, "--no-preflight"])
    args = [
        *("--tool-protocol", "text", "--context-tokens", "8192"),
        *("--max-turns", "12", "--max-tokens", "256"),
    ]
    runner.invoke(app, ["demo", "--llm", URL, "--no-preflight", *args])
    runner.invoke(app, ["demo", "--max-tokens", "0"])
    keys = ("tool_protocol", "context_tokens", "max_turns", "max_tokens")
    assert [tuple(call[k] for k in keys) for call in demo_calls] == [
        ("auto", None, 40, 1024),
        ("text", 8192, 12, 256),
        ("auto", None, 40, None),
    ]
    assert all(type(call["tool_protocol"]) is str for call in demo_calls)


def test_eval_passes_its_model_options_to_the_eval_config(eval_configs: list[Any], tmp_path: Path):
    base = ["eval", "--llm", URL, "--model", "m", "--tasks", "fix-failing-test"]
    assert runner.invoke(app, [*base, "--out", str(tmp_path / "a")]).exit_code == 0
    more = ["--tool-protocol", "native", "--context-tokens", "4096", "--max-tokens", "0"]
    result = runner.invoke(app, [*base, "--out", str(tmp_path / "b"), *more])
    assert result.exit_code == 0, result.output
    keys = ("tool_protocol", "context_tokens", "max_tokens")
    assert [tuple(getattr(c, k) for k in keys) for c in eval_configs] == [
        ("auto", None, 1024),
        ("native", 4096, None),
    ]


def test_a_scripted_eval_passes_them_too(eval_configs: list[Any], tmp_path: Path):
    args = ["eval", "--scripted", "diligent", "--tasks", "fix-failing-test", "--out", str(tmp_path)]
    result = runner.invoke(app, [*args, "--tool-protocol", "text", "--context-tokens", "2048"])
    assert result.exit_code == 0, result.output
    (config,) = eval_configs
    assert (config.tool_protocol, config.context_tokens) == ("text", 2048)


@pytest.mark.parametrize("command", [["demo"], ["eval", "--model", "m"]], ids=" ".join)
@pytest.mark.parametrize(
    ("option", "value"),
    [("--tool-protocol", "json"), ("--context-tokens", "0"), ("--context-tokens", "many")],
)
def test_bad_values_are_refused_before_anything_runs(
    command: list[str], option: str, value: str, demo_calls: list[Any], eval_configs: list[Any]
):
    result = runner.invoke(app, [*command, "--llm", URL, option, value])
    assert result.exit_code == 2
    assert option in result.output
    assert demo_calls == [] and eval_configs == []


@pytest.mark.parametrize(("option", "value"), [("--max-turns", "0"), ("--max-tokens", "-1")])
def test_the_demo_refuses_a_bound_out_of_range(option: str, value: str, demo_calls: list[Any]):
    result = runner.invoke(app, ["demo", option, value])
    assert result.exit_code == 2 and option in result.output
    assert demo_calls == []


def test_the_choices_are_the_libraries_protocols():
    from waygraph.chat import TOOL_PROTOCOLS

    assert sorted(p.value for p in ToolProtocol) == sorted(TOOL_PROTOCOLS)
