"""`waygraph plan`: a scripted model (ScriptedChatServer) writes the plan, the real
command runs it against a temporary workspace; progress lines, JSON, approval at the
console, invalid plans, user tools, bad input, the live view and Ctrl-C."""

from __future__ import annotations

import io
import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from waygraph.cli import app
from waygraph.cli.plan_tools import CommandFailed, load_tools, workspace_tools
from waygraph.cli.plan_view import LiveView
from waygraph.errors import ConfigError
from waygraph.planning import Plan, PlanExecutionState, StepResult, StepStatus
from waygraph.testing import ScriptedChatServer

pytestmark = pytest.mark.timeout(60)
runner = CliRunner()


def step(step_id: str, action: str, deps: tuple[str, ...] = (), **params: Any) -> dict[str, Any]:
    return {"id": step_id, "action": action, "parameters": params, "dependencies": list(deps)}


def plan_json(*steps: dict[str, Any], goal: str = "write the notes") -> str:
    return json.dumps({"goal": goal, "steps": list(steps)})


#: Two independent shell steps, a file written from the first, then read back.
NOTES_PLAN = plan_json(
    step("s1", "shell", command="echo hello"),
    step("s2", "write_file", ("s1",), path="out/notes.txt", content="said: ${s1}"),
    step("s3", "shell", command="echo parallel > side.txt && cat side.txt"),
    step("s4", "read_file", ("s2", "s3"), path="out/notes.txt"),
)


def plan(server: ScriptedChatServer, workspace: Path, *args: str, **kwargs: Any) -> Any:
    return runner.invoke(
        app,
        [
            "plan",
            "write the notes",
            "--llm",
            server.base_url,
            "--model",
            "scripted",
            "--workspace",
            str(workspace),
            "--timeout",
            "10",
            *args,
        ],
        **kwargs,
    )


def lines(text: str) -> list[str]:
    return [" ".join(line.split()) for line in text.splitlines()]


# ------------------------------------------------------------------ a plan that runs


def test_a_parallel_plan_runs_real_tools_and_prints_one_line_per_event(tmp_path: Path):
    with ScriptedChatServer([NOTES_PLAN]) as server:
        result = plan(server, tmp_path)
        request = server.requests[0]
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "notes.txt").read_text() == "said: hello\n"
    assert (tmp_path / "side.txt").read_text() == "parallel\n"

    out = lines(result.stdout)
    assert out[0].startswith("planning: asking scripted at http://127.0.0.1:")
    assert out[1] == "plan: 4 steps (s1, s2, s3, s4)"
    # Both roots start before anything finishes: they run side by side.
    first_end = next(i for i, line in enumerate(out) if line.startswith("completed"))
    assert {"start s1 shell", "start s3 shell"} <= set(out[:first_end])
    assert any(line.startswith("completed s2") and "wrote out/notes.txt" in line for line in out)
    assert out.index("start s4 read_file") > max(
        i for i, line in enumerate(out) if line.startswith(("completed s2", "completed s3"))
    )
    assert out[-2].startswith("success: 4 completed, 0 revisions, ")
    assert out[-1] == "output: said: hello"

    # The planning model saw the workspace tools and where their paths start.
    system, user = (m["content"] for m in request["messages"])
    assert (
        "shell(command: string)" in system and "write_file(path: string, content: string)" in system
    )
    assert "Goal: write the notes" in user and "relative to it. It is empty." in user


def test_json_prints_the_execution_result_and_keeps_progress_off_stdout(tmp_path: Path):
    with ScriptedChatServer([NOTES_PLAN]) as server:
        result = plan(server, tmp_path, "--json", "--mode", "sequential")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["success"] is True and data["final_output"] == "said: hello\n"
    assert {sid: r["status"] for sid, r in data["step_results"].items()} == dict.fromkeys(
        ["s1", "s2", "s3", "s4"], "completed"
    )
    assert data["token_usage"]["total_tokens"] > 0
    assert "start     s1  shell" in result.stderr and "success: 4 completed" in result.stderr


@pytest.mark.parametrize(
    ("flag", "formats"),
    [
        # Refused with a 500 (the client tries a 5xx three times), then json_object.
        ("auto", ["json_schema", "json_schema", "json_schema", "json_object"]),
        ("off", [None]),
    ],
)
def test_structured_output_falls_back_on_a_server_error_or_is_switched_off(
    tmp_path: Path, flag: str, formats: list[str | None]
):
    # llama-cpp-python's server answers json_schema with a 500; plan could not run there.
    refused = {"status": 500, "error": "Input should be 'text' or 'json_object'"}
    replies = [refused] * 3 + [NOTES_PLAN] if flag == "auto" else [NOTES_PLAN]
    with ScriptedChatServer(replies) as server:
        result = plan(server, tmp_path, "--structured-output", flag, "--mode", "sequential")
        asked = [r.get("response_format", {}).get("type") for r in server.requests]
    assert result.exit_code == 0, result.output
    assert asked[: len(formats)] == formats


