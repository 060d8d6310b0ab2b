"""The model stylesheet (Attractor §8, Definition of Done §11.10)."""

from __future__ import annotations

import contextlib

import pytest

from waygraph.errors import PlanFormatError
from waygraph.pipelines.stylesheet import (
    MAX_STYLESHEET_CHARS,
    StyleRule,
    Stylesheet,
    parse_stylesheet,
)

SPEC_EXAMPLE = """
    * { llm_model: claude-sonnet-4-5; llm_provider: anthropic; }
    .code { llm_model: claude-opus-4-6; llm_provider: anthropic; }
    #critical_review { llm_model: gpt-5.2; llm_provider: openai; reasoning_effort: high; }
"""


# §11.10: "Stylesheet parsed from the model_stylesheet graph attribute"
def test_the_specifications_example_parses_into_three_rules():
    sheet = parse_stylesheet(SPEC_EXAMPLE)
    assert [(r.selector, r.specificity) for r in sheet.rules] == [
        ("*", 0),
        (".code", 2),
        ("#critical_review", 3),
    ]
    assert dict(sheet.rules[2].declarations) == {
        "llm_model": "gpt-5.2",
        "llm_provider": "openai",
        "reasoning_effort": "high",
    }


# §8.6: what each node of the example gets
def test_the_specifications_example_resolves_as_the_text_says():
    sheet = parse_stylesheet(SPEC_EXAMPLE)
    assert sheet.properties_for("plan", "box", ["planning"])["llm_model"] == "claude-sonnet-4-5"
    assert sheet.properties_for("implement", "box", ["code"])["llm_model"] == "claude-opus-4-6"
    review = sheet.properties_for("critical_review", "box", ["code"])
    assert review == {
        "llm_model": "gpt-5.2",
        "llm_provider": "openai",
        "reasoning_effort": "high",
    }


# §11.10: "Selectors by shape name work"; parity: "Stylesheet applies model override by shape"
def test_a_shape_selector_matches_nodes_of_that_shape_without_regard_to_case():
    sheet = parse_stylesheet("box { llm_model: m1; } Hexagon { llm_model: m2; }")
    assert sheet.properties_for("a", "box", []) == {"llm_model": "m1"}
    assert sheet.properties_for("a", "Box", []) == {"llm_model": "m1"}
    assert sheet.properties_for("a", "hexagon", []) == {"llm_model": "m2"}
    assert sheet.properties_for("a", "diamond", []) == {}
    assert sheet.properties_for("a", None, []) == {}


# §11.10: "Selectors by class name work"; §2.12 several classes per node
def test_a_class_selector_matches_any_of_the_nodes_classes():
    sheet = parse_stylesheet(".critical { reasoning_effort: high; }")
    assert sheet.properties_for("a", "box", ["code", "critical"]) == {"reasoning_effort": "high"}
    assert sheet.properties_for("a", "box", ["code"]) == {}


# §11.10: "Selectors by ID work"
def test_an_id_selector_matches_only_that_node():
    sheet = parse_stylesheet("#review { llm_provider: openai; }")
    assert sheet.properties_for("review", None, []) == {"llm_provider": "openai"}
    assert sheet.properties_for("reviewer", None, []) == {}


# §11.10: "Specificity order: universal < shape < class < ID"
def test_specificity_wins_over_the_order_of_writing():
    sheet = parse_stylesheet(
        "#n { llm_model: by-id; } .c { llm_model: by-class; } "
        "box { llm_model: by-shape; } * { llm_model: everyone; }"
    )
    assert sheet.properties_for("n", "box", ["c"]) == {"llm_model": "by-id"}
    assert sheet.properties_for("m", "box", ["c"]) == {"llm_model": "by-class"}
    assert sheet.properties_for("m", "box", []) == {"llm_model": "by-shape"}
    assert sheet.properties_for("m", "circle", []) == {"llm_model": "everyone"}


def test_a_later_rule_of_equal_specificity_wins():
    sheet = parse_stylesheet(".a { llm_model: first; } .b { llm_model: second; }")
    assert sheet.properties_for("n", None, ["b", "a"]) == {"llm_model": "second"}
    assert sheet.properties_for("n", None, ["a"]) == {"llm_model": "first"}


def test_properties_merge_across_rules_each_from_its_most_specific_rule():
    sheet = parse_stylesheet(
        "* { llm_provider: anthropic; reasoning_effort: low; } #n { reasoning_effort: high; }"
    )
    assert sheet.properties_for("n", None, []) == {
        "llm_provider": "anthropic",
        "reasoning_effort": "high",
    }


