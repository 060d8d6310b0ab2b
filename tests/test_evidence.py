"""Issue 12: a verdict means "waygraph saw evidence".

Sources (model words are never evidence), three-valued verdicts, command gates,
exit gates, the tried list and ``repeat_limit``, ``confine`` and tools that run
elsewhere, each through the Navigator as an agent loop would drive it.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import pytest

from waygraph import engine
from waygraph.errors import WaygraphError
from waygraph.library import Library
from waygraph.model import Plan, Verify
from waygraph.navigator import Navigator
from waygraph.verify import EXIT_CODE_HINT, Observation, VerifyContext, evaluate
from waygraph.verify.gates import EXIT_CANNOT_START, EXIT_TIMEOUT, KEEP_CHARS, run_command


def linear(steps: list[dict[str, Any]], **fields: Any) -> Plan:
    return Plan.model_validate(
        {"id": "p", "triggers": ["do it"], "trigger_threshold": 1, "steps": steps, **fields}
    )


def graph_plan(nodes: dict[str, Any], edges: list[tuple[str, str, str]], **fields: Any) -> Plan:
    return Plan.model_validate(
        {
            "id": "g",
            "triggers": ["do it"],
            "trigger_threshold": 1,
            "graph": {
                "start": "start",
                "nodes": {"start": {"type": "start"}, **nodes},
                "edges": [{"from": a, "to": b, "condition": c} for a, b, c in edges],
            },
            **fields,
        }
    )


def nav_for(plan: Plan, tmp_path: Path | None = None, **options: Any) -> Navigator:
    nav = Navigator(Library([plan]), store="memory://", strict=True, **options)
    nav.turn("s", user_message="do it")
    return nav


EXIT_STEP = [{"name": "build", "verify": {"type": "exit_code_zero"}, "on_fail": "block"}]
GATE_NODES = {
    "work": {"type": "task", "verify": {"type": "any_output"}, "max_retries": 1},
    "done": {
        "type": "exit",
        "verify": {"type": "command", "run": "test -f out.txt", "timeout": 10},
    },
    "stuck": {"type": "escalate", "reason": "gave up"},
}
GATE_EDGES = [
    ("start", "work", "always"),
    ("work", "done", "on_success"),
    ("work", "stuck", "on_exhaust"),
]


# ------------------------------------------------------------------ sources


def test_model_words_never_pass_a_step_and_are_recorded_as_a_claim():
    nav = nav_for(linear(EXIT_STEP))
    g = nav.turn("s", tool_output="Done! The build works, exit code 0.", source="model")
    assert g.run["current_node"] == "step_1" and g.run["status"] == "running"
    assert [e.type for e in g.events] == ["claim_recorded"]
    assert g.events[0]["excerpt"].startswith("Done! The build works")
    assert g.run["visited"]["step_1"]["attempts"] == 1  # no attempt consumed
    assert "a claim, not evidence" in g.text
    assert "the command must succeed (exit code 0)" in g.text


def test_a_final_claim_names_the_nodes_still_unverified():
    nav = Navigator(store="memory://", strict=True)
    nav.turn("s", user_message="I need to fix a bug in the login module")
    g = nav.turn(
        "s", tool_output="I fixed auth.py; it should work now.", source="model", final=True
    )
    types = [e.type for e in g.events]
    assert types == ["claim_recorded", "claim_unverified"]
    pending = g.events[1]["nodes"]
    assert pending[0] == "reproduce" and "test" in pending and "verify_no_regression" in pending
    assert "Still unverified: reproduce" in g.text
    assert g.run["status"] == "running"


def test_a_bad_source_is_an_error_in_strict_mode_and_a_tool_result_otherwise(caplog):
    plan = linear([{"name": "a", "verify": {"type": "output_contains", "value": "ok"}}])
    with pytest.raises(WaygraphError, match="source must be one of tool, model, host"):
        nav_for(plan).turn("s", tool_output="ok", source="robot")
    lenient = Navigator(Library([plan]), store="memory://")
    lenient.turn("s", user_message="do it")
    with caplog.at_level(logging.WARNING, logger="waygraph.navigator"):
        g = lenient.turn("s", tool_output="ok", source="robot")
    assert "treating the result as a tool result" in caplog.text
    assert g.run["status"] == "completed"


def test_evaluate_refuses_model_text_even_when_called_directly():
    verdict = evaluate(Verify(type="any_output"), Observation(output="done", source="model"))
    assert verdict.outcome == "unknown" and "claim" in (verdict.reason or "")


# ------------------------------------------------------------------ unknown verdicts


@pytest.mark.parametrize("verify_type", ["exit_code_zero", "exit_code"])
def test_an_exit_code_check_without_a_code_is_unknown_and_costs_no_attempt(verify_type: str):
    verify: dict[str, Any] = {"type": verify_type}
    if verify_type == "exit_code":
        verify["value"] = 0
    plan = linear([{"name": "build", "verify": verify}], stale_after_turns=50)
    nav = nav_for(plan)
    for _ in range(3):
        g = nav.turn("s", tool_output="Build finished without errors.")
        (verified,) = [e for e in g.events if e.type == "node_verified"]
        assert verified["outcome"] == "unknown" and verified["passed"] is None
        assert g.run["current_node"] == "step_1"
        assert g.run["visited"]["step_1"]["attempts"] == 1
    assert 'echo "exit=$?"' in g.text
    # The printed status the guidance asked for is evidence.
    g = nav.turn("s", tool_output="Build finished without errors.\nexit=0")
    assert g.run["status"] == "completed"


def test_words_like_error_never_decide_an_exit_code():
    ctx = VerifyContext()
    for text in ("ERROR: nothing", "Traceback (most recent call last):", "all good"):
        verdict = evaluate(Verify(type="exit_code_zero"), Observation(output=text), ctx)
        assert verdict.outcome == "unknown" and verdict.reason == EXIT_CODE_HINT
    assert evaluate(Verify(type="exit_code_zero"), Observation("ERROR", exit_code=0)).passed


def test_staleness_still_ends_a_run_that_gets_only_unknowns():
    plan = linear(EXIT_STEP, stale_after_turns=3)
    nav = nav_for(plan)
    statuses = [nav.turn("s", tool_output="looks fine").run["status"] for _ in range(4)]
    assert statuses == ["running", "running", "running", "expired"]


def test_unknown_inside_all_waits_but_a_failing_sibling_fails():
    verify = Verify.model_validate(
        {
            "type": "all",
            "checks": [{"type": "exit_code_zero"}, {"type": "output_contains", "value": "ok"}],
        }
    )
    assert evaluate(verify, Observation(output="ok")).outcome == "unknown"
    assert evaluate(verify, Observation(output="bad")).outcome == "fail"
    assert evaluate(verify, Observation(output="ok", exit_code=0)).outcome == "success"
    either = Verify.model_validate(
        {
            "type": "any",
            "checks": [{"type": "exit_code_zero"}, {"type": "output_contains", "value": "ok"}],
        }
    )
    assert evaluate(either, Observation(output="ok")).outcome == "success"
    assert evaluate(either, Observation(output="bad")).outcome == "unknown"
    negated = Verify.model_validate({"type": "not", "checks": [{"type": "exit_code_zero"}]})
    assert evaluate(negated, Observation(output="x")).outcome == "unknown"


def test_a_decision_whose_routes_cannot_be_judged_waits_instead_of_guessing():
    plan = Plan.model_validate(
        {
            "id": "d",
            "triggers": ["do it"],
            "trigger_threshold": 1,
            "graph": {
                "start": "start",
                "nodes": {
                    "start": {"type": "start"},
                    "ask": {"type": "decision", "description": "did it build?"},
                    "ok": {"type": "exit"},
                    "bad": {"type": "escalate", "reason": "no"},
                },
                "edges": [
                    {"from": "start", "to": "ask"},
                    {"from": "ask", "to": "ok", "when": {"type": "exit_code_zero"}},
                    {"from": "ask", "to": "bad", "condition": "always"},
                ],
            },
        }
    )
    nav = nav_for(plan)
    g = nav.turn("s", tool_output="done")
    assert g.run["current_node"] == "ask" and g.run["status"] == "running"
    assert g.events[0]["outcome"] == "unknown"
    assert nav.turn("s", tool_output="done", exit_code=0).run["status"] == "completed"


# ------------------------------------------------------------------ file_exists


def test_file_exists_always_looks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "ws").mkdir()
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("x")
    check = Verify(type="file_exists", value="report.txt")
    # No workspace: relative paths resolve against the current directory.
    monkeypatch.chdir(tmp_path / "ws")
    assert evaluate(check, Observation()).outcome == "fail"
    (tmp_path / "ws" / "report.txt").write_text("r")
    assert evaluate(check, Observation()).outcome == "success"
    # An existing absolute path outside the workspace passes unless confined.
    absolute = Verify(type="file_exists", value=str(outside))
    ctx = VerifyContext(workspace=tmp_path / "ws")
    assert evaluate(absolute, Observation(), ctx).outcome == "success"
    confined = VerifyContext(workspace=tmp_path / "ws", confine=True)
    verdict = evaluate(absolute, Observation(), confined)
    assert verdict.outcome == "fail" and "outside the workspace" in (verdict.reason or "")


def test_file_exists_is_unknown_when_tools_run_elsewhere(tmp_path: Path):
    (tmp_path / "there.txt").write_text("x")
    plan = linear([{"name": "w", "verify": {"type": "file_exists", "value": "there.txt"}}])
    nav = nav_for(plan, workspace=tmp_path, tools_run_elsewhere=True)
    g = nav.turn("s", tool_output="wrote there.txt")
    assert g.run["status"] == "running" and g.events[0]["outcome"] == "unknown"
    assert "another machine" in g.text


# ------------------------------------------------------------------ command gates


def test_a_command_gate_is_unknown_until_commands_are_allowed(tmp_path: Path):
    plan = graph_plan(GATE_NODES, GATE_EDGES)
    (tmp_path / "out.txt").write_text("x")
    nav = nav_for(plan, workspace=tmp_path)
    g = nav.turn("s", tool_output="made out.txt")
    assert g.run["status"] == "running" and g.run["current_node"] == "work"
    gate = [e for e in g.events if e.get("gate")]
    assert gate and gate[0]["outcome"] == "unknown"
    assert "command gates are disabled" in g.text
    allowed = nav_for(plan, workspace=tmp_path, allow_commands=True)
    assert allowed.turn("s", tool_output="made out.txt").run["status"] == "completed"


def test_a_failing_exit_gate_is_a_failed_attempt_at_the_task_it_came_from(tmp_path: Path):
    plan = graph_plan(GATE_NODES, GATE_EDGES)
    nav = nav_for(plan, workspace=tmp_path, allow_commands=True)
    g = nav.turn("s", tool_output="I made out.txt")  # it did not
    assert g.run["status"] == "running" and g.run["current_node"] == "work"
    assert g.run["visited"]["work"] == {
        **g.run["visited"]["work"],
        "outcome": "fail",
        "attempts": 2,
    }
    assert "The final check failed" in g.text
    # Retries used up: the node's exhaustion edge applies.
    g = nav.turn("s", tool_output="really made it")
    assert g.run["status"] == "escalated" and g.run["current_node"] == "stuck"
    (tmp_path / "out.txt").write_text("x")
    fresh = nav_for(plan, workspace=tmp_path, allow_commands=True)
    assert fresh.turn("s", tool_output="made it").run["status"] == "completed"


def test_an_exit_gate_with_a_file_check_sees_the_end_state(tmp_path: Path):
    nodes = {
        **GATE_NODES,
        "done": {"type": "exit", "verify": {"type": "file_exists", "value": "dist/app.whl"}},
    }
    nav = nav_for(graph_plan(nodes, GATE_EDGES), workspace=tmp_path)
    assert nav.turn("s", tool_output="built").run["status"] == "running"
    (tmp_path / "dist").mkdir()
    (tmp_path / "dist" / "app.whl").write_text("w")
    assert nav.turn("s", tool_output="built").run["status"] == "completed"


def test_a_command_gate_on_a_task_judges_the_hosts_own_run(tmp_path: Path):
    plan = linear(
        [
            {
                "name": "tests",
                "verify": {
                    "type": "command",
                    "run": f"{sys.executable} -c \"print('3 passed')\"",
                    "expect": {"type": "output_contains", "value": "3 passed"},
                },
            }
        ]
    )
    nav = nav_for(plan, workspace=tmp_path, allow_commands=True)
    # Whatever the model's tool printed, the gate's own output decides.
    g = nav.turn("s", tool_output="0 passed, everything broken")
    assert g.run["status"] == "completed"


def test_command_runner_reports_what_could_not_finish(tmp_path: Path):
    missing = run_command("definitely-not-a-command-xyz", cwd=tmp_path, timeout=10)
    assert missing.exit_code == EXIT_CANNOT_START and missing.source == "host"
    bad_cwd = run_command("true", cwd=tmp_path / "nope", timeout=10)
    assert bad_cwd.exit_code == EXIT_CANNOT_START and "could not start" in bad_cwd.output
    slow = run_command("sleep 30 & sleep 30; echo never", cwd=tmp_path, timeout=0.5)
    assert slow.exit_code == EXIT_TIMEOUT and "timed out" in slow.output
    assert not slow.output.startswith("never")  # killed before it could print
    loud = run_command(
        f"{sys.executable} -c \"import sys; sys.stdout.write('x' * 3_000_000 + 'END')\"",
        cwd=tmp_path,
        timeout=30,
    )
    assert loud.exit_code == 0 and loud.output.endswith("END")
    assert len(loud.output) < 2 * KEEP_CHARS + 100


def test_a_timed_out_gate_fails_with_the_reason_in_the_event(tmp_path: Path):
    plan = linear([{"name": "t", "verify": {"type": "command", "run": "sleep 20", "timeout": 0.3}}])
    nav = nav_for(plan, workspace=tmp_path, allow_commands=True)
    g = nav.turn("s", tool_output="go")
    (verified,) = [e for e in g.events if e.type == "node_verified"]
    assert verified["outcome"] == "fail" and "exit code 124" in verified["reason"]


# ------------------------------------------------------------------ tried list and repeats


BUILD_LOOP = {
    "build": {"type": "task", "verify": {"type": "exit_code_zero"}, "max_retries": 9},
    "done": {"type": "exit"},
    "stuck": {"type": "escalate", "reason": "build keeps failing"},
}
BUILD_EDGES = [("start", "build", "always"), ("build", "done", "on_success")]


def test_the_guidance_lists_what_was_tried_at_the_node():
    nav = nav_for(graph_plan(BUILD_LOOP, BUILD_EDGES))
    nav.turn(
        "s",
        tool_output="2 failed (test_login)\nmore",
        exit_code=1,
        tool_args={"command": "pytest -q"},
    )
    g = nav.turn("s", tool_output="E   ImportError", exit_code=1, tool_args="pytest -x")
    assert "`pytest -q` -> FAILED: 2 failed (test_login)" in g.text
    assert "`pytest -x` -> FAILED: E ImportError" in g.text
    tried = g.run["visited"]["build"]["tried"]
    assert [t["call"] for t in tried] == ["pytest -q", "pytest -x"]


def test_only_the_last_three_attempts_are_kept():
    nav = nav_for(graph_plan(BUILD_LOOP, BUILD_EDGES))
    for i in range(5):
        g = nav.turn("s", tool_output=f"fail {i}", exit_code=1, tool_args=f"make t{i}")
    assert [t["call"] for t in g.run["visited"]["build"]["tried"]] == [
        "make t2",
        "make t3",
        "make t4",
    ]


def test_the_same_failing_call_repeat_limit_times_escalates_without_an_exhaust_edge():
    nav = nav_for(graph_plan(BUILD_LOOP, BUILD_EDGES))
    for _ in range(2):
        g = nav.turn("s", tool_output="boom", exit_code=1, tool_args="make")
        assert g.run["status"] == "running"
    g = nav.turn("s", tool_output="boom", exit_code=1, tool_args="make")
    assert [e.type for e in g.events][-2:] == ["repeat_detected", "plan_escalated"]
    assert g.run["status"] == "escalated"
    assert "the same failing call 3 times" in g.run["reason"]


def test_a_repeat_follows_the_exhaust_edge_when_there_is_one():
    edges = [*BUILD_EDGES, ("build", "stuck", "on_exhaust")]
    nav = nav_for(graph_plan(BUILD_LOOP, edges, repeat_limit=2))
    nav.turn("s", tool_output="boom", exit_code=1, tool_args="make")
    g = nav.turn("s", tool_output="boom", exit_code=1, tool_args="make")
    assert g.run["current_node"] == "stuck" and g.run["reason"] == "build keeps failing"


def test_a_different_call_or_output_is_not_a_repeat_and_zero_turns_the_rule_off():
    nav = nav_for(graph_plan(BUILD_LOOP, BUILD_EDGES))
    for i in range(6):
        g = nav.turn("s", tool_output="boom", exit_code=1, tool_args=f"make -j{i}")
    assert g.run["status"] == "running"
    off = nav_for(graph_plan(BUILD_LOOP, BUILD_EDGES, repeat_limit=0))
    for _ in range(6):
        g = off.turn("s", tool_output="boom", exit_code=1, tool_args="make")
    assert g.run["status"] == "running"


# ------------------------------------------------------------------ progress and records


def test_a_fix_test_loop_transitions_but_makes_no_progress():
    nav = Navigator(store="memory://", strict=True)
    nav.turn("s", user_message="I need to fix a bug in the login module")
    nav.turn("s", tool_output="AssertionError", exit_code=1)  # reproduce -> isolate
    nav.turn("s", tool_output="auth.py:12 compares the wrong field", exit_code=0)  # -> fix
    g = nav.turn("s", tool_output="patched", exit_code=0)  # fix -> test
    assert g.run["turns_since_progress"] == 0
    for i in range(2):  # test fails -> fix -> test (fix allows three attempts)
        g = nav.turn(
            "s", tool_output=f"1 failed attempt {i}", exit_code=1, tool_args="python -m pytest"
        )
        g = nav.turn("s", tool_output=f"patched again {i}", exit_code=0)
    assert g.run["status"] == "running" and g.run["current_node"] == "test"
    assert g.run["turns_since_transition"] == 0
    assert g.run["turns_since_progress"] == 4
    assert g.run["last_tool_output"] == "patched again 1"
    assert g.run["domain"] == "bugfix"


def test_records_from_before_issue_12_still_load():
    plan = linear(EXIT_STEP)
    run, _ = engine.start(plan, run_id="r", turn=1)
    record = engine.to_record(plan, run)
    for key in ("completed", "notice", "streak", "domain", "last_tool_output"):
        record.pop(key)
    record["visited"] = {"step_1": {"outcome": "success", "attempts": 1}}
    again = engine.from_record(record)
    assert again.completed == ("step_1",) and again.notice is None
