"""Metrics: Wilson and Newcombe intervals against hand-computed and published values."""

from __future__ import annotations

import math

import pytest

from waygraph.eval.metrics import (
    difference_ci,
    mode_difference,
    summarize_modes,
    summary_line,
    task_rates,
    wilson_interval,
)
from waygraph.eval.runner import Record


def test_wilson_matches_a_hand_computation():
    # 56/70, z = 1.96: centre (0.8 + z²/140) / (1 + z²/70), half-width
    # z / (1 + z²/70) * sqrt(0.8 * 0.2 / 70 + z² / (4 * 70²)).
    z = 1.959963984540054
    centre = (0.8 + z * z / 140) / (1 + z * z / 70)
    half = z / (1 + z * z / 70) * math.sqrt(0.16 / 70 + z * z / 19600)
    low, high = wilson_interval(56, 70)
    assert low == pytest.approx(centre - half) and high == pytest.approx(centre + half)
    assert (round(low, 4), round(high, 4)) == (0.6918, 0.877)
    assert wilson_interval(0, 10)[0] == 0.0 and wilson_interval(10, 10)[1] == pytest.approx(1.0)
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_newcombe_matches_the_published_example():
    # Newcombe (1998), Stat Med 17:873, method 10, example 56/70 - 48/80: 0.0524 to 0.3339.
    d = difference_ci(56, 70, 48, 80)
    assert d.estimate == pytest.approx(0.2)
    assert (round(d.low, 4), round(d.high, 4)) == (0.0524, 0.3339)


def test_newcombe_at_the_edges_stays_in_range_and_is_not_degenerate():
    d = difference_ci(10, 10, 0, 10)
    assert d.estimate == 1.0 and d.high == 1.0 and 0.5 < d.low < 1.0
    same = difference_ci(5, 5, 5, 5)
    assert same.estimate == 0 and same.low < 0 < same.high  # all pairs agree: still uncertain
    with pytest.raises(ValueError):
        difference_ci(1, 0, 1, 1)


def records() -> list[Record]:
    rows = [
        ("a", "baseline", False, 3, 100, 1.0, None, False),
        ("a", "guided", True, 5, 300, 2.0, 1, False),
        ("b", "baseline", True, 1, 50, 3.0, None, False),
        ("b", "guided", True, 7, 500, 4.0, 0, False),
        ("c", "baseline", False, 2, 10, 0.5, None, False),
        ("c", "guided", False, 9, 900, 6.0, 4, True),
    ]
    return [
        Record(
            task=t,
            mode=m,
            repeat=1,
            success=s,
            tool_calls=c,
            tokens=k,
            wall_time=w,
            verification_failures=v,
            escalated=e,
        )
        for t, m, s, c, k, w, v, e in rows
    ]


def test_mode_summaries():
    base, guided = summarize_modes(records())
    assert (base.mode, base.runs, base.successes) == ("baseline", 3, 1)
    assert base.rate == pytest.approx(1 / 3) and base.mean_tool_calls == pytest.approx(2.0)
    assert base.mean_tokens == pytest.approx(160 / 3) and base.mean_verification_failures is None
    assert guided.rate == pytest.approx(2 / 3) and guided.mean_wall_time == pytest.approx(4.0)
    assert guided.mean_verification_failures == pytest.approx(5 / 3) and guided.escalations == 1
    assert (base.low, base.high) == wilson_interval(1, 3)


def test_task_rates_and_the_summary_line():
    assert task_rates(records()) == {
        "a": {"baseline": (0, 1), "guided": (1, 1)},
        "b": {"baseline": (1, 1), "guided": (1, 1)},
        "c": {"baseline": (0, 1), "guided": (0, 1)},
    }
    d = mode_difference(records(), "guided", "baseline")
    expected = difference_ci(2, 3, 1, 3)
    assert d == expected
    line = summary_line(records())
    assert line == (
        f"guided - baseline: +33.3 points success rate (95% CI {expected.low * 100:+.1f} to "
        f"{expected.high * 100:+.1f}; 2/3 vs 1/3 runs); false completions 0 vs 0"
    )
    only = [r for r in records() if r.mode == "guided"]
    assert summary_line(only) == (
        "guided - baseline: not measured (run both modes: --mode baseline,guided)"
    )
