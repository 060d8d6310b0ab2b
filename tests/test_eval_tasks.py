"""The eval task suite: every checker fails untouched, passes the reference solution,
and fails the plausible wrong solution; each request activates its plan."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from waygraph.errors import ConfigError
from waygraph.eval.loop import call_tool
from waygraph.eval.suite import Action, EvalTask, all_tasks, get_task, select_tasks
from waygraph.library import load_library
from waygraph.match import Matcher

TASKS = all_tasks()
IDS = [t.id for t in TASKS]


def apply(workspace: Path, actions: tuple[Action, ...]) -> None:
    """Replay scripted tool calls through the agent's own tools."""
    for action in actions:
        output, code = call_tool(action.tool, json.dumps(action.args), workspace)
        if not action.expect_failure:
            assert code == 0, f"{action.args}: exit {code}\n{output}"


def test_the_suite_covers_the_shipped_plans_domains():
    assert len(TASKS) >= 12
    assert len(set(IDS)) == len(IDS)
    plans = {t.plan for t in TASKS}
    assert plans <= set(load_library().ids())
    # Docker needs a daemon and images (network): the only shipped plan not covered.
    assert set(load_library().ids()) - plans == {"docker_build_deploy"}
    assert all(t.max_steps >= len(t.solution) + 1 for t in TASKS)


@pytest.mark.parametrize("task", TASKS, ids=IDS)
def test_the_untouched_workspace_fails(task: EvalTask, tmp_path: Path):
    verdict = task.check(task.setup(tmp_path))
    assert not verdict.success and verdict.problems


@pytest.mark.parametrize("task", TASKS, ids=IDS)
def test_the_reference_solution_passes(task: EvalTask, tmp_path: Path):
    workspace = task.setup(tmp_path)
    apply(workspace, task.solution)
    verdict = task.check(workspace)
    assert verdict.success, verdict.problems


@pytest.mark.parametrize("task", TASKS, ids=IDS)
def test_the_plausible_wrong_solution_fails(task: EvalTask, tmp_path: Path):
    workspace = task.setup(tmp_path)
    apply(workspace, task.wrong_solution)
    verdict = task.check(workspace)
    assert not verdict.success, task.wrong_because


def test_editing_the_test_instead_of_the_code_is_caught(tmp_path: Path):
    task = get_task("fix-failing-test")
    workspace = task.setup(tmp_path)
    apply(workspace, task.wrong_solution)
    problems = task.check(workspace).problems
    assert "tests/test_pricing.py was edited (it must stay as it was)" in problems


def test_workspaces_are_deterministic(tmp_path: Path):
    from waygraph.eval.workspace import git

    task = get_task("merge-with-conflict")
    heads = [git(task.setup(tmp_path / str(i)), "rev-parse", "HEAD") for i in range(2)]
    assert heads[0] == heads[1]


@pytest.mark.parametrize("task", TASKS, ids=IDS)
def test_each_request_activates_its_plan(task: EvalTask):
    best = Matcher(load_library()).best(task.request, None, None)
    assert best is not None and best.plan_id == task.plan


def test_select_tasks_by_glob_and_substring():
    assert [t.id for t in select_tasks("merge*")] == ["merge-with-conflict"]
    assert {t.id for t in select_tasks("branch,log-*")} == {
        "feature-branch-dirty-tree",
        "branch-from-release",
        "log-root-cause",
    }
    assert select_tasks(None) == TASKS
    with pytest.raises(ConfigError, match="matches no task; tasks: fix-failing-test"):
        select_tasks("nope")
    with pytest.raises(ConfigError, match="no eval task 'nope'"):
        get_task("nope")
