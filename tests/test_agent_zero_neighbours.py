"""Issue 14: waygraph as a drop-in for the HTN plan selector, beside its neighbours.

Stand-ins for the extensions an established setup runs (document 000 and
003): a belief-state tracker (``before_main_llm_call/_10_``) writing the
message's domain, an org dispatcher (``_12_``) writing the allow-list and
emitting SALUTE reports from ``agent._htn_state`` the way the documents'
supervisor reads it, and an installed ``_15_htn_plan_selector.py`` with its
own ``htn_plan_library.json``. The extensions are loaded the way Agent-Zero
loads them and called in its message-loop order (tests/agent_zero_fake.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.agent_zero_fake import (  # noqa: F401 (agent_zero_modules: an autouse fixture)
    BASE_MODULES,
    KEY,
    FakeAgentZero,
    agent_zero_modules,
    make_tree,
    snapshot,
)
from waygraph.errors import ConfigError
from waygraph.integrations.agent_zero import install, setups, uninstall
from waygraph.integrations.agent_zero.templates import LAYOUTS
from waygraph.navigator import Navigator

BST = """\
from {base} import Extension


class BeliefStateTracker(Extension):
    async def execute(self, loop_data=None, **kwargs):
        message = str(loop_data.user_message.content).lower() if loop_data else ""
        domain = "bugfix" if ("bug" in message or "broken" in message) else "conversational"
        self.agent._bst_store = {{"__bst_belief_state__": {{"domain": domain}}}}
"""

ORG = """\
from {base} import Extension


class OrgDispatcher(Extension):
    async def execute(self, loop_data=None, **kwargs):
        self.agent.data["_org_htn_allowed_plans"] = self.agent.data.get("org_allow")
        # The supervisor's SALUTE report, from the HTN selector's state.
        try:
            state = getattr(self.agent, "_htn_state", None)
            if state:
                self.agent.data.setdefault("salute", []).append({{
                    "plan": state["plan_name"],
                    "done": len(state["steps_completed"]),
                    "failed": len(state["steps_failed"]),
                    "step": f"{{state['current_step']}}/{{state['total_steps']}}",
                    "stalled": state["turns_since_progress"] >= 12,
                }})
        except Exception:
            pass
"""

OLD_SELECTOR = """\
from {base} import Extension


class HTNPlanSelector(Extension):
    async def execute(self, loop_data=None, **kwargs):
        loop_data.extras_temporary["htn_active_plan"] = "[the old selector's plan]"
"""

#: The user's own plans in document 000's format.
THEIR_LIBRARY = {
    "plans": {
        "bugfix_workflow": {
            "name": "Our Bug Fix",
            "domains": ["bugfix"],
            "triggers": ["fix bug", "debug", "broken", "bug"],
            "trigger_threshold": 1,
            "stale_after_turns": 15,
            "steps": [
                {
                    "name": "Reproduce the issue",
                    "action": "Run it",
                    "verify": {"type": "any_output"},
                },
                {"name": "Fix it", "action": "Edit", "verify": {"type": "any_output"}},
                {
                    "name": "Test the fix",
                    "action": "Run the tests",
                    "verify": {"type": "output_not_contains", "value": "failed"},
                    "on_fail": "block",
                },
            ],
        },
        "team_release": {
            "name": "Team release",
            "triggers": ["cut the release"],
            "trigger_threshold": 1,
            "steps": [{"name": "Tag", "action": "git tag"}],
        },
    }
}

LOOP_PLAN = """\
plans:
  loop:
    name: Fix loop
    domains: [bugfix]
    triggers: [bug]
    trigger_threshold: 1
    stale_after_turns: 40
    graph:
      start: start
      nodes:
        start: {type: start}
        fix: {type: task, action: Fix, max_retries: 30}
        test: {type: task, action: Test, verify: {type: output_not_contains, value: failed}}
        done: {type: exit}
      edges:
        - {from: start, to: fix}
        - {from: fix, to: test, condition: on_success}
        - {from: test, to: done, condition: on_success}
        - {from: test, to: fix, condition: on_fail}
"""


def neighbours(root: Path, layout: str, *, selector: bool = True) -> Path:
    """Add the stand-ins to an Agent-Zero tree; returns the old selector's path."""
    base = BASE_MODULES[layout]
    folder = root / LAYOUTS[layout].hooks_root / "before_main_llm_call"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "_10_belief_state_tracker.py").write_text(BST.format(base=base))
    (folder / "_12_org_dispatcher.py").write_text(ORG.format(base=base))
    old = folder / "_15_htn_plan_selector.py"
    if selector:
        old.write_text(OLD_SELECTOR.format(base=base))
        (folder / "htn_plan_library.json").write_text(json.dumps(THEIR_LIBRARY, indent=2))
    return old


