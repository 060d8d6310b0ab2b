"""Plan checker: every error code fails on a bad plan and stays quiet on its fix."""

from __future__ import annotations

import pytest

from tests.check_helpers import (
    assert_fails_and_fix_is_clean,
    edge,
    plan,
    with_verify,
)
from waygraph.check import check_plan
from waygraph.model import Plan


def test_base_plan_has_no_problems():
    assert check_plan(plan()) == []


# (code, plan with the problem, the same plan fixed). Each error code appears at least once.
CASES = [
    pytest.param(
        "no-start",
        plan(nodes={"start": None}, start="", drop=("work",), edges=[]),
        plan(),
        id="no-start",
    ),
    pytest.param("no-start", plan(start=""), plan(), id="no-start-with-start-node"),
    pytest.param("unknown-start", plan(start="strat"), plan(), id="unknown-start"),
    pytest.param(
        "multiple-starts",
        plan(nodes={"begin": {"type": "start"}}, edges=[edge("begin", "work")]),
        plan(),
        id="multiple-starts",
    ),
    pytest.param(
        "start-has-incoming",
        plan(edges=[edge("work", "start", "on_fail")]),
        plan(
            nodes={"again": {"type": "checkpoint"}},
            replace_edges=[
                edge("start", "again"),
                edge("again", "work"),
                edge("work", "done", "on_success"),
                edge("work", "again", "on_fail"),
            ],
        ),
        id="start-has-incoming",
    ),
    pytest.param(
        "unknown-node", plan(edges=[edge("work", "dnoe", "on_fail")]), plan(), id="unknown-to"
    ),
    pytest.param(
        "unknown-node", plan(edges=[edge("wrok", "done", "on_fail")]), plan(), id="unknown-from"
    ),
    pytest.param(
        "end-node-has-edges",
        plan(edges=[edge("done", "work")]),
        plan(),
        id="end-node-has-edges-exit",
    ),
    pytest.param(
        "end-node-has-edges",
        plan(
            nodes={"stuck": {"type": "escalate", "reason": "r"}},
            edges=[edge("work", "stuck", "on_fail"), edge("stuck", "done")],
        ),
        plan(
            nodes={"stuck": {"type": "escalate", "reason": "r"}},
            edges=[edge("work", "stuck", "on_fail")],
        ),
        id="end-node-has-edges-escalate",
    ),
    *[
        pytest.param(
            "verify-needs-value",
            with_verify(bad),
            with_verify(good),
            id=f"verify-needs-value-{i}",
        )
        for i, (bad, good) in enumerate(
            [
                ({"type": "output_contains"}, {"type": "output_contains", "value": "ok"}),
                ({"type": "output_not_contains", "value": ""}, {"type": "any_output"}),
                ({"type": "regex", "value": 5}, {"type": "regex", "value": "5"}),
                ({"type": "file_exists", "value": "  "}, {"type": "file_exists", "value": "a"}),
                ({"type": "exit_code"}, {"type": "exit_code", "value": 0}),
                ({"type": "exit_code", "value": "1"}, {"type": "exit_code", "value": 1}),
                ({"type": "exit_code", "value": True}, {"type": "exit_code", "value": 1}),
                (
                    {"type": "all", "checks": [{"type": "any_output"}, {"type": "regex"}]},
                    {"type": "all", "checks": [{"type": "any_output"}]},
                ),
            ]
        )
    ],
    *[
        pytest.param(
            "verify-needs-checks",
            with_verify(bad),
            with_verify({"type": "not", "checks": [{"type": "output_contains", "value": "x"}]}),
            id=f"verify-needs-checks-{i}",
        )
        for i, bad in enumerate(
            [
                {"type": "all", "checks": []},
                {"type": "any"},
                {"type": "not"},
                {"type": "not", "checks": [{"type": "any_output"}, {"type": "any_output"}]},
            ]
        )
    ],
    *[
        pytest.param(
            "verify-needs-field",
            with_verify(bad),
            with_verify(good),
            id=f"verify-needs-field-{i}",
        )
        for i, (bad, good) in enumerate(
            [
                (
                    {"type": "compare", "field": "data.count", "value": 0},
                    {"type": "compare", "field": "data.count", "op": ">", "value": 0},
                ),
                (
                    {"type": "compare", "op": ">", "value": 0},
                    {"type": "compare", "field": "data.count", "op": ">", "value": 0},
                ),
                ({"type": "truthy"}, {"type": "truthy", "field": "data.approved"}),
            ]
        )
    ],
    pytest.param(
        "bad-regex",
        with_verify({"type": "regex", "value": "(passed"}),
        with_verify({"type": "regex", "value": r"(\d+) passed"}),
        id="bad-regex",
    ),
    pytest.param(
        "bad-regex",
        # Verbose mode makes "#" start a comment, which leaves the group open.
        with_verify({"type": "regex", "value": "(a#)", "flags": "x"}),
        with_verify({"type": "regex", "value": "(a#)", "flags": "i"}),
        id="bad-regex-with-flags",
    ),
    pytest.param(
        "bad-regex-flags",
        with_verify({"type": "regex", "value": "ok", "flags": "ig"}),
        with_verify({"type": "regex", "value": "ok", "flags": "imsx"}),
        id="bad-regex-flags",
    ),
    pytest.param(
        "bad-trigger-threshold",
        plan(trigger_threshold=0),
        plan(trigger_threshold=1),
        id="bad-trigger-threshold-zero",
    ),
    pytest.param(
        "bad-trigger-threshold",
        plan(triggers=["fix bug", "debug"], trigger_threshold=3),
        plan(triggers=["fix bug", "debug"], trigger_threshold=2),
        id="bad-trigger-threshold-too-high",
    ),
    pytest.param(
        "bad-trigger-threshold",
        plan(triggers=["fix bug"], trigger_threshold=-1),
        plan(triggers=[], trigger_threshold=-1),  # no triggers: the threshold is unused
        id="bad-trigger-threshold-without-triggers",
    ),
]


@pytest.mark.parametrize(("code", "bad", "good"), CASES)
def test_code_fails_on_the_bad_plan_and_not_on_its_fix(code: str, bad: Plan, good: Plan):
    assert_fails_and_fix_is_clean(code, bad, good)
