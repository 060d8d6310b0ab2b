"""`waygraph plan --dry-run`: a scripted model (ScriptedChatServer) writes the plan, the
command validates it and shows what would run, and nothing runs: the readable report,
`--json`, invalid plans, the token budget, and bad input."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from waygraph.cli import app
from waygraph.planning import DryRunReport
from waygraph.testing import ScriptedChatServer

pytestmark = pytest.mark.timeout(60)
runner = CliRunner()


def step(
    step_id: str, action: str, deps: tuple[str, ...] = (), tokens: int = 0, **params: Any
) -> dict[str, Any]:
    return {
        "id": step_id,
        "action": action,
        "parameters": params,
        "dependencies": list(deps),
        "estimated_tokens": tokens,
    }


def plan_json(*steps: dict[str, Any], goal: str = "write the notes") -> str:
    return json.dumps({"goal": goal, "steps": list(steps)})


#: s1 and s3 are independent; s2 needs s1; s4 needs s2 and s3. Running it would
#: create out/notes.txt and side.txt in the workspace.
NOTES_PLAN = plan_json(
    step("s1", "shell", tokens=30, command="echo hello > said.txt"),
    step("s2", "write_file", ("s1",), tokens=20, path="out/notes.txt", content="said: ${s1}"),
    step("s3", "shell", command="echo parallel > side.txt"),
    step("s4", "read_file", ("s2", "s3"), path="out/notes.txt"),
)


def cheap(content: str) -> dict[str, Any]:
    """A scripted reply that says it cost 2 tokens (the budget tests count them)."""
    return {
        "content": content,
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def dry_run(server: ScriptedChatServer, workspace: Path, *args: str) -> Any:
    return runner.invoke(
        app,
        [
            *("plan", "write the notes", "--llm", server.base_url, "--model", "scripted"),
            *("--workspace", str(workspace), "--timeout", "10", "--dry-run", *args),
        ],
        env={"COLUMNS": "160"},
    )


def lines(text: str) -> list[str]:
    return [" ".join(line.split()) for line in text.splitlines()]


# ------------------------------------------------------------------ a valid plan


def test_dry_run_shows_layers_batches_critical_path_and_tokens_and_runs_nothing(tmp_path: Path):
    with ScriptedChatServer([NOTES_PLAN]) as server:
        result = dry_run(server, tmp_path, "--max-parallel", "2")
        asked = len(server.requests)
    assert result.exit_code == 0, result.output
    assert asked == 1  # the model planned; nothing else asked it
    assert list(tmp_path.iterdir()) == []  # no shell command ran, no file was written

    out = lines(result.stdout)
    assert out[0].startswith("planning: asking scripted at http://127.0.0.1:")
    assert "(dry run: nothing runs)" in out[0]
    rows = [line for line in out if line.startswith("│")]
    # Layer 0 holds s1 (on the critical path) and s3 in one batch; s2, then s4 follow.
    assert rows[0].startswith("│ 0 │ 1 │ s1 * │ shell(command='echo hello > said.txt')")
    assert rows[1].startswith("│ │ │ s3 │ shell(command='echo parallel > side.txt')")
    assert rows[2].startswith("│ 1 │ 1 │ s2 * │ write_file(")
    assert rows[3].startswith("│ 2 │ 1 │ s4 * │ read_file(") and "│ s2, s3 │" in rows[3]
    assert "critical path: s1 -> s2 -> s4 (3 steps, 50 tokens)" in out
    assert "tokens: 50 estimated, no token budget" in out
    assert out[-1].startswith("valid: 4 steps in 3 layers, up to 2 at once, 2 at most in this plan")
    assert "start" not in result.stdout and result.stderr == ""


def test_json_prints_only_the_report(tmp_path: Path):
    with ScriptedChatServer([NOTES_PLAN]) as server:
        result = dry_run(server, tmp_path, "--json", "--max-parallel", "2")
    assert result.exit_code == 0, result.output
    report = DryRunReport.model_validate_json(result.stdout)  # stdout is the JSON, nothing else
    data = json.loads(result.stdout)
    assert data["valid"] is True and data["problems"] == []
    assert [layer["batches"] for layer in data["layers"]] == [[["s1", "s3"]], [["s2"]], [["s4"]]]
    assert data["critical_path"] == ["s1", "s2", "s4"]
    assert data["execution_mode"] == "parallel" and data["max_parallel"] == 2
    assert report.plan is not None and report.plan.step_ids == ["s1", "s2", "s3", "s4"]
    assert "dry run: nothing runs" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_max_parallel_1_and_sequential_mode_give_one_step_per_batch(tmp_path: Path):
    for args in (["--max-parallel", "1"], ["--mode", "sequential"]):
        with ScriptedChatServer([NOTES_PLAN]) as server:
            result = dry_run(server, tmp_path, "--json", *args)
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout)
        assert data["concurrency"] == 1 and data["peak_parallel"] == 1
        assert [layer["batches"] for layer in data["layers"]] == [
            [["s1"], ["s3"]],
            [["s2"]],
            [["s4"]],
        ]


# ------------------------------------------------------------------ plans that would not run


def test_an_invalid_plan_is_reported_and_exits_1(tmp_path: Path):
    bad = plan_json(step("s1", "shel", command="ls"), step("s2", "read_file", ("s1",), path="x"))
    with ScriptedChatServer([bad] * 3) as server:  # the plan and two repairs
        result = dry_run(server, tmp_path)
        asked = len(server.requests)
    assert result.exit_code == 1, result.output
    assert asked == 3
    out = lines(result.stdout)
    assert "problems:" in out
    assert any(
        line.startswith("- step 's1': unknown tool 'shel' (did you mean 'shell'?)") for line in out
    )
    assert out[-1] == "invalid: 1 problem (unknown_tool at 's1'); nothing would run"
    assert list(tmp_path.iterdir()) == []


def test_an_invalid_plan_with_json_prints_the_report_and_exits_1(tmp_path: Path):
    cyclic = plan_json(
        step("a", "shell", ("b",), command="echo a"),
        step("b", "shell", ("a",), command="echo b"),
        step("c", "shell", command="echo c"),
    )
    with ScriptedChatServer([cyclic] * 3) as server:
        result = dry_run(server, tmp_path, "--json")
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    assert data["valid"] is False
    assert [p[0] for p in data["problems"]] == ["cycle"]
    assert data["unschedulable"] == ["a", "b"]
    assert [layer["steps"] for layer in data["layers"]] == [["c"]]


def test_a_plan_over_the_token_budget_is_flagged(tmp_path: Path):
    pricey = plan_json(
        step("s1", "shell", tokens=400, command="echo a"),
        step("s2", "shell", ("s1",), tokens=300, command="echo b"),
    )
    with ScriptedChatServer([cheap(pricey)] * 3) as server:
        result = dry_run(server, tmp_path, "--token-budget", "500")
    assert result.exit_code == 1, result.output
    out = lines(result.stdout)
    assert "tokens: 700 estimated, budget 500 (6 spent planning, 494 left)" in out
    assert any("estimated at 700 tokens, over the 494 tokens left" in line for line in out)
    assert out[-1] == "invalid: 1 problem (over_budget); nothing would run"


def test_a_plan_within_the_token_budget_is_valid(tmp_path: Path):
    with ScriptedChatServer([cheap(NOTES_PLAN)]) as server:
        result = dry_run(server, tmp_path, "--token-budget", "500", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert (data["token_budget"], data["tokens_spent"], data["budget_left"]) == (500, 2, 498)
    assert data["estimated_tokens"] == 50 and data["over_budget"] is False


# ------------------------------------------------------------------ bad input


def test_approve_and_dry_run_together_are_a_usage_error(tmp_path: Path):
    with ScriptedChatServer([NOTES_PLAN]) as server:
        result = dry_run(server, tmp_path, "--approve")
        asked = len(server.requests)
    assert result.exit_code == 2
    assert asked == 0
    assert "--approve and --dry-run exclude each other" in result.stderr


def test_a_token_budget_below_1_is_refused_naming_the_option(tmp_path: Path):
    with ScriptedChatServer([NOTES_PLAN]) as server:
        result = dry_run(server, tmp_path, "--token-budget", "0")
    assert result.exit_code == 2
    assert "--token-budget" in result.stderr


def test_an_unreachable_model_is_one_line_and_exit_2(tmp_path: Path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    url = f"http://127.0.0.1:{port}/v1"
    result = runner.invoke(
        app,
        ["plan", "goal", "--llm", url, "--model", "m", "--workspace", str(tmp_path), "--dry-run"],
    )
    assert result.exit_code == 2, result.output
    error = result.stderr.strip()
    assert "\n" not in error
    # Checked before planning starts (waygraph.cli._preflight): what failed, where, which flag.
    assert error.startswith(f"error: cannot reach the model server at {url}")
    assert "connection refused" in error and "--llm" in error
