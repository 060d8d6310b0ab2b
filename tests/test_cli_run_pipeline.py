"""``waygraph run PIPELINE``: simulate, answers, refusals, commands, resume and the store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.pipeline_helpers import run as run_api
from waygraph.cli import app
from waygraph.cli.pipeline_cmds import read_answers
from waygraph.errors import ConfigError
from waygraph.pipelines.checkpoint import Checkpoint
from waygraph.pipelines.record import PipelineRecords
from waygraph.sandbox import landlock

runner = CliRunner()
SPEC = Path(__file__).parent / "fixtures" / "attractor" / "spec"
GATE = SPEC / "2.13-human-gate.dot"


def wg(*args: str, input: str | None = None):
    return runner.invoke(app, list(args), input=input, env={"COLUMNS": "200"})


def test_simulate_json_prints_one_object(tmp_path):
    result = wg(
        "run", str(SPEC / "2.13-branching.dot"), "--simulate", "--json", "--logs", str(tmp_path)
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data) >= {"run_id", "status", "outcome", "path", "completed_nodes", "context"}
    assert data["status"] == "success"
    assert data["outcome"]["status"] == "success"
    assert data["path"] == ["start", "plan", "implement", "validate", "gate", "exit"]
    assert data["completed_nodes"] == data["path"]
    assert data["context"]["graph.goal"] == "Implement and validate a feature"
    assert (tmp_path / "plan" / "prompt.md").read_text() == "Plan the implementation"
    assert json.loads((tmp_path / "checkpoint.json").read_text())["run_id"] == data["run_id"]


def test_simulate_takes_the_first_choice_and_prints_progress(tmp_path):
    result = wg("run", str(GATE), "--simulate", "--logs", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert "start → review_gate → ship_it → exit" in result.stdout
    assert "✓ review_gate" in result.stderr


@pytest.mark.parametrize("content", ['["[F] Fix", "approve"]', "f\n\nA\n"])
def test_answers_file_answers_the_gates_in_order(tmp_path, content):
    answers = tmp_path / "answers"
    answers.write_text(content)
    result = wg(
        "run", str(GATE), "--simulate", "--answers", str(answers), "--json",
        "--logs", str(tmp_path / "logs"),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    path = json.loads(result.stdout)["path"]
    assert path == ["start", "review_gate", "fixes", "review_gate", "ship_it", "exit"]


def test_answers_that_run_out_skip_the_gate_and_the_run_fails(tmp_path):
    answers = tmp_path / "answers.json"
    answers.write_text("[]")
    result = wg("run", str(GATE), "--simulate", "--answers", str(answers), "--logs", str(tmp_path))
    assert result.exit_code == 1
    assert "human skipped interaction" in result.stdout


def test_read_answers_refuses_bad_files(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('["ok", 3]')
    with pytest.raises(ConfigError, match="list of strings"):
        read_answers(bad)
    with pytest.raises(ConfigError, match="cannot read"):
        read_answers(tmp_path / "missing")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "--simulate to run without one"),
        (["--llm", "http://127.0.0.1:9/v1"], "--llm needs --model"),
        (["--simulate", "--auto-approve", "--answers", "x"], "choose one"),
    ],
)
def test_refusals_are_one_clear_line(tmp_path, args, message, monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    result = wg("run", str(GATE), *args, "--logs", str(tmp_path))
    assert result.exit_code == 2
    assert message in " ".join(result.stderr.split())
    assert not (tmp_path / "checkpoint.json").exists()


def test_simulate_wins_over_a_model_url_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    result = wg("run", str(GATE), "--simulate", "--json", "--logs", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["context"]["last_response"].startswith("[Simulated]")


def test_a_missing_pipeline_file_is_an_error_not_a_traceback(tmp_path):
    result = wg("run", str(tmp_path / "nope.dot"), "--simulate")
    assert result.exit_code == 2
    assert "cannot read" in result.stderr


TOOL = """digraph t { start [shape=Mdiamond]; done [shape=Msquare]
    say [shape=parallelogram, tool_command="echo from the tool"]
    start -> say -> done }"""


def test_tool_commands_are_refused_without_allow_commands(tmp_path):
    dot = tmp_path / "tool.dot"
    dot.write_text(TOOL)
    result = wg("run", str(dot), "--simulate", "--json", "--logs", str(tmp_path / "logs"))
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["status"] == "fail" and "--allow-commands" in data["outcome"]["failure_reason"]


@pytest.mark.skipif(landlock.abi_version() < 1, reason="this kernel cannot confine commands")
def test_allow_commands_runs_tool_nodes_in_the_workspace(tmp_path):
    dot = tmp_path / "tool.dot"
    dot.write_text(TOOL)
    result = wg(
        "run", str(dot), "--simulate", "--allow-commands", "--json",
        "--workspace", str(tmp_path), "--logs", str(tmp_path / "logs"),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["context"]["tool.output"] == "from the tool\n"


class Crash(BaseException):
    pass


def test_resume_continues_a_run_from_its_run_folder(tmp_path):
    logs = tmp_path / "logs"

    def die_after_plan(cp: Checkpoint) -> None:
        (logs / "checkpoint.json").write_text(cp.model_dump_json())
        if cp.current_node == "plan":
            raise Crash

    with pytest.raises(Crash):
        run_api(SPEC / "2.13-branching.dot", logs, save_checkpoint=die_after_plan, run_id="cut")
    (logs / "plan" / "prompt.md").unlink()  # a finished node is never run again
    result = wg(
        "run", str(SPEC / "2.13-branching.dot"), "--simulate", "--resume", "cut",
        "--logs", str(logs), "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["run_id"] == "cut"
    assert data["path"] == ["start", "plan", "implement", "validate", "gate", "exit"]
    assert not (logs / "plan" / "prompt.md").exists()


def test_store_records_the_run_for_sessions_and_the_dashboard(tmp_path):
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    result = wg("run", str(GATE), "--simulate", "--store", store, "--json", "--logs", str(tmp_path))
    assert result.exit_code == 0, result.output
    run_id = json.loads(result.stdout)["run_id"]
    [listed] = PipelineRecords(store).list()
    assert (listed.run_id, listed.status) == (run_id, "completed")


def test_unconfined_runs_tool_nodes_without_the_kernel_confinement(tmp_path):
    dot = tmp_path / "tool.dot"
    dot.write_text(TOOL)
    result = wg(
        "run", str(dot), "--simulate", "--allow-commands", "--unconfined", "--json",
        "--workspace", str(tmp_path), "--logs", str(tmp_path / "logs"),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["context"]["tool.output"] == "from the tool\n"


def test_a_codergen_stage_speaks_the_text_tool_protocol_with_the_run_flags(tmp_path):
    from waygraph.testing import ScriptedChatServer

    dot = tmp_path / "one.dot"
    dot.write_text(
        'digraph g { start [shape=Mdiamond]; work [prompt="write notes.txt"]; '
        "exit [shape=Msquare]; start -> work -> exit }"
    )
    written = json.dumps(
        {"tool_name": "write_file", "tool_args": {"path": "notes.txt", "content": "hi"}}
    )
    with ScriptedChatServer([written, "wrote it"]) as server:
        result = wg(
            "run", str(dot), "--llm", server.base_url, "--model", "m",
            "--workspace", str(tmp_path), "--logs", str(tmp_path / "logs"),
            "--tool-protocol", "text", "--max-tokens", "200", "--context-tokens", "4096",
        )  # fmt: skip
        requests = server.requests
    assert result.exit_code == 0, result.output
    assert (tmp_path / "notes.txt").read_text() == "hi"
    assert all("tools" not in r and r["max_tokens"] == 200 for r in requests)
    assert requests[1]["messages"][-1]["content"].startswith("Result of write_file:")
