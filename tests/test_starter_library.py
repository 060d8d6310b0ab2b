"""The shipped starter library: its identity, its shapes, and how it runs.

The matching fields (ids, names, domains, triggers, thresholds) must equal the
established Agent-Zero library's (tests/fixtures/compat, see its README for
attribution), because classifiers and allow-lists depend on them. Everything
else is waygraph's own; the scenarios below run the plans through the real
engine with the real verifiers on realistic tool output.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest

from waygraph import engine, load_library
from waygraph.check import check_plan
from waygraph.library import shipped_library_path
from waygraph.model import Plan, Verify
from waygraph.verify import Observation, check

ROOT = Path(__file__).parent.parent
COMPAT_V2 = Path(__file__).parent / "fixtures" / "compat" / "agent-zero-graph-library-v2.json"
ESTABLISHED: dict[str, dict] = json.loads(COMPAT_V2.read_text())["plans"]
LIBRARY = load_library()
PLAN_IDS = list(ESTABLISHED)
PACE_LEVELS = {"primary", "alternate", "contingent", "emergency"}
SUCCESS = {"on_success", "always"}

# Real test-runner output.
PYTEST_PASS = "..\n2 passed in 0.01s"
PYTEST_FAIL = "F.\nFAILED tests/test_x.py::test_a - assert 1 == 2\n1 failed, 1 passed in 0.02s"
PYTEST_COLLECT_ERROR = (
    "ERROR collecting tests/test_x.py\nImportError: cannot import name 'b'\n1 error in 0.05s"
)


# ------------------------------------------------------------------ helpers


def edges(plan: Plan, source: str, condition: str | None = None) -> list:
    return [
        e for e in plan.graph.out_edges(source) if condition is None or e.condition == condition
    ]


def targets(plan: Plan, source: str, condition: str) -> set[str]:
    return {e.to for e in edges(plan, source, condition) if e.when is None}


#: Commands the bound steps accept (their command_matches): the scenarios
#: drive the plans as a host that reports the command it ran.
RUNNERS = ("python -m pytest -q", "docker build -t app:1 .", "ruff check src")


def command_for(verify: Verify | None) -> str | None:
    """A command ``verify``'s command_matches accepts, or None when it binds none."""
    if verify is None or verify.command_matches is None:
        return None
    pattern = re.compile(verify.command_matches)
    return next(c for c in RUNNERS if pattern.search(c))


def passes(verify: Verify | None, output: str, exit_code: int | None = None) -> bool | None:
    evidence = Observation(output=output, exit_code=exit_code, command=command_for(verify))
    return check(verify, evidence)


def run_plan(plan_id: str, results: list[tuple[str, int | None]]) -> engine.Run:
    """Start ``plan_id`` and feed it one tool result per item, as the navigator would."""
    plan = LIBRARY[plan_id]
    run, _ = engine.start(plan, run_id="r", turn=1)
    for turn, (output, exit_code) in enumerate(results, start=2):
        assert not run.finished, f"{plan_id} finished at {run.current_node} before {output!r}"
        node = plan.graph.nodes[str(run.current_node)]
        command = command_for(node.verify)
        obs = Observation(output=output, exit_code=exit_code, command=command)
        run, _ = engine.observe(plan, run, lambda v, obs=obs: check(v, obs), turn=turn)
    return run


def success_cycles(plan: Plan) -> list[list[str]]:
    """Cycles made only of on_success/always edges (when-edges included)."""
    graph: dict[str, set[str]] = {}
    for e in plan.graph.edges:
        if e.condition in SUCCESS:
            graph.setdefault(e.from_, set()).add(e.to)
    cycles: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for node in plan.graph.nodes:
        if node not in state:
            visit(node, [])
    return cycles


# ------------------------------------------------------------------ identity


