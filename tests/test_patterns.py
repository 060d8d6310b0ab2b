"""Issue 13, defect 6: a plan's regex cannot hang the agent or the server."""

from __future__ import annotations

import threading
import time

import pytest

from waygraph.check import check_plan
from waygraph.model import Plan, Verify
from waygraph.sandbox.patterns import MATCH_TIMEOUT, PatternTimeout, nested_quantifier, search
from waygraph.verify import Observation, evaluate

#: Slow for any backtracking engine: every way to split 50 characters is tried.
SLOW = r"(.*){1,32000}[bc]"
SLOW_TEXT = "a" * 50


def test_a_runaway_match_stops_at_its_time_bound():
    # The timeout's own error says the bound stopped it: unbounded, this search
    # would outlive the suite (pytest's timeout catches a hang).
    with pytest.raises(PatternTimeout, match=r"took longer than 0\.2s"):
        search(SLOW, None, SLOW_TEXT, timeout=0.2)


def test_a_timed_out_check_is_unknown_never_a_pass():
    check = Verify(type="regex", value=SLOW)
    verdict = evaluate(check, Observation(output=SLOW_TEXT))
    assert verdict.outcome == "unknown" and "needs simplifying" in (verdict.reason or "")
    negated = Verify(type="not", checks=(check,))
    assert evaluate(negated, Observation(output=SLOW_TEXT)).outcome == "unknown"


def test_matching_does_not_hold_the_gil():
    done = threading.Event()

    def verify() -> None:
        evaluate(Verify(type="regex", value=SLOW), Observation(output=SLOW_TEXT))
        done.set()

    worker = threading.Thread(target=verify)
    worker.start()
    ticks = 0
    deadline = time.monotonic() + MATCH_TIMEOUT / 2
    while time.monotonic() < deadline:
        ticks += 1
        time.sleep(0.001)
    worker.join(10)
    assert done.is_set()
    # With the GIL held for the whole match (Python's re) this loop would not
    # run at all until the match ended.
    assert ticks > 20


def test_patterns_keep_re_syntax_and_flags():
    assert search(r"(?<!\b0 )\bfailed\b", "i", "3 FAILED")
    assert not search(r"(?<!\b0 )\bfailed\b", "i", "0 failed")
    assert search(r"^b$", "m", "a\nb\nc")


@pytest.mark.parametrize(
    ("pattern", "nested"),
    [
        ("(a+)+$", True),
        (r"(\w+\s?)*$", True),
        ("(?:x+y)+", True),
        (SLOW, True),
        (r"\d+ passed", False),
        ("(a|b)+", False),
        ("(?:ab){2,5}", False),
        (r"(?<!\b0 )\b(failed|errors?)\b", False),
        ("(", False),  # does not compile: the compile check reports it
    ],
)
def test_nested_quantifiers_are_recognised(pattern: str, nested: bool):
    assert nested_quantifier(pattern) is nested


def test_check_warns_about_the_pattern_before_it_runs():
    plan = Plan.model_validate(
        {
            "id": "p",
            "triggers": ["go"],
            "trigger_threshold": 1,
            "steps": [{"name": "s", "verify": {"type": "regex", "value": "(a+)+$"}}],
        }
    )
    codes = [p.code for p in check_plan(plan)]
    assert "regex-backtracking" in codes
