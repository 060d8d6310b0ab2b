"""Plan checker: every warning code fails on a bad plan and stays quiet on its fix."""

from __future__ import annotations

import pytest

from tests.check_helpers import (
    OK,
    assert_fails_and_fix_is_clean,
    edge,
    plan,
    task,
    with_verify,
)
from waygraph.model import Plan

# (code, plan with the problem, the same plan fixed). Each warning code appears at least once.
CASES = [
    pytest.param(
        "unreachable-threshold",
        plan(triggers=["fix bug", "Fix bugs", "debug"], trigger_threshold=3),
        plan(triggers=["fix bug", "Fix bugs", "debug"], trigger_threshold=2),
        id="unreachable-threshold",
    ),
    pytest.param(
        "implicit-start",
        plan(nodes={"start": None}, start="work", drop=("work",), edges=[]),
        plan(),
        id="implicit-start",
    ),
    pytest.param(
        "unused-start-node",
        plan(start="work"),
        plan(),
        id="unused-start-node",
    ),
    pytest.param(
        "unreachable",
        plan(nodes={"orphan": task()}, edges=[edge("orphan", "done", "on_success")]),
        plan(
            nodes={"orphan": task()},
            edges=[edge("orphan", "done", "on_success"), edge("work", "orphan", "on_fail")],
        ),
        id="unreachable",
    ),
    pytest.param(
        "trap",
        plan(nodes={"limbo": task()}, edges=[edge("work", "limbo", "on_fail")]),
        plan(
            nodes={"limbo": task()},
            edges=[edge("work", "limbo", "on_fail"), edge("limbo", "done")],
        ),
        id="trap",
    ),
    pytest.param(
        "no-exit",
        plan(
            nodes={"done": None, "stuck": {"type": "escalate", "reason": "r"}},
            replace_edges=[edge("start", "work"), edge("work", "stuck", "on_success")],
        ),
        plan(),
        id="no-exit",
    ),
    pytest.param(
        "success-loop",
        plan(
            nodes={"test": task()},
            replace_edges=[
                edge("start", "work"),
                edge("work", "test", "on_success"),
                edge("test", "work", "on_success"),
                edge("test", "done", "on_fail"),
            ],
        ),
        plan(
            nodes={"test": task(), "fix": task(max_retries=2)},
            replace_edges=[
                edge("start", "work"),
                edge("work", "test", "on_success"),
                edge("test", "done", "on_success"),
                edge("test", "fix", "on_fail"),
                edge("fix", "test", "on_success"),
                edge("fix", "done", "on_exhaust"),
            ],
        ),
        id="success-loop",
    ),
    pytest.param(
        "task-without-verify",
        plan(nodes={"work": {"type": "task"}}),
        plan(),
        id="task-without-verify",
    ),
    pytest.param(
        "decision-without-check",
        plan(
            nodes={"route": {"type": "decision"}},
            edges=[edge("work", "route", "on_fail"), edge("route", "done")],
        ),
        plan(
            nodes={"route": {"type": "decision"}},
            edges=[
                edge("work", "route", "on_fail"),
                edge("route", "done", when={"type": "output_contains", "value": "skip"}),
                edge("route", "work", "on_fail"),
            ],
        ),
        id="decision-without-check",
    ),
    pytest.param(
        "when-ignored",
        plan(
            replace_edges=[
                edge("start", "work"),
                edge("work", "done", "on_success", when={"type": "any_output"}),
            ]
        ),
        plan(),
        id="when-ignored",
    ),
    pytest.param(
        "context-only-exit",
        plan(
            replace_edges=[
                edge("start", "work"),
                edge(
                    "work",
                    "done",
                    "on_success",
                    when={"type": "compare", "field": "context.ok", "op": "==", "value": True},
                ),
            ]
        ),
        plan(),
        id="context-only-exit",
    ),
    pytest.param(
        "on-retry-without-retries",
        plan(nodes={"work": task(max_retries=0)}, edges=[edge("work", "work", "on_retry")]),
        plan(nodes={"work": task(max_retries=1)}, edges=[edge("work", "work", "on_retry")]),
        id="on-retry-without-retries",
    ),
    pytest.param(
        "on-exhaust-without-retries",
        plan(
            nodes={"stuck": {"type": "escalate", "reason": "r"}},
            edges=[edge("work", "stuck", "on_exhaust")],
        ),
        plan(
            nodes={"work": task(max_retries=2), "stuck": {"type": "escalate", "reason": "r"}},
            edges=[edge("work", "stuck", "on_exhaust")],
        ),
        id="on-exhaust-without-retries",
    ),
    pytest.param(
        "shadowed-edge",
        plan(
            nodes={"other": {"type": "exit"}},
            edges=[edge("work", "other", "on_success")],
        ),
        plan(
            nodes={"other": {"type": "exit", "status": "aborted"}},
            edges=[edge("work", "other", "on_fail")],
        ),
        id="shadowed-edge-equal-weight",
    ),
    pytest.param(
        "shadowed-edge",
        plan(
            nodes={"other": {"type": "exit"}},
            edges=[edge("work", "other", "on_success", weight=2)],
        ),
        plan(
            nodes={"other": {"type": "exit"}},
            edges=[edge("work", "other", "on_success", weight=2, on_event="approved")],
        ),
        id="shadowed-edge-by-weight",
    ),
    pytest.param(
        "unused-edge",
        plan(
            nodes={"work": task(max_retries=1), "stuck": {"type": "escalate", "reason": "r"}},
            edges=[edge("work", "stuck", "on_exhaust"), edge("work", "done", "on_fail")],
        ),
        plan(
            nodes={"work": task(max_retries=1), "stuck": {"type": "escalate", "reason": "r"}},
            edges=[edge("work", "stuck", "on_exhaust")],
        ),
        id="unused-edge-precedence",
    ),
    pytest.param(
        "unused-edge",
        plan(
            nodes={"stuck": {"type": "escalate", "reason": "r"}},
            edges=[edge("start", "stuck", "on_fail")],
        ),
        plan(
            nodes={"stuck": {"type": "escalate", "reason": "r"}},
            edges=[edge("work", "stuck", "on_fail")],
        ),
        id="unused-edge-out-of-start",
    ),
    pytest.param(
        "unused-edge",
        plan(
            nodes={"work": task(max_retries=None), "stuck": {"type": "escalate", "reason": "r"}},
            edges=[edge("work", "stuck", "on_fail")],
        ),
        plan(
            nodes={"work": task(max_retries=3), "stuck": {"type": "escalate", "reason": "r"}},
            edges=[edge("work", "stuck", "on_fail")],
        ),
        id="unused-edge-unbounded-retries",
    ),
    pytest.param(
        "escalate-without-reason",
        plan(nodes={"stuck": {"type": "escalate"}}, edges=[edge("work", "stuck", "on_fail")]),
        plan(
            nodes={"stuck": {"type": "escalate", "reason": "the build keeps failing"}},
            edges=[edge("work", "stuck", "on_fail")],
        ),
        id="escalate-without-reason",
    ),
    pytest.param(
        "ignored-field",
        # Exit nodes use verify (a gate) since issue 12; escalate nodes do not.
        plan(nodes={"done": {"type": "exit", "pace_level": "ALTERNATE"}}),
        plan(nodes={"done": {"type": "exit", "reason": "all good"}}),
        id="ignored-field",
    ),
    pytest.param(
        "on-fail-ignored",
        Plan.model_validate(
            {
                "id": "p",
                "triggers": ["a"],
                "trigger_threshold": 1,
                "steps": [{"name": "A", "verify": OK, "on_fail": "abort", "required": False}],
            }
        ),
        Plan.model_validate(
            {
                "id": "p",
                "triggers": ["a"],
                "trigger_threshold": 1,
                "steps": [{"name": "A", "verify": OK, "on_fail": "abort"}],
            }
        ),
        id="on-fail-ignored",
    ),
    pytest.param(
        "regex-backtracking",
        with_verify({"type": "regex", "value": "(a+)+$"}),
        with_verify({"type": "regex", "value": "a+$"}),
        id="regex-backtracking",
    ),
    pytest.param(
        "verify-needs-run",
        with_verify({"type": "command", "run": "  "}),
        with_verify({"type": "exit_code_zero"}),
        id="verify-needs-run",
    ),
    pytest.param(
        "command-gate",
        plan(nodes={"done": {"type": "exit", "verify": {"type": "command", "run": "pytest -q"}}}),
        plan(nodes={"done": {"type": "exit", "verify": {"type": "file_exists", "value": "out"}}}),
        id="command-gate",
    ),
    pytest.param("no-triggers", plan(triggers=[]), plan(), id="no-triggers"),
    pytest.param("blank-trigger", plan(triggers=["do the work", " "]), plan(), id="blank-trigger"),
    pytest.param(
        "duplicate-trigger",
        plan(triggers=["Fix bug", "fix  bug"]),
        plan(triggers=["fix bug", "debug"]),
        id="duplicate-trigger",
    ),
]


@pytest.mark.parametrize(("code", "bad", "good"), CASES)
def test_code_fails_on_the_bad_plan_and_not_on_its_fix(code: str, bad: Plan, good: Plan):
    assert_fails_and_fix_is_clean(code, bad, good)