def test_the_shipped_folder_holds_exactly_the_ten_plans_in_the_established_order():
    assert LIBRARY.path == shipped_library_path()
    # Library order breaks matching ties, so it follows the established library.
    assert LIBRARY.ids() == PLAN_IDS
    assert len(PLAN_IDS) == 10
    files = sorted(p.name for p in shipped_library_path().glob("*.yaml"))
    assert len(files) == 10
    assert all(Path(LIBRARY.sources[pid]).name.endswith(f"_{pid}.yaml") for pid in PLAN_IDS)


@pytest.mark.parametrize("plan_id", PLAN_IDS)
def test_matching_fields_equal_the_established_library(plan_id: str):
    plan, old = LIBRARY[plan_id], ESTABLISHED[plan_id]
    assert plan.name == old["name"]
    assert list(plan.domains) == old["domains"]
    assert list(plan.triggers) == old["triggers"]
    assert plan.trigger_threshold == old["trigger_threshold"]


@pytest.mark.parametrize("plan_id", PLAN_IDS)
def test_plan_checks_clean_no_errors_and_no_warnings(plan_id: str):
    problems = check_plan(LIBRARY[plan_id], file=LIBRARY.sources[plan_id])
    assert problems == [], "\n".join(str(p) for p in problems)


def test_library_check_is_clean():
    assert LIBRARY.check() == []


@pytest.mark.parametrize("plan_id", PLAN_IDS)
def test_wording_is_our_own(plan_id: str):
    theirs = {
        str(node[key]).strip().lower()
        for node in ESTABLISHED[plan_id]["graph"]["nodes"].values()
        for key in ("name", "action", "tool_hint", "reason")
        if node.get(key)
    }
    for node in LIBRARY[plan_id].graph.nodes.values():
        if node.type == "start":
            continue
        for key in ("name", "action", "tool_hint", "reason"):
            value = getattr(node, key)
            assert value is None or value.strip().lower() not in theirs, (node.id, key, value)


# ------------------------------------------------------------------ shape rules for every plan


@pytest.mark.parametrize("plan_id", PLAN_IDS)
def test_every_plan_is_a_real_graph(plan_id: str):
    plan = LIBRARY[plan_id]
    nodes = plan.graph.nodes
    assert not plan.linear
    assert plan.description
    kinds = [n.type for n in nodes.values()]
    assert kinds.count("start") == 1 and plan.graph.start == "start"
    assert "exit" in kinds and "checkpoint" in kinds
    escalates = [n for n in nodes.values() if n.type == "escalate"]
    assert escalates
    for node in escalates:
        assert node.reason and len(node.reason) > 40, node.id
        assert node.pace_level in PACE_LEVELS, node.id
    # Real branching: some node leads to different places on different outcomes.
    assert any(len({e.to for e in edges(plan, nid)}) > 1 for nid in nodes)
    # At least one bounded retry loop.
    assert any(n.type == "task" and (n.max_retries or 0) > 0 for n in nodes.values())
    assert success_cycles(plan) == []


@pytest.mark.parametrize("plan_id", PLAN_IDS)
def test_every_task_is_verified_and_bounded(plan_id: str):
    plan = LIBRARY[plan_id]
    for node in plan.graph.nodes.values():
        if node.type != "task":
            continue
        assert node.verify is not None, node.id
        assert node.action and node.name and node.tool, node.id
        assert node.max_retries is not None, node.id  # no unbounded holds
        conditions = {e.condition for e in edges(plan, node.id)}
        if conditions & {"on_retry", "on_exhaust"}:
            assert node.max_retries > 0, node.id
        # Every task has somewhere to go when it passes and when it is exhausted.
        assert conditions & SUCCESS, node.id
        assert conditions & {"on_exhaust", "on_fail", "always"}, node.id


@pytest.mark.parametrize("plan_id", PLAN_IDS)
def test_decisions_route_with_when_edges_and_a_fallback(plan_id: str):
    plan = LIBRARY[plan_id]
    for node in plan.graph.nodes.values():
        if node.type != "decision":
            continue
        out = edges(plan, node.id)
        assert any(e.when is not None for e in out), node.id
        assert [e for e in out if e.when is None], f"{node.id} has no fallback edge"
        assert node.description, node.id


