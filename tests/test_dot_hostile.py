"""The DOT format on hostile input: random text, bytes and mutated files raise only
PlanFormatError, and deep or huge input is refused quickly.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.dot_helpers import COMPAT_PLANS, DOT_FILES, everything_plan, parse
from waygraph.errors import PlanFormatError, PlanSyntaxError, WaygraphError
from waygraph.formats import dot
from waygraph.formats.dot import parse_dot, plan_to_dot

# ---------------------------------------------------------------- hostile input


def _only_plan_errors(text: str) -> None:
    try:
        parse_dot(text, file="fuzz.dot")
    except WaygraphError as exc:
        assert isinstance(exc, PlanFormatError)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_random_text_only_raises_plan_format_error(text):
    _only_plan_errors(text)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_only_raise_plan_format_error(data):
    _only_plan_errors(data.decode("utf-8", errors="replace"))
    _only_plan_errors("digraph p { " + data.decode("latin-1") + " }")


_SOURCES = [p.read_text(encoding="utf-8") for p in DOT_FILES] + [
    plan_to_dot(everything_plan()),
    plan_to_dot(COMPAT_PLANS[0]),
]
_SNIPPETS = [
    '"',
    "[",
    "]",
    "{",
    "}",
    "->",
    "--",
    ";",
    "=",
    ",",
    ":",
    "/*",
    "//",
    "\\",
    "<",
    "subgraph",
    "node",
    "condition=",
    "outcome=",
    "&&",
    '{"type":',
    "\n",
    "digraph",
]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(_SOURCES), st.randoms(use_true_random=False))
def test_mutated_dot_files_only_raise_plan_format_error(source, rnd: random.Random):
    text = source
    for _ in range(rnd.randint(1, 4)):
        at = rnd.randrange(len(text) + 1)
        span = rnd.randint(0, 12)
        choice = rnd.random()
        if choice < 0.4:
            text = text[:at] + text[at + span :]
        elif choice < 0.8:
            text = text[:at] + rnd.choice(_SNIPPETS) + text[at:]
        else:
            text = text[:at] + text[at : at + span] * 2 + text[at + span :]
    _only_plan_errors(text)


def test_deep_json_and_huge_input_are_refused_quickly():
    deep = '"' + "[" * 100_000 + '"'
    with pytest.raises(PlanFormatError, match=r"nested too deeply|invalid JSON"):
        parse(f"digraph p {{ s [shape=Mdiamond, meta={deep}] }}")
    with pytest.raises(PlanSyntaxError, match="larger than"):
        parse_dot(" " * (dot.MAX_DOT_CHARS + 1))
