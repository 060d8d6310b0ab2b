"""engine.session_plan over SessionPlanRun: a session plan is a frozen value; every transition
makes a new one.

A hypothesis test applies random sequences of replies, pauses, resumes,
reopenings and failures and checks each input plan is left exactly as it was,
each new one round-trips through plan.json and the invariants hold; unit tests
pin the value itself (frozen, read-only, its plan.json shape) and the engine's
purity.
"""

from __future__ import annotations

import ast
import json
from dataclasses import FrozenInstanceError
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests import test_modules
from waygraph.engine import session_plan as rules
from waygraph.engine.session_plan_run import PLAN_KEYS, SessionPlanRun, SessionStep, StepProgress
from waygraph.errors import CorruptPlan

SRC = test_modules.SRC
FIXTURES = Path(__file__).parent / "fixtures" / "session_plans"
MODULES = ("session_plan.py", "session_plan_run.py", "session_plan_text.py")


def text_of(plan: SessionPlanRun) -> str:
    """plan.json's bytes (as text) for ``plan``, as the planner writes them."""
    return json.dumps(plan.to_dict(), ensure_ascii=False, indent=2) + "\n"


def started() -> SessionPlanRun:
    plan = rules.new_plan("s", "Migrate the blog", now="t0", plan_id="plan_1")
    return rules.apply_reply(plan, "[Step] Export\n[Step] Convert\nExporting.", 1, now="t1")


# ---------------------------------------------------------------- the value


def test_assigning_a_field_raises():
    plan = started()
    with pytest.raises(FrozenInstanceError):
        plan.status = "paused"  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        plan.steps[0].status = "completed"  # type: ignore[misc]
    with pytest.raises(TypeError):
        plan.steps[0] = plan.steps[1]  # type: ignore[index]
    assert plan.status == "running" and plan.steps[0].status == "running"


def test_keys_a_person_added_are_kept_read_only():
    data = json.loads((FIXTURES / "running.json").read_text(encoding="utf-8"))
    data["notes"] = {"by": "me", "tags": ["a"]}
    plan = SessionPlanRun.from_dict(data)
    with pytest.raises(TypeError):
        plan.extra["notes"]["by"] = "you"  # type: ignore[index]
    assert plan.extra["notes"]["tags"] == ("a",)
    data["notes"]["tags"].append("b")  # the value holds its own copy
    assert plan.to_dict()["notes"] == {"by": "me", "tags": ["a"]}


@pytest.mark.parametrize(
    ("name", "move"),
    [
        ("reply", lambda p: rules.apply_reply(p, "Exported. [done] [Progress] 1/2", 1, now="t2")),
        ("question", lambda p: rules.apply_reply(p, "Which?", 0, now="t2", asks_user=True)),
        ("pause", lambda p: rules.pause(p, now="t2")),
        ("resume", lambda p: rules.resume(rules.pause(p, now="t2"), now="t3")),
        ("fail", lambda p: rules.fail(p, "no disk", now="t2")),
        ("at limit", lambda p: rules.at_limit(p, now="t2", unattended=True)),
        ("reopen", lambda p: rules.reopen(rules.apply_reply(p, "[done]", 1, now="t2"), now="t3")),
    ],
)
def test_a_transition_returns_a_new_value_and_leaves_the_old_one(name: str, move: Any):
    plan = started()
    before = text_of(plan)
    after = move(plan)
    assert after is not plan and after != plan, name
    assert text_of(plan) == before


def test_pause_keeps_a_finished_plan_and_reopen_needs_a_completed_step():
    plan = started()
    failed = rules.fail(plan, "gone", now="t2")
    assert rules.pause(failed, now="t3") == failed
    assert rules.reopen(plan, now="t2") is None


def test_at_limit_pauses_or_fails_when_nobody_will_say_continue():
    plan = started()
    assert rules.at_limit(plan, now="t2", unattended=False).status == "paused"
    failed = rules.at_limit(plan, now="t2", unattended=True)
    assert (failed.status, failed.failure_reason) == ("failed", rules.LIMIT_REASON)
    assert failed.steps[0].completed_by == "failed"


