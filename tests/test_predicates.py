"""Condition strings: parsing into Verify trees, formatting back, evaluating over data."""

from __future__ import annotations

import contextlib
import doctest
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from waygraph import predicates
from waygraph.errors import PlanFormatError
from waygraph.model import Verify
from waygraph.predicates import (
    MAX_CONDITION_CHARS,
    MAX_CONDITION_DEPTH,
    evaluate_data,
    format_condition,
    parse_condition,
    parse_literal,
)
from waygraph.verify import Observation, check


def cmp(field: str, op: str, value: Any) -> Verify:
    return Verify(type="compare", field=field, op=op, value=value)


def truthy(field: str) -> Verify:
    return Verify(type="truthy", field=field)


def all_(*checks: Verify) -> Verify:
    return Verify(type="all", checks=checks)


def any_(*checks: Verify) -> Verify:
    return Verify(type="any", checks=checks)


def not_(check: Verify) -> Verify:
    return Verify(type="not", checks=(check,))


# ---------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("data.count > 0", cmp("data.count", ">", 0)),
        (
            "data.status == 'ok' && results.search.count >= 2",
            all_(cmp("data.status", "==", "ok"), cmp("results.search.count", ">=", 2)),
        ),
        ("!data.error", not_(truthy("data.error"))),
        ("a || (b && c)", any_(truthy("a"), all_(truthy("b"), truthy("c")))),
        ("data.kind in ['x', 'y']", cmp("data.kind", "in", ["x", "y"])),
        ("data.kind not in ['x']", cmp("data.kind", "not in", ["x"])),
        ("data.tags contains 'urgent'", cmp("data.tags", "contains", "urgent")),
        ("data.ok", truthy("data.ok")),
        ("not a and b or c", any_(all_(not_(truthy("a")), truthy("b")), truthy("c"))),
        ("a != null", cmp("a", "!=", None)),
        ("a <= -1.5", cmp("a", "<=", -1.5)),
        ("a < 2e3", cmp("a", "<", 2000.0)),
        ('items.0.name == "x"', cmp("items.0.name", "==", "x")),
        (
            "a == True && b == False && c == None",
            all_(cmp("a", "==", True), cmp("b", "==", False), cmp("c", "==", None)),
        ),
        ("_private.ünïcode == 'ok'", cmp("_private.ünïcode", "==", "ok")),
        ("a.not.in == 1", cmp("a.not.in", "==", 1)),
        ("  ( ( a ) )  ", truthy("a")),
    ],
)
def test_parses_condition_strings(text, expected):
    assert parse_condition(text) == expected


def test_and_binds_tighter_than_or_and_not_tightest():
    assert parse_condition("a || b && c") == any_(truthy("a"), all_(truthy("b"), truthy("c")))
    assert parse_condition("!a == 1 && b") == all_(not_(cmp("a", "==", 1)), truthy("b"))


def test_chains_are_one_node_but_parentheses_keep_their_own():
    assert parse_condition("a && b && c") == all_(truthy("a"), truthy("b"), truthy("c"))
    assert parse_condition("(a && b) && c") == all_(all_(truthy("a"), truthy("b")), truthy("c"))


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("'it\\'s'", "it's"),
        ('"say \\"hi\\""', 'say "hi"'),
        ("'a\\nb\\tc\\\\d'", "a\nb\tc\\d"),
        ("'\\u00e9\\U0001F600'", "é😀"),
        ("'😀 raw'", "😀 raw"),
        ("[]", []),
        ("[1, [2, 'x'], null,]", [1, [2, "x"], None]),
        ("-0", 0),
        ("12345678901234567890", 12345678901234567890),
        ("1.0", 1.0),
    ],
)
def test_literals(text, value):
    assert parse_literal(text) == value
    assert type(parse_literal(text)) is type(value)


@pytest.mark.parametrize(
    ("text", "column", "fragment"),
    [
        ("a = 1", 3, "use '=='"),
        ("a == b", 6, "quote text values"),
        ("a & b", 3, "use '&&'"),
        ("a | b", 3, "use '||'"),
        ("(a && b", 8, "expected ')' to close the '(' at column 1"),
        ("a &&", 5, "expected a field path"),
        ("a > ", 5, "expected a value after '>'"),
        ("'open", 1, "string is not closed"),
        ("a == 'x\\q'", 8, "unknown escape"),
        ("a == '\\u12'", 7, "needs 4 hex digits"),
        ("a == '\\UFFFFFFFF'", 7, "not a Unicode code point"),
        ("a b", 3, "join conditions with && or ||"),
        ("a not b", 7, "expected 'in' after 'not'"),
        ("a in [1 2]", 9, "expected ',' or ']'"),
        ("a == 1)", 7, "unexpected ')'"),
        ("1 == a", 1, "expected a field path"),
        ("a.b. == 1", 4, "unexpected character '.'"),
        ("a @ b", 3, "unexpected character '@'"),
    ],
)
def test_bad_conditions_name_the_column_and_quote_the_text(text, column, fragment):
    with pytest.raises(PlanFormatError) as info:
        parse_condition(text)
    message = str(info.value)
    assert f"column {column}:" in message
    assert fragment in message
    assert repr(text) in message


