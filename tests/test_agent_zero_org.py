"""The Agent-Zero adapter beside an org dispatcher: the allow-list is this message's.

The dispatcher may live in any folder Agent-Zero loads extensions from (an
agent profile's, a plugin's) and run before or after waygraph's hooks; a plan
never starts before the dispatcher has written the allow-list of this message.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.design_examples.agent_zero_standin import AgentZero
from tests.test_hooks import LIBRARY as RELEASE_LIBRARY
from waygraph.integrations.agent_zero import runtime, setups

LIBRARY = Path(__file__).parent / "design_examples" / "fixtures" / "graph_library.json"
BUG = "fix the bug in /tmp/test.py"
DISPATCHER = "agent.set_data('_org_htn_allowed_plans', role_plans)\n"
KEY = "_org_htn_allowed_plans"


@pytest.fixture(autouse=True)
def _fresh_adapter():
    runtime.reset()
    yield
    runtime.reset()


def with_dispatcher(root: Path, folder: str, name: str) -> AgentZero:
    place = root / folder / "before_main_llm_call"
    place.mkdir(parents=True)
    (place / name).write_text(DISPATCHER, encoding="utf-8")
    return AgentZero(root, LIBRARY)


FOLDERS = [
    "plugins/org/extensions/python",
    "usr/plugins/org/extensions/python",
    "agents/dev/extensions",
    "agents/dev/extensions/python",
    "usr/projects/p/.a0proj/extensions/python",
]


@pytest.mark.parametrize("folder", FOLDERS)
@pytest.mark.parametrize("name", ["_12_org_dispatcher.py", "_20_org_dispatcher.py"])
def test_a_forbidden_plan_never_starts_wherever_the_dispatcher_runs(
    tmp_path: Path, folder: str, name: str
):
    a0 = with_dispatcher(tmp_path, folder, name)
    a0.user(BUG, domain="bugfix")
    # The dispatcher writes this message's allow-list in before_main_llm_call:
    # before waygraph's selector (_12_), or after it (_20_).
    a0.agent.data[KEY] = ["git_feature_branch"]
    text = a0.iteration() if name < "_15_" else None
    if name > "_15_":
        a0.agent.data.pop(KEY)  # the first iteration: not written yet for this message
        assert a0.iteration() is None  # waits a hook rather than run unchecked
        a0.agent.data[KEY] = ["git_feature_branch"]  # written after waygraph's selector
        text = a0.iteration()
    assert text is None and a0.htn_state() is None
    assert "bugfix_workflow" not in a0.log


@pytest.mark.parametrize("folder", FOLDERS[:2])
def test_an_allowed_plan_starts_one_hook_after_a_late_dispatcher(tmp_path: Path, folder: str):
    a0 = with_dispatcher(tmp_path, folder, "_20_org_dispatcher.py")
    a0.user(BUG, domain="bugfix")
    assert a0.iteration() is None  # the guidance of that iteration says nothing
    a0.agent.data[KEY] = ["bugfix_workflow"]
    assert (a0.iteration() or "").startswith("[WORKFLOW: Bug Fix Workflow]")
    assert (a0.htn_state() or {}).get("plan_id") == "bugfix_workflow"


def test_without_a_dispatcher_the_plan_starts_at_once(tmp_path: Path):
    a0 = AgentZero(tmp_path, LIBRARY)
    a0.user(BUG, domain="bugfix")
    assert (a0.iteration() or "").startswith("[WORKFLOW: Bug Fix Workflow]")


def test_an_undecided_check_is_logged_as_not_judged(tmp_path: Path):
    library = tmp_path / "release.yaml"
    library.write_text(RELEASE_LIBRARY, encoding="utf-8")
    a0 = AgentZero(tmp_path, library)
    a0.user("cut a release")
    a0.iteration()
    a0.tool("build finished")  # no exit code: exit_code_zero cannot decide
    assert "[HTN] Step not judged: build (attempt 1)" in a0.log
    assert "failed verification" not in a0.log


def test_a_relative_hook_path_is_resolved_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    a0 = AgentZero(tmp_path, LIBRARY)
    a0.user(BUG, domain="bugfix")
    monkeypatch.chdir(tmp_path)
    found: list[Path] = []
    real = setups._find_config

    def counting(hook_file: Path) -> Path:
        found.append(hook_file)
        return real(hook_file)

    monkeypatch.setattr(setups, "_find_config", counting)
    relative = str(Path(a0.guidance).relative_to(tmp_path))
    for _ in range(3):
        runtime.inject_guidance(a0.extension, relative, {"loop_data": a0.agent.loop_data})
    assert len(found) == 1
    assert "Error" not in a0.log
