"""`waygraph eval`: listing, a scripted run writing results.json and report.html,
bad options, and the compliance fixtures."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from waygraph.cli import app
from waygraph.errors import ConfigError
from waygraph.eval.compliance import Fixture, load_fixtures, score
from waygraph.eval.scripted import ScriptedModel
from waygraph.eval.suite import all_tasks
from waygraph.testing import ScriptedChatServer

pytestmark = pytest.mark.timeout(60)
runner = CliRunner()


def test_list_prints_one_task_id_per_line():
    result = runner.invoke(app, ["eval", "--list"])
    assert result.exit_code == 0
    assert result.output.splitlines() == [t.id for t in all_tasks()]
    result = runner.invoke(app, ["eval", "--list", "--tasks", "merge*"])
    assert result.output == "merge-with-conflict\n"


def test_a_scripted_run_writes_results_and_an_offline_report(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    with ScriptedChatServer([ScriptedModel("mixed", sloppy_share=1.0)] * 200) as server:
        result = runner.invoke(
            app,
            [
                "eval",
                "--llm",
                server.base_url,
                "--model",
                "scripted",
                "--tasks",
                "fix-failing-test,backup-*",
                "--repeat",
                "2",
                "--out",
                str(tmp_path),
                "--jobs",
                "3",
            ],
        )
        models = {r.get("model") for r in server.requests}
    assert result.exit_code == 0, result.output
    assert models == {"scripted"}
    data = json.loads((tmp_path / "results.json").read_text())
    assert len(data) == 2 * 2 * 2
    assert {k: type(data[0][k]) for k in ("task", "mode", "repeat", "success", "tool_calls")} == {
        "task": str,
        "mode": str,
        "repeat": int,
        "success": bool,
        "tool_calls": int,
    }
    for key in ("tokens", "wall_time", "verification_failures", "escalated"):
        assert key in data[0]
    by_mode = {(d["mode"], d["success"]) for d in data}
    # Sloppy whenever unguided; guided it is diligent (the share is 1/5 there, drawn per run).
    assert ("baseline", True) not in by_mode and ("guided", True) in by_mode
    assert "guided - baseline: +" in result.output
    assert "fix-failing-test" in result.output and "success rate" in result.output

    page = (tmp_path / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and page.count("<svg") == 2
    assert "<script" not in page and not re.search(r"(src|href)=\"https?:", page)
    assert "url(" not in page and "@import" not in page
    assert "guided - baseline" in page and "backup-and-move" in page


def test_missing_and_bad_options_are_clear_errors(tmp_path: Path):
    result = runner.invoke(app, ["eval", "--model", "m"], env={"OPENAI_BASE_URL": ""})
    assert result.exit_code == 2 and "--llm URL and --model NAME are required" in result.output
    result = runner.invoke(
        app,
        [
            "eval",
            "--llm",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
            "--mode",
            "guided,fast",
            "--out",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 2 and "unknown mode 'fast'" in result.output
    result = runner.invoke(app, ["eval", "--list", "--tasks", "zzz"])
    assert result.exit_code == 2 and "matches no task" in result.output


# ------------------------------------------------------------------ compliance


def test_the_shipped_fixtures_cover_three_behaviours():
    fixtures = load_fixtures()
    kinds = [f.test_id.split("_")[0] for f in fixtures]
    assert len(fixtures) >= 9
    assert {k: kinds.count(k) for k in set(kinds)} == {"scope": 3, "retry": 3, "escalate": 3}


def test_scoring_needs_a_success_indicator_and_no_failure_indicator():
    fixture = next(f for f in load_fixtures() if f.test_id == "retry_new_branch_name")
    assert score(fixture, 'shell({"command": "git switch -c feature/login-page"})').passed
    same = score(fixture, 'shell({"command": "git switch -c feature/login"})')
    assert not same.passed and same.matched_failure
    assert not score(fixture, "I will try again.").passed


def good_reply(fixture: Fixture) -> str:
    return f"Following the node: {fixture.success_indicators[0]}"


def bad_reply(fixture: Fixture) -> str:
    return f"{fixture.success_indicators[0]} and also {fixture.failure_indicators[0]}"


def test_compliance_run_scores_a_compliant_and_a_careless_model(tmp_path: Path):
    fixtures = {f.node_instruction.strip(): f for f in load_fixtures()}

    def policy(kind):
        def reply(request):
            last = request["messages"][-1]["content"]
            fixture = next(f for text, f in fixtures.items() if text in last)
            return good_reply(fixture) if kind == "good" else bad_reply(fixture)

        return reply

    for kind, expected in (("good", "9/9 fixtures passed (100%)"), ("bad", "0/9 fixtures passed")):
        with ScriptedChatServer([policy(kind)] * 9) as server:
            result = runner.invoke(
                app,
                [
                    "eval",
                    "--compliance",
                    "--llm",
                    server.base_url,
                    "--model",
                    "m",
                    "--out",
                    str(tmp_path / kind),
                ],
            )
        assert result.exit_code == 0, result.output
        assert expected in result.output
        rows = json.loads((tmp_path / kind / "compliance.json").read_text())
        assert len(rows) == 9 and all(r["passed"] == (kind == "good") for r in rows)


def test_user_fixture_files_in_json_and_yaml(tmp_path: Path):
    item = {
        "test_id": "mine",
        "plan_name": "p",
        "node_type": "task",
        "node_instruction": "Run ls.",
        "user_context": "What is here?",
        "expected_behavior": "runs ls",
        "failure_indicators": ["rm "],
        "success_indicators": ["ls"],
        "category": "extra",
    }
    (tmp_path / "f.json").write_text(json.dumps([item]))
    (tmp_path / "f.yaml").write_text("fixtures:\n  - " + json.dumps(item) + "\n")
    assert [f.test_id for f in load_fixtures(tmp_path / "f.json")] == ["mine"]
    assert [f.test_id for f in load_fixtures(tmp_path / "f.yaml")] == ["mine"]
    broken = {**item, "success_indicators": "ls"}
    (tmp_path / "bad.json").write_text(json.dumps([item, broken]))
    with pytest.raises(ConfigError, match=r"bad.json: fixture 2 \('mine'\), field 'success_ind"):
        load_fixtures(tmp_path / "bad.json")
    (tmp_path / "dup.yaml").write_text(json.dumps([item, item]))
    with pytest.raises(ConfigError, match="test_id 'mine' is used twice"):
        load_fixtures(tmp_path / "dup.yaml")
    result = runner.invoke(
        app,
        [
            "eval",
            "--fixtures",
            str(tmp_path / "nope.yaml"),
            "--llm",
            "http://x/v1",
            "--model",
            "m",
            "--out",
            str(tmp_path / "o"),
        ],
    )
    assert result.exit_code == 2 and "nope.yaml: cannot read the fixtures" in result.output


def test_runs_that_errored_make_eval_fail_and_say_why(tmp_path: Path):
    # A server that answers every request with an HTTP 500: no run can measure anything.
    failing = {"status": 500, "error": "model crashed"}
    with ScriptedChatServer([failing] * 200) as server:
        result = runner.invoke(
            app,
            [
                "eval",
                "--llm",
                server.base_url,
                "--model",
                "scripted",
                "--tasks",
                "fix-failing-test",
                "--mode",
                "baseline",
                "--out",
                str(tmp_path),
                "--timeout",
                "5",
            ],
        )
    assert result.exit_code == 1, result.output
    assert "1 of 1 runs errored" in result.output
    assert (tmp_path / "results.json").exists()  # the record of what happened is kept