def test_bad_input_is_refused_before_parsing():
    with pytest.raises(PlanFormatError, match="empty"):
        parse_condition("   ")
    with pytest.raises(PlanFormatError, match="must be a string"):
        parse_condition(None)  # type: ignore[arg-type]
    with pytest.raises(PlanFormatError, match=f"longer than {MAX_CONDITION_CHARS}"):
        parse_condition("a" * (MAX_CONDITION_CHARS + 1))


def test_nesting_is_bounded():
    ok = "(" * MAX_CONDITION_DEPTH + "a" + ")" * MAX_CONDITION_DEPTH
    assert parse_condition(ok) == truthy("a")
    for deep in ("(" * (MAX_CONDITION_DEPTH + 1) + "a", "!" * 70 + "a", "a == " + "[" * 70):
        with pytest.raises(PlanFormatError, match="nested more than"):
            parse_condition(deep)


def test_parse_never_evaluates_code():
    # Text that Python would happily run is just a bad condition here.
    for text in ("__import__('os').system('true')", "a.__class__ == 1()", "lambda: 1"):
        with pytest.raises(PlanFormatError):
            parse_condition(text)


# ---------------------------------------------------------------- formatting


@pytest.mark.parametrize(
    "text",
    [
        "data.count > 0",
        "data.status == 'ok' && results.search.count >= 2",
        "!data.error",
        "a || (b && c)",
        "(a || b) && !(c && d)",
        "data.kind in ['x', 'y']",
        "data.kind not in [1, 2.5, true, null, []]",
        "data.tags contains 'it\\'s \\\\ \\n'",
        "!!a",
        "!a == 'x'",
    ],
)
def test_format_is_canonical_for_canonical_text(text):
    assert format_condition(parse_condition(text)) == text


def test_format_spells_escapes_so_the_value_survives():
    value = "quote' back\\ nl\n tab\t cr\r bell\x07 é 😀 lone\ud800"
    text = format_condition(cmp("a", "==", value))
    assert parse_condition(text).value == value


@pytest.mark.parametrize(
    "verify",
    [
        Verify(type="output_contains", value="x"),
        Verify(type="exit_code_zero"),
        all_(truthy("a")),
        Verify(type="any", checks=()),
        Verify(type="not", checks=(truthy("a"), truthy("b"))),
        cmp("a", "==", {"k": 1}),
        cmp("a", "==", math.nan),
        cmp("a b", "==", 1),
        cmp("in", "==", 1),
        Verify(type="compare", field="a", value=1),
        Verify(type="truthy", field="a", value=1),
        Verify(type="regex", value="x", flags="i"),
        all_(truthy("a"), Verify(type="any_output")),
        cmp("a", "==", "x" * MAX_CONDITION_CHARS),
    ],
)
def test_format_refuses_trees_without_an_exact_string_form(verify):
    with pytest.raises(ValueError):
        format_condition(verify)


def test_format_refuses_trees_deeper_than_the_parser_allows():
    deep = truthy("a")
    for _ in range(MAX_CONDITION_DEPTH + 1):
        deep = not_(deep)
    with pytest.raises(ValueError, match="nested"):
        format_condition(deep)


# ---------------------------------------------------------------- evaluation

DATA = {
    "data": {
        "count": 3,
        "status": "ok",
        "tags": ["urgent", "db"],
        "flag": True,
        "empty": "",
        "zero": 0,
        "ratio": 0.5,
        "nested": {"items": [{"name": "a"}, {"name": "b"}]},
        "kind": "bug",
    },
    "results": {"search": {"count": 2}},
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("data.count > 0", True),
        ("data.count >= 3 && data.count < 4", True),
        ("data.status == 'ok' && results.search.count >= 2", True),
        ("data.ratio <= 0.5", True),
        ("data.status > 'a'", True),
        ("data.count == 3.0", True),
        ("data.flag", True),
        ("data.empty", False),
        ("data.zero", False),
        ("!data.missing", True),
        ("data.nested.items.1.name == 'b'", True),
        ("data.nested.items.2.name == 'b'", False),
        ("data.nested.items.x", False),
        ("data.kind in ['bug', 'question']", True),
        ("data.kind not in ['bug']", False),
        ("data.kind in 'debugger'", True),
        ("data.tags contains 'urgent'", True),
        ("data.tags contains 'nope'", False),
        ("data.status contains 'o'", True),
        ("data.nested contains 'items'", True),
        ("data.tags == ['urgent', 'db']", True),
        ("data.nested == null", False),
        # missing paths: never truthy, compare False except !=
        ("data.missing", False),
        ("data.missing == null", False),
        ("data.missing > 0", False),
        ("data.missing in [1]", False),
        ("data.missing not in [1]", False),
        ("data.missing != 1", True),
        ("nope.deeper.still != 'x'", True),
        # type mismatches are False, never an exception
        ("data.status > 1", False),
        ("data.count > 'a'", False),
        ("data.count contains 1", False),
        ("data.count in 'abc'", False),
        ("data.count not in 'abc'", False),
        ("data.count in 3", False),
        ("data.flag == 1", False),
        ("data.zero == false", False),
        ("data.count == '3'", False),
        ("data.tags contains ['x']", False),
        ("data.nested contains ['unhashable']", False),
        ("data.count.deeper", False),
        # combinators
        ("data.missing || data.flag", True),
        ("data.flag && !data.flag", False),
    ],
)
def test_evaluate_data(text, expected):
    assert evaluate_data(parse_condition(text), DATA) is expected