# ------------------------------------------------------------------ the test-runner check

TEST_NODES = [
    (pid, nid)
    for pid in PLAN_IDS
    for nid, node in LIBRARY[pid].graph.nodes.items()
    if node.verify == LIBRARY["bugfix_workflow"].graph.nodes["test"].verify
]


def test_test_runner_check_is_shared_by_every_test_step():
    assert {
        ("bugfix_workflow", "test"),
        ("bugfix_workflow", "verify_no_regression"),
        ("git_merge_pr", "test_merge"),
        ("codegen_module", "test"),
        ("refactor_safe", "baseline_tests"),
        ("refactor_safe", "retest"),
        ("dependency_update", "run_tests"),
    } <= set(TEST_NODES)


def test_test_runner_check_is_exit_code_zero_and_no_failure_words():
    verify = LIBRARY["bugfix_workflow"].graph.nodes["test"].verify
    assert verify.type == "all"
    kinds = [c.type for c in verify.checks]
    assert kinds == ["exit_code_zero", "not"]
    assert verify.checks[1].checks[0].type == "regex"


PASSING_OUTPUTS = [
    "1 passed in 0.01s",
    PYTEST_PASS,
    "===== 3 passed, 1 warning in 0.12s =====",
    "test_error_handling PASSED\n1 passed in 0.01s",
    "Ran 3 tests in 0.000s\n\nOK",
    "1 passed, 1 xfailed in 0.03s",
]


@pytest.mark.parametrize(("plan_id", "node_id"), TEST_NODES)
def test_a_passing_run_passes(plan_id: str, node_id: str):
    verify = LIBRARY[plan_id].graph.nodes[node_id].verify
    for output in PASSING_OUTPUTS:
        assert passes(verify, output, 0) is True, output
        assert passes(verify, output + "\nexit=0") is True, output


@pytest.mark.parametrize(("plan_id", "node_id"), TEST_NODES)
def test_a_clean_looking_run_without_an_exit_status_is_unknown(plan_id: str, node_id: str):
    # Issue 12: words never decide an exit code; the guidance asks for the status.
    verify = LIBRARY[plan_id].graph.nodes[node_id].verify
    for output in PASSING_OUTPUTS:
        assert passes(verify, output) is None, output


@pytest.mark.parametrize(("plan_id", "node_id"), TEST_NODES)
@pytest.mark.parametrize("exit_code", [None, 1])
def test_a_failing_run_fails(plan_id: str, node_id: str, exit_code: int | None):
    verify = LIBRARY[plan_id].graph.nodes[node_id].verify
    # Failure words fail the check even without an exit code: fail beats unknown.
    assert passes(verify, PYTEST_FAIL, exit_code) is False
    assert not passes(verify, "1 failed, 1 passed", exit_code)
    assert not passes(verify, PYTEST_COLLECT_ERROR, exit_code)
    assert not passes(verify, "ERROR collecting tests/test_x.py", exit_code)
    assert not passes(verify, "FAILED (failures=1)", exit_code)
    assert not passes(verify, "--- FAIL: TestParse (0.00s)\nFAIL", exit_code)
    assert not passes(verify, "no tests ran in 0.01s", exit_code)


def test_the_real_exit_code_wins_over_a_clean_looking_output():
    verify = LIBRARY["bugfix_workflow"].graph.nodes["test"].verify
    assert not passes(verify, "1 passed in 0.01s", exit_code=1)


def test_zero_failures_summaries_do_not_count_as_failures():
    # cargo prints "0 failed" on success; "10 failed" is still a failure.
    regex = LIBRARY["bugfix_workflow"].graph.nodes["test"].verify.checks[1].checks[0]
    assert not passes(regex, "test result: ok. 3 passed; 0 failed; 0 ignored")
    assert passes(regex, "test result: FAILED. 0 passed; 10 failed")
    assert passes(
        LIBRARY["bugfix_workflow"].graph.nodes["test"].verify,
        "test result: ok. 3 passed; 0 failed; 0 ignored",
        exit_code=0,
    )