def test_a_failing_command_fails_its_step_blocks_the_rest_and_exits_1(tmp_path: Path):
    failing = plan_json(
        step("build", "shell", command="echo compiling; exit 3"),
        step("ship", "write_file", ("build",), path="shipped.txt", content="yes"),
    )
    with ScriptedChatServer([failing]) as server:
        result = plan(server, tmp_path, "--retries", "0", "--max-revisions", "0")
    assert result.exit_code == 1, result.output
    assert not (tmp_path / "shipped.txt").exists()
    out = lines(result.stdout)
    assert any(
        line.startswith("failed build") and "CommandFailed: exit code 3: compiling" in line
        for line in out
    )
    assert any(line.startswith("blocked ship") for line in out)
    assert out[-2].startswith("failed: 1 failed, 1 blocked, 0 revisions")
    assert out[-1].startswith("The plan did not complete: step 'build' failed")


def test_a_revision_is_shown_as_soon_as_it_is_applied(tmp_path: Path):
    failing = plan_json(
        step("build", "shell", command="exit 3"),
        step("ship", "write_file", ("build",), path="shipped.txt", content="no"),
    )
    fixed = plan_json(step("ship2", "write_file", path="shipped.txt", content="yes"))
    with ScriptedChatServer([failing, fixed]) as server:
        result = plan(server, tmp_path, "--retries", "0")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "shipped.txt").read_text() == "yes"
    out = lines(result.stdout)
    revised = out.index("revised: 1 step (ship2)")  # lines() folds runs of spaces
    assert out[revised - 1].startswith("revision step_failed at build -> replan_remaining")
    assert out[revised + 1] == "start ship2 write_file"


def test_the_workspace_tools_refuse_paths_outside_it(tmp_path: Path):
    shell, write_file, read_file = workspace_tools(tmp_path)
    # The shell is confined by the kernel (tests/test_sandbox.py has the escapes).
    with pytest.raises(CommandFailed):
        shell("cat ../secret.txt")
    for call in (
        lambda: write_file("../x.txt", "no"),
        lambda: read_file("/etc/hostname"),
        lambda: read_file("../x.txt"),
    ):
        with pytest.raises(Exception, match="leaves the workspace"):
            call()
    assert not (tmp_path.parent / "x.txt").exists()


# ------------------------------------------------------------------ approval


def test_approve_with_a_runs_the_plan(tmp_path: Path):
    with ScriptedChatServer([NOTES_PLAN]) as server:
        result = plan(server, tmp_path, "--approve", input="a\n")
    assert result.exit_code == 0, result.output
    assert "Approve this plan?" in result.stdout
    assert '1. s1  shell(command="echo hello")  after: -' in result.stdout
    assert (tmp_path / "out" / "notes.txt").exists()


def test_approve_with_r_refuses_and_runs_nothing(tmp_path: Path):
    with ScriptedChatServer([NOTES_PLAN]) as server:
        result = plan(server, tmp_path, "--approve", input="r too risky\n")
    assert result.exit_code == 1, result.output
    assert list(tmp_path.iterdir()) == []
    out = lines(result.stdout)
    assert not any(line.startswith("start") for line in out)
    assert out[-1] == "plan rejected at the console: too risky"


def test_approve_with_json_asks_on_stderr_and_an_edit_runs_the_edited_plan(tmp_path: Path):
    with ScriptedChatServer([NOTES_PLAN]) as server:
        result = plan(
            server,
            tmp_path,
            "--approve",
            "--json",
            input='e s1 parameters.command="echo edited"\na\n',
        )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["final_output"] == "said: edited\n"
    assert "Approve this plan?" in result.stderr


# ------------------------------------------------------------------ plans that cannot run


def test_a_cyclic_plan_is_sent_back_then_refused_with_the_cycle_named(tmp_path: Path):
    cyclic = plan_json(
        step("a", "shell", ("b",), command="echo a"),
        step("b", "shell", ("a",), command="echo b"),
    )
    with ScriptedChatServer([cyclic] * 3) as server:
        result = plan(server, tmp_path, "--json")
        asked = len(server.requests)
    assert result.exit_code == 1, result.output
    assert asked == 3  # the first plan and two repairs
    data = json.loads(result.stdout)
    assert data["success"] is False and data["step_results"] == {}
    assert [p[0] for p in data["problems"]] == ["cycle"]
    assert "dependencies form a cycle: a -> b -> a" in result.stderr
    assert "not run: " in result.stderr and "start " not in result.stderr


# ------------------------------------------------------------------ user tools