def test_evaluate_matches_empty_and_malformed_combinators_like_verify_check():
    assert evaluate_data(Verify(type="all", checks=()), {}) is True
    assert evaluate_data(Verify(type="any", checks=()), {}) is False
    two = Verify(type="not", checks=(truthy("a"), truthy("b")))
    assert evaluate_data(two, {"a": 0, "b": 0}) is False


def test_evaluate_refuses_output_checks_and_compares_without_op():
    with pytest.raises(ValueError, match="tool output"):
        evaluate_data(Verify(type="output_contains", value="x"), {})
    with pytest.raises(ValueError, match="tool output"):
        evaluate_data(all_(truthy("a"), Verify(type="any_output")), {"a": 1})
    with pytest.raises(ValueError, match="no 'op'"):
        evaluate_data(Verify(type="compare", field="a", value=1), {"a": 1})


def test_evaluate_does_not_look_at_attributes_of_objects():
    class Secret:
        token = "s3cret"

    assert evaluate_data(parse_condition("obj.token == 's3cret'"), {"obj": Secret()}) is False


def test_verify_check_routes_data_predicates_here():
    verify = parse_condition("data.count > 1 && data.status == 'ok'")
    assert check(verify, Observation(data={"data": {"count": 2, "status": "ok"}}))
    assert not check(verify, Observation(data={"data": {"count": 1, "status": "ok"}}))


def test_module_examples():
    result = doctest.testmod(predicates)
    assert result.attempted > 0 and result.failed == 0


# ---------------------------------------------------------------- properties

_names = st.sampled_from(["a", "data", "x_1", "results", "ünï", "True_", "notes", "in_"])
field_paths = st.builds(
    lambda head, rest: ".".join([head, *rest]),
    _names,
    st.lists(st.one_of(_names, st.sampled_from(["0", "1", "12", "in", "not"])), max_size=3),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**12), max_value=10**12),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
)
literals = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3), max_leaves=6)
_ops = st.sampled_from(["==", "!=", ">", ">=", "<", "<=", "in", "not in", "contains"])
_leaves = st.one_of(
    st.builds(truthy, field_paths),
    st.builds(cmp, field_paths, _ops, literals),
)


def _combine(children: st.SearchStrategy[Verify]) -> st.SearchStrategy[Verify]:
    group = st.lists(children, min_size=2, max_size=3).map(tuple)
    return st.one_of(
        st.builds(not_, children),
        group.map(lambda cs: Verify(type="all", checks=cs)),
        group.map(lambda cs: Verify(type="any", checks=cs)),
    )


#: Random compare/truthy/all/any/not trees (shared with the DOT tests).
condition_trees = st.recursive(_leaves, _combine, max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(condition_trees)
def test_generated_trees_round_trip(tree):
    assert parse_condition(format_condition(tree)) == tree


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_random_text_only_ever_raises_plan_format_error(text):
    with contextlib.suppress(PlanFormatError):
        parse_condition(text)


_soup = st.lists(
    st.sampled_from(
        [
            "a",
            "b.c",
            "0",
            "-1",
            "2.5e3",
            "'s'",
            '"t\\"',
            "'\\u00",
            "(",
            ")",
            "[",
            "]",
            ",",
            "!",
            "&&",
            "||",
            "==",
            "!=",
            ">",
            ">=",
            "<",
            "<=",
            "=",
            "&",
            "|",
            "in",
            "not",
            "contains",
            "and",
            "or",
            "true",
            "None",
            ".",
            " ",
            "'",
            "\\",
        ]
    ),
    max_size=30,
).map("".join)


@settings(max_examples=500, deadline=None)
@given(_soup)
def test_token_soup_only_ever_raises_plan_format_error(text):
    try:
        verify = parse_condition(text)
    except PlanFormatError:
        return
    # Whatever parses must also format back to the same tree.
    assert parse_condition(format_condition(verify)) == verify


json_data = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(_names, inner, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None)
@given(condition_trees, st.dictionaries(_names, json_data, max_size=4))
def test_evaluation_never_raises_on_any_data(tree, data):
    assert evaluate_data(tree, data) in (True, False)