# ------------------------------------------------------------------ bugfix_workflow


def test_bugfix_shape():
    plan = LIBRARY["bugfix_workflow"]
    nodes = plan.graph.nodes
    assert {
        "start",
        "reproduce",
        "gather_context",
        "isolate",
        "fix",
        "test",
        "verify_no_regression",
        "escalate_stuck",
        "done",
    } <= set(nodes)
    # Any output shows the bug, unless the program never ran (issue 36).
    assert passes(nodes["reproduce"].verify, "AssertionError: 2000.0 != 180", 1)
    assert not passes(nodes["reproduce"].verify, " \n")
    assert nodes["reproduce"].max_retries == 0
    assert nodes["gather_context"].max_retries == 0
    assert targets(plan, "reproduce", "on_fail") == {"gather_context"}
    assert targets(plan, "gather_context", "on_success") == {"reproduce"}
    (give_up,) = targets(plan, "gather_context", "on_fail")
    assert nodes[give_up].type == "escalate"
    assert nodes["fix"].max_retries == 2
    assert targets(plan, "fix", "on_success") == {"test"}
    assert targets(plan, "test", "on_fail") == {"fix"}
    assert targets(plan, "fix", "on_exhaust") == {"escalate_stuck"}
    stuck = nodes["escalate_stuck"]
    assert stuck.type == "escalate" and stuck.reason and stuck.pace_level == "contingent"
    assert targets(plan, "verify_no_regression", "on_success") == {"done"}


def test_bugfix_happy_path_completes():
    run = run_plan(
        "bugfix_workflow",
        [
            ("AssertionError: 2000.0 != 180", 1),
            ("pricing.py:6: percent is never divided by 100", 0),
            ("edited pricing.py", 0),
            (PYTEST_PASS, 0),
            ("12 passed in 0.30s", 0),
        ],
    )
    assert run.status == "completed"
    assert "cause_found" in run.path


def test_bugfix_unreproducible_bug_loops_back_once_then_escalates():
    run = run_plan("bugfix_workflow", [("", None), ("app.py\nlogin.py", 0), ("", None)])
    assert list(run.path) == [
        "start",
        "reproduce",
        "gather_context",
        "reproduce",
        "gather_context",
        "escalate_no_repro",
    ]
    assert run.status == "escalated" and run.pace_level == "alternate"


def test_bugfix_runs_fix_at_most_three_times_then_escalates():
    wrong_fix = [("edited pricing.py", 0), (PYTEST_FAIL, 1)]
    run = run_plan(
        "bugfix_workflow",
        [("Traceback (most recent call last): ...", 1), ("cause: line 6", 0), *wrong_fix * 3],
    )
    assert run.path.count("fix") == 4  # three attempts, then entered exhausted
    assert run.visited["fix"]["attempts"] == 3
    assert run.status == "escalated" and run.path[-1] == "escalate_stuck"
    assert run.pace_level == "contingent"


def test_bugfix_regression_goes_back_to_fix():
    run = run_plan(
        "bugfix_workflow",
        [
            ("Traceback", 1),
            ("cause", 0),
            ("edited", 0),
            (PYTEST_PASS, 0),
            ("1 failed, 11 passed in 0.4s", 1),
        ],
    )
    assert run.current_node == "fix" and run.attempts("fix") == 2


# ------------------------------------------------------------------ git_feature_branch

DIRTY = "On branch main\nChanges not staged for commit:\n\tmodified:   app.py\n"
CLEAN = "On branch main\nnothing to commit, working tree clean\n"
STASHED = "Saved working directory and index state On main: waygraph: before feature/x"