TOOLS_MODULE = '''
def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper() + "!"


def count_words(text: str) -> int:
    """Count the words of a text."""
    return len(text.split())


def _helper() -> None:
    """Not a tool: private."""


SELECTED = [count_words]
'''


def test_tools_module_functions_are_offered_and_called(tmp_path: Path):
    module = tmp_path / "mytools.py"
    module.write_text(TOOLS_MODULE)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    uses_them = plan_json(
        step("s1", "shell", command="printf 'quiet words'"),
        step("s2", "shout", ("s1",), text="$s1"),
    )
    with ScriptedChatServer([uses_them]) as server:
        result = plan(server, workspace, "--tools", str(module))
        system = server.requests[0]["messages"][0]["content"]
    assert result.exit_code == 0, result.output
    assert lines(result.stdout)[-1] == "output: QUIET WORDS!"
    assert "- shout(text: string): Upper-case a text." in system
    assert "count_words" in system and "_helper" not in system


def test_tools_attr_names_a_list_and_only_it_is_offered(tmp_path: Path):
    module = tmp_path / "mytools.py"
    module.write_text(TOOLS_MODULE)
    assert [f.__name__ for f in load_tools(f"{module}:SELECTED")] == ["count_words"]
    assert [f.__name__ for f in load_tools(str(module))] == ["shout", "count_words"]
    with pytest.raises(ConfigError, match="has no attribute 'NOPE'"):
        load_tools(f"{module}:NOPE")


def test_a_bad_tools_path_is_one_line_and_exit_2(tmp_path: Path):
    with ScriptedChatServer([NOTES_PLAN]) as server:
        result = plan(server, tmp_path, "--tools", str(tmp_path / "missing.py"))
        asked = len(server.requests)
    assert result.exit_code == 2
    assert asked == 0
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert (
        result.stderr.startswith("error: ") and "missing.py: no such Python file" in result.stderr
    )


def test_a_tool_named_like_a_workspace_tool_is_refused(tmp_path: Path):
    module = tmp_path / "clash.py"
    module.write_text('def shell(command: str) -> str:\n    """Mine."""\n    return command\n')
    with ScriptedChatServer([]) as server:
        result = plan(server, tmp_path, "--tools", str(module))
    assert result.exit_code == 2
    assert "two tools are named 'shell'; rename yours or pass --no-workspace-tools" in result.stderr


# ------------------------------------------------------------------ the model and options