@pytest.fixture(params=["0.9", "1.x"])
def layout(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def tree(tmp_path: Path, layout: str) -> Path:
    root = make_tree(tmp_path / "a0", layout)
    neighbours(root, layout)
    return root


def state(root: Path) -> dict[str, Any] | None:
    nav = Navigator(None, store=f"sqlite:///{root}/usr/waygraph/waygraph.db")
    try:
        return nav.state("agent-zero:chat1:0")
    finally:
        nav.close()


def test_install_disables_the_old_selector_and_carries_its_plans(tree: Path, layout: str):
    old = tree / LAYOUTS[layout].hooks_root / "before_main_llm_call" / "_15_htn_plan_selector.py"
    original = old.read_bytes()
    report = install(tree)
    rel = old.relative_to(tree).as_posix()
    assert report.disabled == [rel] and not old.exists()
    assert (tree / "usr/waygraph/backup" / rel).read_bytes() == original
    assert report.library_source == f"{Path(rel).parent.as_posix()}/htn_plan_library.json"
    assert "bugfix_workflow" not in report.starters_added  # theirs wins
    assert "git_feature_branch" in report.starters_added
    text = report.summary()
    assert f"disabled the established plan selector {rel}" in text
    assert "added starter plans your library lacks: " in text

    a0 = FakeAgentZero(tree, layout)
    a0.user("The login is broken, please fix bug")
    first = a0.prompt()  # the tracker classifies in before_main_llm_call
    assert "htn_active_plan" not in first and KEY not in first
    seen = a0.prompt()
    assert "[ACTIVE PLAN: Our Bug Fix]" in seen[KEY]  # their plan, not the starter one
    assert "htn_active_plan" not in seen  # one plan block: the old selector is gone
    assert "[HTN] Plan activated: Our Bug Fix (3 steps)" in a0.log.text()
    # Installing again changes nothing and keeps their plans.
    assert not install(tree).changed


def test_uninstall_puts_the_old_selector_back_byte_for_byte(tree: Path):
    before = snapshot(tree)
    install(tree)
    result = uninstall(tree)
    assert any(r.endswith("_15_htn_plan_selector.py") for r in result.restored)
    assert snapshot(tree) == before


def test_an_unloadable_library_of_theirs_stops_the_install(tree: Path, layout: str):
    folder = tree / LAYOUTS[layout].hooks_root / "before_main_llm_call"
    (folder / "htn_plan_library.json").write_text('{"plans": {"p": {"steps": "none"}}}')
    before = snapshot(tree)
    with pytest.raises(ConfigError, match=r"htn_plan_library\.json") as caught:
        install(tree)
    assert "--library" in str(caught.value)
    assert snapshot(tree) == before
    # --library overrides: their file is not read at all.
    assert install(tree, library=tree / "plans").library_source is None


def test_a_forbidden_plan_never_reaches_a_prompt(tmp_path: Path, layout: str):
    tree = make_tree(tmp_path / "a0", layout)
    neighbours(tree, layout, selector=False)
    install(tree)
    a0 = FakeAgentZero(tree, layout)
    a0.agent.data["org_allow"] = ["git_feature_branch"]
    a0.user("The login page is broken: please fix bug in it")  # the chat's first message
    for _ in range(3):
        assert KEY not in a0.prompt()
    assert state(tree) is None
    # Allowed, the same message starts the plan after the dispatcher; it guides
    # from the next iteration (the prompt is built before before_main_llm_call).
    a0.agent.data["org_allow"] = ["bugfix_workflow"]
    a0.user("The login page is broken: please fix bug in it")
    assert KEY not in a0.prompt()
    assert "reproduce << CURRENT" in a0.prompt()[KEY]


def test_without_classifiers_guidance_is_in_the_same_iteration(tmp_path: Path, layout: str):
    tree = make_tree(tmp_path / "a0", layout)
    install(tree)
    a0 = FakeAgentZero(tree, layout)
    a0.user("The login page is broken: please fix bug in it")
    assert "reproduce << CURRENT" in a0.prompt()[KEY]


def supervised(tmp_path: Path, layout: str, library: str | None = None) -> FakeAgentZero:
    tree = make_tree(tmp_path / "a0", layout)
    neighbours(tree, layout, selector=False)
    if library is not None:
        (tmp_path / "loop.yaml").write_text(library)
        install(tree, library=tmp_path / "loop.yaml")
    else:
        install(tree)
    a0 = FakeAgentZero(tree, layout)
    a0.user("There is a bug: the login is broken")
    a0.prompt()
    return a0


def test_the_mirror_has_the_documents_shapes_and_salute_reports_flow(tmp_path: Path, layout: str):
    a0 = supervised(tmp_path, layout)
    a0.tool("Traceback: AssertionError " + "x" * 5000)  # reproduce
    a0.prompt()
    mirror = a0.agent._htn_state  # type: ignore[attr-defined]
    assert mirror["plan_id"] == "bugfix_workflow" and mirror["domain"] == "bugfix"
    assert mirror["steps_completed"] == [0] and mirror["steps_failed"] == []
    assert mirror["current_step"] == 1 and mirror["total_steps"] == 6
    assert mirror["current_node"] == "isolate" and mirror["completed_nodes"] == 1
    assert len(mirror["last_tool_output"]) == 2000
    for key in ("visited", "path", "total_nodes", "turns_since_transition", "events"):
        assert key in mirror
    a0.tool("pricing.py:7 divides by 10")  # isolate
    a0.prompt()
    reports = a0.agent.data["salute"]
    assert reports and reports[-1]["plan"] == "Bug Fix Workflow"
    assert reports[-1]["done"] == 2 and reports[-1]["step"] == "2/6"


def test_an_iterations_hooks_mirror_its_record_once_and_the_next_turn_anew(
    tmp_path: Path, layout: str
):
    a0 = supervised(tmp_path, layout)
    a0.tool("Traceback: AssertionError")  # reproduce
    mirror = a0.agent._htn_state  # type: ignore[attr-defined]
    mirror["seen_by_the_org_kernel"] = True  # what a reader added stays for the iteration
    a0.prompt()  # the prompt's and the selector's hooks: the same record as the tool's
    assert a0.agent._htn_state is mirror  # type: ignore[attr-defined]
    a0.tool("pricing.py:7 divides by 10")  # isolate: a new record, a new mirror
    again = a0.agent._htn_state  # type: ignore[attr-defined]
    assert again is not mirror and "seen_by_the_org_kernel" not in again
    assert again["current_node"] != mirror["current_node"]


def test_a_fix_test_loop_trips_the_stall_detector(tmp_path: Path, layout: str):
    a0 = supervised(tmp_path, layout, LOOP_PLAN)
    for _ in range(8):  # fix, then a failing test, again and again
        a0.tool("patched")
        a0.prompt()
        a0.tool("1 failed")
        a0.prompt()
    record = a0.agent._htn_state  # type: ignore[attr-defined]
    assert record["turns_since_transition"] == 0  # it transitions every turn...
    assert record["turns_since_progress"] >= 12  # ...without new ground
    assert a0.agent.data["salute"][-1]["stalled"] is True


def test_sixteen_off_topic_iterations_expire_the_plan(tmp_path: Path, layout: str):
    a0 = supervised(tmp_path, layout)
    a0.tool("Traceback: AssertionError")  # reproduce
    for n in range(16):  # each message: one iteration answered with the response tool
        a0.user(f"By the way, what is {n} + {n}?")
        a0.prompt()
        a0.tool(f"{n + n}", name="response")
    record = state(a0.root)
    assert record is not None and record["status"] == "expired"
    assert "[HTN] Plan 'Bug Fix Workflow' expired" in a0.log.text()
    assert not hasattr(a0.agent, "_htn_state")


def test_iterations_without_any_tool_result_still_count(tmp_path: Path, layout: str):
    a0 = supervised(tmp_path, layout)
    for _ in range(17):  # the model answers without a parsable tool call, again and again
        a0.prompt()
    record = state(a0.root)
    assert record is not None and record["status"] == "expired"
    assert record["current_node"] == "reproduce"


def test_the_response_tool_never_moves_the_plan(tmp_path: Path, layout: str):
    a0 = supervised(tmp_path, layout)
    a0.tool("It is fixed, all tests pass.", name="response")
    a0.prompt()
    record = state(a0.root)
    assert record is not None and record["current_node"] == "reproduce"
    assert record["status"] == "running"


def test_a_library_that_stops_loading_is_said_once_in_the_agents_log(tmp_path: Path, layout: str):
    a0 = supervised(tmp_path, layout, LOOP_PLAN)
    library = a0.root / "usr" / "waygraph" / "library" / "loop.yaml"
    library.write_text("plans: [not, a, mapping")
    setups.setups[next(iter(setups.setups))].navigator.reload()
    for _ in range(3):
        a0.tool("patched")
        a0.prompt()
    warnings = [w for w in a0.log.text("warning").splitlines() if "does not load" in w]
    assert len(warnings) == 1 and "loop.yaml" in warnings[0]
    record = state(a0.root)  # the last good library kept guiding
    assert record is not None and record["plan_id"] == "loop"
    assert record["status"] == "completed"