def test_feature_branch_shape():
    plan = LIBRARY["git_feature_branch"]
    nodes = plan.graph.nodes
    assert targets(plan, "check_status", "on_success") == {"tree_state"}
    assert nodes["tree_state"].type == "decision"
    (clean_edge,) = [e for e in edges(plan, "tree_state") if e.when is not None]
    assert clean_edge.to == "create_branch"
    assert "nothing to commit" in [c.value for c in clean_edge.when.walk()]
    assert targets(plan, "tree_state", "on_fail") == {"save_work"}
    assert targets(plan, "save_work", "on_success") == {"check_status"}
    assert nodes["save_work"].max_retries >= 1
    assert nodes[next(iter(targets(plan, "save_work", "on_exhaust")))].type == "escalate"
    # Then the optional push (issue 36): tests/test_library_push.py.
    order = ["create_branch", "branch_ready", "make_changes", "commit", "verify_commit"]
    order.append("has_remote")
    for a, b in itertools.pairwise(order):
        assert b in {e.to for e in edges(plan, a) if e.condition in SUCCESS}, (a, b)
    assert nodes["branch_ready"].type == "checkpoint"


def test_feature_branch_stashes_a_dirty_tree_and_carries_on():
    run = run_plan(
        "git_feature_branch",
        [
            (DIRTY, 0),
            (STASHED, 0),
            (CLEAN, 0),
            ("Switched to a new branch 'feature/login-form'", 0),
            (" M app.py\n?? templates/login.html", 0),
            (
                "[feature/login-form 1a2b3c4] feat: login form\n 2 files changed, 40 insertions(+)",
                0,
            ),
            ("1a2b3c4 feat: login form\nOn branch feature/login-form\nnothing to commit", 0),
        ],
    )
    assert run.status == "completed"
    assert list(run.path)[:6] == [
        "start",
        "check_status",
        "tree_state",
        "save_work",
        "check_status",
        "tree_state",
    ]


def test_feature_branch_untracked_files_only_count_as_clean():
    run = run_plan(
        "git_feature_branch",
        [("On branch main\nnothing added to commit but untracked files present", 0)],
    )
    assert run.current_node == "create_branch"


def test_feature_branch_escalates_when_the_tree_stays_dirty():
    run = run_plan("git_feature_branch", [(DIRTY, 0), (STASHED, 0)] * 2 + [(DIRTY, 0)])
    assert run.status == "escalated" and run.path[-1] == "escalate_dirty"
    assert run.path.count("save_work") == 3  # the third entry finds it exhausted


# ------------------------------------------------------------------ git_merge_pr


def test_merge_conflicts_are_resolved_tested_and_pushed():
    run = run_plan(
        "git_merge_pr",
        [
            (CLEAN, 0),
            ("Switched to branch 'main'\nAlready up to date.", 0),
            ("Auto-merging app.py\nCONFLICT (content): Merge conflict in app.py", 1),
            ("no conflict markers left", 0),
            ("[main 9f8e7d6] Merge branch 'feature/x'", 0),
            (PYTEST_PASS, 0),
            ("To github.com:o/r.git\n   1a2b3c4..9f8e7d6  main -> main", 0),
        ],
    )
    assert run.status == "completed"
    assert "resolve_conflicts" in run.path and "merged" in run.path


def test_merge_failure_without_conflicts_escalates():
    run = run_plan(
        "git_merge_pr",
        [
            (CLEAN, 0),
            ("Already on 'main'", 0),
            ("merge: feature/y - not something we can merge", 1),
        ],
    )
    assert list(run.path)[-1] == "escalate_merge_failed"


def test_merge_that_breaks_tests_is_undone():
    run = run_plan(
        "git_merge_pr",
        [
            (CLEAN, 0),
            ("Switched to branch 'main'", 0),
            ("Merge made by the 'ort' strategy.\n a.py | 2 +-", 0),
            (PYTEST_FAIL, 1),
            ("HEAD is now at 1a2b3c4 previous commit", 0),
        ],
    )
    assert list(run.path)[-3:] == ["test_merge", "undo_merge", "escalate_tests"]