def test_an_unreachable_model_is_one_line_and_exit_2(tmp_path: Path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    url = f"http://127.0.0.1:{port}/v1"
    result = runner.invoke(
        app, ["plan", "goal", "--llm", url, "--model", "m", "--workspace", str(tmp_path)]
    )
    assert result.exit_code == 2, result.output
    error = result.stderr.strip()
    assert "\n" not in error
    # Checked before planning starts (waygraph.cli._preflight): what failed, where, which flag.
    assert error.startswith(f"error: cannot reach the model server at {url}")
    assert "connection refused" in error and "--llm" in error


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--llm", "localhost:11434", "--model", "m"], "is not an http(s) URL"),
        (["--model", "m"], "--llm URL and --model NAME are required"),
        (["--llm", "http://x/v1", "--model", "m", "--workspace", "/no/such"], "no such folder"),
        (["--llm", "http://x/v1", "--model", "m", "--mode", "fast"], "Invalid value"),
    ],
)
def test_usage_errors_exit_2(args: list[str], message: str, monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    result = runner.invoke(app, ["plan", "goal", *args])
    assert result.exit_code == 2
    assert message in result.stderr


# ------------------------------------------------------------------ the live view


def test_on_a_terminal_the_live_table_shows_every_step_and_the_summary(tmp_path: Path):
    with ScriptedChatServer([NOTES_PLAN]) as server:
        result = plan(server, tmp_path, env={"TTY_COMPATIBLE": "1", "COLUMNS": "140"})
    assert result.exit_code == 0, result.output
    final_table = result.stdout.rsplit("┏", 1)[1].split("success:")[0]  # the last frame
    for sid in ("s1", "s2", "s3", "s4"):
        assert f"│ {sid} " in final_table
    assert final_table.count("completed") == 5  # four rows and the totals line
    assert "│ s2, s3 " in final_table and "said: hello" in final_table
    assert "success: 4 completed, 0 revisions" in result.stdout
    assert "start     s1" not in result.stdout  # no plain progress lines


def test_the_live_table_shows_statuses_revisions_and_new_steps():
    first = Plan(
        goal="g",
        steps=[{"id": "a", "action": "shell"}, {"id": "b", "action": "t", "dependencies": ["a"]}],
    )
    view = LiveView(Console(file=io.StringIO(), width=140))
    view.plan_ready(plan=first)
    state = PlanExecutionState(goal="g", plan=first, statuses={"a": "running", "b": "pending"})
    view.on_step_start(step=first.step("a"), state=state, depth=0)
    failed = StepResult(
        step_id="a", status=StepStatus.FAILED, error="attempt 1: exit code 1", attempts=1
    )
    view.on_step_complete(step=first.step("a"), result=failed, state=state, depth=0)
    view.on_revision_needed(
        trigger="step_failed", reason="step a failed", step_id="a", strategy="replan_remaining"
    )
    revised = first.with_steps([{"id": "fix", "action": "shell"}])
    later = PlanExecutionState(
        goal="g",
        plan=revised,
        statuses={"a": "revised", "b": "revised", "fix": "running"},
        token_usage={"prompt_tokens": 40, "completion_tokens": 2},
    )
    view.on_step_start(step=revised.step("fix"), state=later, depth=0)

    screen = Console(file=io.StringIO(), width=140, record=True)
    screen.print(view.render())
    text = screen.export_text()
    rows = {line.split("│")[1].strip(): line for line in text.splitlines() if line.count("│") > 3}
    assert "revised" in rows["a"] and "attempt 1: exit code 1" in rows["a"]
    assert "revised" in rows["b"] and "│ a " in rows["b"]
    assert "running" in rows["fix"]
    assert "1 running, 2 revised | 42 tokens" in text
    assert "revision: step_failed at a -> replan_remaining: step a failed" in text


# ------------------------------------------------------------------ Ctrl-C


def test_ctrl_c_stops_the_run_and_shows_what_finished(tmp_path: Path):
    slow = plan_json(
        step("quick", "shell", command="echo fast"),
        step("slow", "shell", command="sleep 60 && echo late > late.txt"),
        step("after", "write_file", ("slow",), path="after.txt", content="no"),
    )
    with ScriptedChatServer([slow]) as server:
        process = subprocess.Popen(
            [
                *(sys.executable, "-m", "waygraph", "plan", "g", "--llm", server.base_url),
                *("--model", "m", "--workspace", str(tmp_path), "--json"),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert process.stderr is not None
        seen = []
        for line in process.stderr:
            seen.append(line)
            if line.startswith("completed quick"):
                break
        time.sleep(0.1)
        process.send_signal(signal.SIGINT)
        # The running `sleep 60` is killed with the run, not waited for.
        stdout, stderr = process.communicate(timeout=20)
    assert process.returncode == 130, "".join(seen) + stderr
    assert not (tmp_path / "after.txt").exists() and not (tmp_path / "late.txt").exists()
    data = json.loads(stdout)
    assert data["success"] is False
    assert data["final_output"] == (
        "interrupted (Ctrl-C); completed: quick; running when stopped: slow; not started: after"
    )
    assert data["step_results"]["quick"]["output"] == "fast\n"
    assert "interrupted: " in stderr and "Traceback" not in stderr


def test_a_model_that_only_writes_broken_plans_is_a_failed_run_exit_1(tmp_path: Path):
    # A real 135M model did this; exit 2 is for usage errors and a model that cannot be used.
    with ScriptedChatServer(["I will help you with that!"], loop=True) as server:
        result = plan(server, tmp_path)
    assert result.exit_code == 1, result.output
    assert "no JSON object could be read from the model's reply" in result.stderr
    assert "OpenAI-compatible server" not in result.stderr


def test_each_rejected_plan_is_shown_as_it_comes(tmp_path: Path):
    broken = json.dumps({"goal": "write the notes", "steps": [{"id": "s1", "action": "nope"}]})
    with ScriptedChatServer([broken, NOTES_PLAN]) as server:
        result = plan(server, tmp_path)
    assert result.exit_code == 0, result.output
    assert "plan 1/3 is invalid (sent back to the model):" in result.stderr
    assert "step 's1': has no 'parameters'" in result.stderr


def test_no_resume_hint_for_a_run_that_never_got_a_plan(tmp_path: Path):
    with ScriptedChatServer(["I will help you with that!"], loop=True) as server:
        result = plan(server, tmp_path)
    assert "plan 3/3 is invalid (no attempts left):" in result.stderr
    assert "--resume" not in result.stderr + result.stdout


def test_every_plan_request_bounds_its_reply(tmp_path: Path):
    # Without max_tokens some local servers generate until the context is full.
    with ScriptedChatServer([NOTES_PLAN]) as server:
        plan(server, tmp_path)
        default = [r.get("max_tokens") for r in server.requests]
    with ScriptedChatServer([NOTES_PLAN]) as server:
        plan(server, tmp_path, "--max-tokens", "300")
        given = [r.get("max_tokens") for r in server.requests]
    assert default and set(default) == {2048}
    assert given and set(given) == {300}