def test_a_value_built_by_hand_writes_every_key_it_holds():
    step = SessionStep("step_1", "Build", "running", progress=StepProgress(1, 3), implicit=True)
    assert step.to_dict() == {
        "id": "step_1",
        "description": "Build",
        "status": "running",
        "result": None,
        "started_at": None,
        "completed_at": None,
        "iterations": 0,
        "completed_by": None,
        "progress": {"current": 1, "total": 3},
        "implicit": True,
    }
    plan = SessionPlanRun("plan_1", "s", "Ship", steps=[step], extra={"owner": "me"})
    assert plan.steps == (step,)
    assert list(plan.to_dict())[-1] == "owner"
    assert SessionPlanRun.from_dict(plan.to_dict()) == plan
    with pytest.raises(ValueError, match="are fields"):
        SessionPlanRun("plan_1", "s", "Ship", extra={"goal": "x"})


def test_a_key_set_for_the_first_time_goes_last_as_it_did_in_the_dict():
    # Document 001's plan.json has no iterations or completed_by: loading adds
    # them at the end, and completing the step adds completed_by's value there.
    data = json.loads((FIXTURES / "document_001.json").read_text(encoding="utf-8"))
    data["session_id"] = "s"
    plan = SessionPlanRun.from_dict(data)
    assert list(plan.to_dict())[-5:] == [
        "session_id",
        "resumed_at_iteration",
        "failure_reason",
        "awaiting",
        "question",
    ]
    done = rules.apply_reply(plan, "All downloaded. [done]", 1, now="t9")
    step = done.to_dict()["steps"][1]
    assert list(step) == [
        "id",
        "description",
        "status",
        "result",
        "progress",
        "started_at",
        "completed_at",
        "iterations",
        "completed_by",
    ]
    assert (step["status"], step["completed_by"], step["iterations"]) == ("completed", "marker", 1)


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.json")), ids=lambda p: p.name)
def test_from_dict_and_to_dict_give_back_the_same_bytes(path: Path):
    raw = path.read_text(encoding="utf-8")
    data = json.loads(raw)
    data.setdefault("session_id", "s")  # the folder gives it; see test_session_plan_files
    plan = SessionPlanRun.from_dict(data)
    assert plan.to_dict() == data or path.name == "document_001.json"
    assert SessionPlanRun.from_dict(plan.to_dict()) == plan
    if path.name != "document_001.json":
        assert text_of(plan) == raw


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"status": "done"}, "field 'status' is not one of pending, running"),
        ({"goal": None}, "field 'goal' is missing or not a string"),
        ({"iteration_count": True}, "field 'iteration_count' is not a whole number"),
        ({"resumed_at_iteration": -1}, "field 'resumed_at_iteration' is not a whole number"),
        ({"updated_at": 5}, "field 'updated_at' is not text or null"),
        ({"steps": {}}, "field 'steps' is not a list"),
        ({"steps": [{"id": "step_1"}]}, "step 0 needs a string id and description"),
        ({"steps": [{"id": "a", "description": "A", "status": "running", "iterations": "2"}]},
         "step 0 (a): field 'iterations' is not a whole number"),
        ({"steps": [{"id": "a", "description": "A", "status": "running", "result": 4}]},
         "step 0 (a): field 'result' is not text or null"),
        ({"steps": [{"id": "a", "description": "A", "status": "running", "implicit": 1}]},
         "step 0 (a): field 'implicit' is not true or false"),
        ({"steps": [{"id": "a", "description": "A", "status": "running",
                     "progress": {"current": 1}}]},
         "step 0 (a): field 'progress' is not"),
    ],
)  # fmt: skip
def test_from_dict_names_the_field_that_is_wrong(change: dict[str, Any], message: str):
    data = json.loads((FIXTURES / "running.json").read_text(encoding="utf-8"))
    with pytest.raises(CorruptPlan, match=message.replace("(", r"\(").replace(")", r"\)")):
        SessionPlanRun.from_dict({**data, **change})