def test_a_rejected_push_is_not_a_success():
    verify = LIBRARY["git_merge_pr"].graph.nodes["push"].verify
    assert passes(verify, "   1a2b3c4..9f8e7d6  main -> main")
    assert passes(verify, "Everything up-to-date")
    assert not passes(verify, " ! [rejected]        main -> main (fetch first)\nerror: failed")


# ------------------------------------------------------------------ docker_build_deploy

BUILD_FAIL = 'ERROR: failed to solve: process "/bin/sh -c pip install -r req.txt" did not complete'
BUILD_OK = (
    "#8 exporting layers done\n#8 writing image sha256:4f2a done\n"
    "#8 naming to docker.io/library/app:dev done"
)


def test_docker_shape():
    plan = LIBRARY["docker_build_deploy"]
    nodes = plan.graph.nodes
    assert targets(plan, "build", "on_fail") == {"fix_build"}
    assert targets(plan, "fix_build", "on_success") == {"build"}
    assert nodes["fix_build"].max_retries == 2
    assert nodes[next(iter(targets(plan, "fix_build", "on_exhaust")))].type == "escalate"
    assert targets(plan, "build", "on_success") == {"image_built"}
    assert nodes["image_built"].type == "checkpoint"
    assert targets(plan, "deploy", "on_success") == {"health_check"}
    assert targets(plan, "health_check", "on_success") == {"done"}


def test_docker_build_fix_loop_is_bounded():
    run = run_plan(
        "docker_build_deploy",
        [
            ('FROM python:3.12-slim\nCMD ["python", "app.py"]', 0),
            ("Client: Docker Engine\nServer: Docker Engine - Community", 0),
            *[(BUILD_FAIL, 1), ("FROM python:3.12-slim", 0)] * 3,
            (BUILD_FAIL, 1),
        ],
    )
    assert run.status == "escalated" and run.path[-1] == "escalate_build"
    assert run.visited["fix_build"]["attempts"] == 3


def test_docker_happy_path_reaches_a_healthy_container():
    run = run_plan(
        "docker_build_deploy",
        [
            ("FROM python:3.12-slim", 0),
            ("Server: Docker Engine - Community", 0),
            (BUILD_OK, 0),
            ("Python 3.12.4", 0),
            ("a" * 64, 0),
            ("app: Up 6 seconds (healthy)\nHTTP 200", 0),
        ],
    )
    assert run.status == "completed"


def test_docker_unhealthy_container_collects_logs_before_escalating():
    plan = LIBRARY["docker_build_deploy"]
    health = plan.graph.nodes["health_check"].verify
    assert not passes(health, "app: Restarting (1) 3 seconds ago")
    assert not passes(health, "app: Exited (1) 2 seconds ago")
    assert not passes(health, "app: Up 3 seconds (health: starting)")
    assert not passes(health, "app: Up 9 seconds\nHTTP 502")
    run = run_plan(
        "docker_build_deploy",
        [
            ("FROM python:3.12-slim", 0),
            ("Server: Docker Engine", 0),
            (BUILD_OK, 0),
            ("ok", 0),
            ("b" * 64, 0),
            *[("app: Restarting (1) 3 seconds ago", 0)] * 3,
            ("KeyError: 'DATABASE_URL'", 0),
        ],
    )
    assert list(run.path)[-2:] == ["collect_logs", "escalate_deploy"]


def test_docker_daemon_down_escalates_before_building():
    run = run_plan(
        "docker_build_deploy",
        [("FROM alpine:3.20", 0), ("Cannot connect to the Docker daemon at unix:///x.sock", 1)],
    )
    assert list(run.path)[-1] == "escalate_no_docker"


# ------------------------------------------------------------------ refactor_safe


