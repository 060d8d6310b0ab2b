"""Extracting and repairing JSON from models' plain-text replies."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from waygraph.planning import PlanParseError, extract_json, repair_json

PLAN = {
    "goal": "g",
    "steps": [{"id": "s1", "action": "t", "parameters": {"q": "a {b} [c]"}, "dependencies": []}],
}


@pytest.mark.parametrize("reply", [
    json.dumps(PLAN),
    "```json\n" + json.dumps(PLAN, indent=2) + "\n```",
    "```\n" + json.dumps(PLAN) + "\n```",
    "Here is the plan you asked for:\n\n" + json.dumps(PLAN) + "\n\nLet me know!",
    "Sure. ```JSON\n" + json.dumps(PLAN) + "```  Hope that helps.",
])  # fmt: skip
def test_finds_the_json_in_plain_fenced_and_surrounded_replies(reply):
    assert extract_json(reply) == PLAN


@pytest.mark.parametrize(("reply", "expected"), [
    ('{"a": [1, 2,], "b": {"c": 3,},}', {"a": [1, 2], "b": {"c": 3}}),
    ("{'a': 'it\\'s', 'b': \"say 'hi'\"}", {"a": "it's", "b": "say 'hi'"}),
    ('{"ok": True, "none": None, "no": False}', {"ok": True, "none": None, "no": False}),
    ('{goal: "g", steps: []}', {"goal": "g", "steps": []}),
    ('{"a": 1 // one\n, /* two */ "b": 2 # three\n}', {"a": 1, "b": 2}),
    ('[{"id": "a"}\n {"id": "b"}]', [{"id": "a"}, {"id": "b"}]),
    ('{"a": "x" "b": "y"}', {"a": "x", "b": "y"}),
    ('{"steps": [{"id": "s1", "parameters": {"q": "cut', {"steps": [{"id": "s1",
                                                            "parameters": {"q": "cut"}}]}),
    ('{"a":', {"a": None}),
    ('{"text": "line one\nline two"}', {"text": "line one\nline two"}),
])  # fmt: skip
def test_repairs_common_mistakes(reply, expected):
    assert extract_json(reply) == expected


def test_prose_braces_before_the_json_are_passed_over():
    assert extract_json('Use {braces} like this: {"ok": 1}') == {"ok": 1}


def test_repair_json_output_is_json():
    repaired = repair_json("{'a': True, b: [1, 2,],}")
    assert repaired == '{"a": true, "b": [1, 2]}'
    assert json.loads(repaired) == {"a": True, "b": [1, 2]}


@pytest.mark.parametrize(
    "reply", ["", "   ", "I cannot make a plan for that.", "{{{{ not json at all"]
)
def test_no_json_is_a_parse_error_quoting_the_reply(reply):
    with pytest.raises(PlanParseError) as info:
        extract_json(reply)
    assert isinstance(info.value, ValueError)
    if reply.strip():
        assert reply.strip()[:10] in str(info.value)


def test_nothing_is_evaluated():
    with pytest.raises(PlanParseError):
        extract_json("{\"a\": __import__('os').system('echo pwned')}")


@given(st.dictionaries(
    st.text(max_size=8),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=10),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                    max_size=3),
        max_leaves=8),
    max_size=4))  # fmt: skip
def test_any_json_object_survives_fences_and_prose(value):
    text = json.dumps(value)
    assert extract_json(text) == value
    assert extract_json(f"The plan:\n```json\n{text}\n```\nDone.") == value