def test_an_awaiting_other_than_user_reads_as_nobody():
    data = json.loads((FIXTURES / "awaiting_user.json").read_text(encoding="utf-8"))
    assert SessionPlanRun.from_dict(data).waiting_on_user
    plan = SessionPlanRun.from_dict({**data, "awaiting": "bot", "question": 3})
    assert (plan.awaiting, plan.question, plan.waiting_on_user) == (None, None, False)


# ---------------------------------------------------------------- properties

REPLIES = [
    "[Step] Export\n[Step] Convert\nworking",
    "Now the next part",
    "Exported. [done]",
    "[Progress] 3/5 going",
    "[Progress] 9/0",
    "[Failed] the disk is full",
    "现在让我继续",
    "[Step] 下载\n接下来",
    "Which one?",
    "",
    "[Step 2] Convert\n- [Step] Check links",
    "x" * 300,
]
MOVES = st.one_of(
    st.tuples(
        st.just("reply"),
        st.one_of(st.sampled_from(REPLIES), st.text(max_size=40)),
        st.integers(0, 2),
        st.booleans(),
    ),
    st.tuples(st.sampled_from(["pause", "resume", "reopen", "limit", "fail"])),
)


def move(plan: SessionPlanRun, step: tuple[Any, ...], now: str) -> SessionPlanRun | None:
    if step[0] == "reply":
        return rules.apply_reply(plan, step[1], step[2], now=now, asks_user=step[3])
    if step[0] == "limit":
        return rules.at_limit(plan, now=now, unattended=False)
    if step[0] == "fail":
        return rules.fail(plan, "stopped", now=now)
    transition = {"pause": rules.pause, "resume": rules.resume, "reopen": rules.reopen}[step[0]]
    return transition(plan, now=now)


@settings(max_examples=300, deadline=None)
@given(st.lists(MOVES, max_size=25))
def test_random_transitions_leave_their_input_and_round_trip(steps: list[tuple[Any, ...]]):
    plan = rules.new_plan("s", "Migrate the blog", now="t0", plan_id="plan_1")
    for n, step in enumerate(steps, start=1):
        before = text_of(plan)
        after = move(plan, step, f"t{n}")
        assert text_of(plan) == before
        if after is None:
            continue
        # plan.json round trip: the same value, the same bytes.
        again = SessionPlanRun.from_dict(json.loads(text_of(after)))
        assert again == after and text_of(again) == text_of(after)
        # Invariants of the rules.
        assert [s.id for s in after.steps] == [f"step_{i}" for i in range(1, len(after.steps) + 1)]
        assert len(after.steps) >= len(plan.steps)
        assert 0 <= after.current_step_index <= len(after.steps)
        assert sum(s.status == "running" for s in after.steps) <= 1
        assert 0 <= after.resumed_at_iteration <= after.iteration_count
        assert after.awaiting is None or after.status in ("running", "paused")
        assert tuple(after.to_dict()) == PLAN_KEYS
        plan = after


# ---------------------------------------------------------------- purity


def test_the_engine_purity_test_covers_the_session_plan_modules():
    walked = {path.name for path in (SRC / "engine").glob("*.py")}
    assert set(MODULES) <= walked
    test_modules.test_the_engine_imports_no_io()


@pytest.mark.parametrize("name", MODULES)
def test_the_session_plan_modules_keep_no_state(name: str):
    # No globals: no `global` statement, nothing mutable at module level.
    tree = ast.parse((SRC / "engine" / name).read_text(encoding="utf-8"))
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Global | ast.Nonlocal)]
    mutable = (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            continue  # the export list, by convention
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            assert not isinstance(node.value, mutable), (name, ast.unparse(node))
            if isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name):
                assert node.value.func.id not in ("dict", "list", "set"), ast.unparse(node)


def test_the_sessions_package_keeps_no_rules_of_its_own():
    # One home: the rules are the engine's; waygraph.sessions reads files and writes texts.
    assert not (SRC / "sessions" / "_rules.py").exists()
    for path in (SRC / "sessions").glob("*.py"):
        assert "copy.deepcopy" not in path.read_text(encoding="utf-8"), path.name