def test_refactor_shape():
    plan = LIBRARY["refactor_safe"]
    nodes = plan.graph.nodes
    (no_baseline,) = targets(plan, "baseline_tests", "on_fail")
    assert nodes[no_baseline].type == "escalate"
    assert "fix the failing tests first" in nodes[no_baseline].reason.lower()
    assert targets(plan, "baseline_tests", "on_success") == {"baseline_green"}
    assert nodes["baseline_green"].type == "checkpoint"
    assert targets(plan, "retest", "on_fail") == {"revert"}
    assert targets(plan, "revert", "on_success") == {"plan_refactor"}
    assert nodes["revert"].max_retries >= 1
    assert targets(plan, "revert", "on_exhaust") == {"revert_and_stop"}
    assert nodes[next(iter(targets(plan, "revert_and_stop", "on_success")))].type == "escalate"
    assert targets(plan, "retest", "on_success") == {"commit_refactor"}


def test_refactor_refuses_without_a_passing_baseline():
    run = run_plan("refactor_safe", [(CLEAN, 0), (PYTEST_FAIL, 1)])
    assert run.status == "escalated" and run.path[-1] == "escalate_no_baseline"
    assert "apply_refactor" not in run.path
    assert "fix the failing tests first" in run.reason.lower()


def test_refactor_reverts_each_broken_attempt_and_stops_after_three():
    attempt = [
        ("src/a.py:10: def total(", 0),
        (" 2 files changed, 14 insertions(+), 9 deletions(-)", 0),
        (PYTEST_FAIL, 1),
        ("Saved working directory and index state\nnothing to commit, working tree clean", 0),
    ]
    run = run_plan("refactor_safe", [(CLEAN, 0), (PYTEST_PASS, 0), *attempt * 3])
    assert run.path.count("apply_refactor") == 3
    assert run.path.count("revert") == 3  # the third entry finds it exhausted
    assert list(run.path)[-2:] == ["revert_and_stop", "escalate_reverted"]
    assert run.status == "escalated"


def test_refactor_that_keeps_tests_green_is_committed():
    run = run_plan(
        "refactor_safe",
        [
            (CLEAN, 0),
            (PYTEST_PASS, 0),
            ("src/a.py:10: def total(", 0),
            (" 1 file changed, 4 insertions(+), 4 deletions(-)", 0),
            (PYTEST_PASS, 0),
            ("[main 5e6f7a8] refactor: extract total\n 1 file changed", 0),
        ],
    )
    assert run.status == "completed"


def test_refactor_commits_uncommitted_work_before_starting():
    run = run_plan(
        "refactor_safe",
        [
            (DIRTY, 0),
            ("[main 1a2b3c4] wip: snapshot before refactor\n 1 file changed", 0),
            (CLEAN, 0),
        ],
    )
    assert list(run.path)[-4:] == ["save_work", "check_status", "tree_state", "baseline_tests"]


# ------------------------------------------------------------------ the other plans


def test_codegen_does_not_overwrite_an_existing_file():
    run = run_plan(
        "codegen_module",
        [
            ("src/app/\ntests/", 0),
            ("TARGET_EXISTS src/app/slug.py\nTARGET_FREE tests/test_slug.py", 0),
        ],
    )
    assert list(run.path)[-1] == "escalate_exists"
    run = run_plan(
        "codegen_module",
        [("src/app/", 0), ("TARGET_FREE src/app/slug.py\nTARGET_FREE tests/test_slug.py", 0)],
    )
    assert run.current_node == "scaffold"


def test_codegen_fix_loop_is_bounded():
    plan = LIBRARY["codegen_module"]
    assert targets(plan, "test", "on_fail") == {"fix_implementation"}
    assert targets(plan, "fix_implementation", "on_success") == {"test"}
    assert plan.graph.nodes["fix_implementation"].max_retries == 2