def test_values_may_be_quoted_bare_or_contain_slashes_and_dots():
    sheet = parse_stylesheet(
        "* { llm_model: \"claude opus\"; llm_provider: 'x\\'y'; fidelity: openrouter/gpt-4.1 }"
    )
    assert dict(sheet.rules[0].declarations) == {
        "llm_model": "claude opus",
        "llm_provider": "x'y",
        "fidelity": "openrouter/gpt-4.1",
    }


def test_other_lowercase_properties_are_kept_for_the_caller_to_decide():
    sheet = parse_stylesheet("* { fidelity: compact; max_tokens: 4000; a.b: c; }")
    assert dict(sheet.rules[0].declarations) == {
        "fidelity": "compact",
        "max_tokens": "4000",
        "a.b": "c",
    }


def test_comments_blank_text_and_empty_rules_are_tolerated():
    sheet = parse_stylesheet("/* defaults */ * { /* model */ llm_model: m; } .x { }")
    assert [r.selector for r in sheet.rules] == ["*", ".x"]
    assert parse_stylesheet("  \n /* nothing */ ") == Stylesheet(())


def test_the_last_declaration_of_a_property_in_a_rule_wins():
    sheet = parse_stylesheet("* { llm_model: a; llm_model: b }")
    assert dict(sheet.rules[0].declarations) == {"llm_model": "b"}


def test_a_parsed_rule_cannot_be_changed_through_its_declarations():
    rule = parse_stylesheet("* { llm_model: a; }").rules[0]
    with pytest.raises(TypeError):
        rule.declarations["llm_model"] = "b"  # type: ignore[index]


def test_rules_can_be_built_directly():
    sheet = Stylesheet((StyleRule("*", 0, {"llm_model": "m"}), StyleRule("#n", 3, {"x": "y"})))
    assert sheet.properties_for("n", None, []) == {"llm_model": "m", "x": "y"}


@pytest.mark.parametrize(
    ("text", "says", "at"),
    [
        ("* { llm_model }", "expected ':' after the property 'llm_model'", "rule 1, character 14"),
        ("* { LLM_model: x; }", "expected a property name", "rule 1, character 4"),
        ("* { a: b; } # { a: b; }", "expected a node id after '#'", "rule 2, character 12"),
        ("* { a: b; } . { a: b; }", "expected a class name after '.'", "rule 2, character 12"),
        ("{ a: b; }", "expected a selector", "rule 1, character 0"),
        ("box llm_model: x;", "expected '{' after the selector 'box'", "rule 1, character 4"),
        ('* { a: "open; }', 'a value opened with " is never closed', "rule 1, character 7"),
        ("* { a: ; }", "expected a value", "rule 1, character 7"),
        ("* { a: b c; }", "expected ';' or '}' after the value of 'a'", "rule 1, character 9"),
        ("* { a: b; ", "expected '}' to close the rule", "rule 1, character 10"),
        ("* { a: b; } /* open", "never closed with '*/'", "character 12"),
    ],
)
def test_a_malformed_stylesheet_says_what_is_wrong_and_where(text, says, at):
    with pytest.raises(PlanFormatError) as caught:
        parse_stylesheet(text)
    message = str(caught.value)
    assert says in message
    assert at in message
    assert caught.value.field == "model_stylesheet"


def test_the_error_quotes_the_text_where_reading_stopped():
    with pytest.raises(PlanFormatError) as caught:
        parse_stylesheet("* { llm_model: a; } .code { llm_model = b; }")
    assert caught.value.value == "= b; }"


def test_an_error_at_the_end_says_so_instead_of_quoting_nothing():
    with pytest.raises(PlanFormatError, match="at the end of the stylesheet") as caught:
        parse_stylesheet("* { a: b")
    assert caught.value.value is None


def test_a_stylesheet_over_the_bound_is_refused_before_reading():
    with pytest.raises(PlanFormatError, match=f"at most {MAX_STYLESHEET_CHARS}"):
        parse_stylesheet(" " * (MAX_STYLESHEET_CHARS + 1))


def test_text_that_is_not_a_string_is_refused():
    with pytest.raises(PlanFormatError, match="must be text"):
        parse_stylesheet(None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "hostile",
    [
        "* { a: " + "x" * 99_000 + " y; }",
        "/*" + "*" * 99_000,
        "* { a: '" + "\\" * 99_000,
        "* {" + " a: b;" * 16_000 + "}",
    ],
)
@pytest.mark.timeout(60)
def test_parsing_takes_linear_time_on_hostile_text(hostile):
    # 99,000 characters: a parser that backtracks or rescans (quadratic or worse)
    # takes hours on them, so a hang, not a speed, is what the timeout catches.
    with contextlib.suppress(PlanFormatError):
        parse_stylesheet(hostile)
