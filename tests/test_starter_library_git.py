"""The shipped starter library's git plans (git_feature_branch, git_merge_pr) run through
the real engine with the real verifiers on realistic tool output.
"""

from __future__ import annotations

import itertools

from tests.starter_library_helpers import (
    CLEAN,
    DIRTY,
    LIBRARY,
    PYTEST_FAIL,
    PYTEST_PASS,
    SUCCESS,
    edges,
    passes,
    run_plan,
    targets,
)

# ------------------------------------------------------------------ git_feature_branch
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