def test_backup_only_request_stops_after_the_verified_backup():
    run = run_plan(
        "file_backup_restore",
        [
            ("4.0M\t/srv/data\n128\n", 0),
            ("3f" * 32 + "  /backups/data-20250101-120000.tar.gz", 0),
            ("/backups/data-20250101-120000.tar.gz: OK\n128", 0),
            ("operation: backup-only", 0),
        ],
    )
    assert run.status == "completed" and run.path[-1] == "done_backup"
    assert "backup_verified" in run.path


def test_failed_copy_restores_from_the_backup():
    run = run_plan(
        "file_backup_restore",
        [
            ("1.2G\t/srv/data\n4096", 0),
            ("ab" * 32 + "  /backups/data.tar.gz", 0),
            ("/backups/data.tar.gz: OK\n4096", 0),
            ("operation: move", 0),
            ("rsync: write failed: No space left on device (28)", 11),
            ("rsync: write failed: No space left on device (28)", 11),
            ("source matches backup", 0),
        ],
    )
    assert list(run.path)[-2:] == ["restore_source", "escalate_restored"]


def test_a_bad_backup_is_made_again_before_anything_moves():
    plan = LIBRARY["file_backup_restore"]
    assert targets(plan, "verify_backup", "on_fail") == {"create_backup"}
    assert not passes(plan.graph.nodes["verify_backup"].verify, "data.tar.gz: FAILED")


def test_api_rejected_credentials_escalate_and_other_failures_retry():
    start = [("GET /v1/items, Bearer token", 0), ("CREDENTIALS_OK", 0)]
    run = run_plan("api_integration", [*start, ('HTTP 401\n{"error": "bad key"}', 0)])
    assert list(run.path)[-1] == "escalate_credentials"
    run = run_plan(
        "api_integration", [*start, ("HTTP 404\nnot found", 0), ('HTTP 200\n{"items": []}', 0)]
    )
    assert run.current_node == "implement" and "endpoint_confirmed" in run.path
    run = run_plan("api_integration", [*start, *[("HTTP 500", 0)] * 3])
    assert list(run.path)[-1] == "escalate_api"
    run = run_plan("api_integration", [start[0], ("CREDENTIALS_MISSING", 0)])
    assert list(run.path)[-1] == "escalate_credentials"


def test_dependency_update_stops_when_nothing_is_outdated():
    run = run_plan("dependency_update", [("nothing to update", 0)])
    assert run.status == "completed" and run.path[-1] == "up_to_date"


def test_dependency_update_rolls_back_when_tests_fail():
    run = run_plan(
        "dependency_update",
        [
            ("Package    Version Latest Type\nrequests   2.31.0  2.32.3 wheel", 0),
            ("9a" * 32 + "  requirements.txt.bak", 0),
            ("Successfully installed requests-2.32.3", 0),
            ("No broken requirements found.", 0),
            (PYTEST_FAIL, 1),
            ("Successfully installed requests-2.31.0\nNo broken requirements found.", 0),
        ],
    )
    assert list(run.path)[-2:] == ["rollback", "escalate_rolled_back"]
    assert "state_saved" in run.path


def test_log_investigation_widens_the_search_once():
    run = run_plan(
        "log_investigation",
        [
            ("./logs/app.log", 0),
            ("", 1),
            ("app.log.1:88:WARN pool exhausted", 0),
            ("     42 ERROR db timeout after Nms", 0),
            ("1180:2025-01-01 ERROR db timeout after 3000ms", 0),
            ("Root cause: the pool is too small. Evidence: app.log:1180. Suggested fix: ...", 0),
        ],
    )
    assert run.status == "completed"
    assert list(run.path)[:5] == [
        "start",
        "locate_logs",
        "filter_errors",
        "broaden_search",
        "entries_found",
    ]


# ------------------------------------------------------------------ docs


def test_every_plan_has_a_section_in_docs_library():
    text = (ROOT / "docs" / "library.md").read_text()
    headings = re.findall(r"^## `([a-z_]+)`", text, re.MULTILINE)
    assert headings == PLAN_IDS
    for plan in LIBRARY:
        assert plan.name in text, plan.id
