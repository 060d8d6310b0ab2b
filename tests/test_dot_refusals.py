"""The DOT format: what is outside the subset is refused with the file, line and place."""

from __future__ import annotations

import pytest

from tests.dot_helpers import parse
from waygraph.errors import PlanFormatError, PlanSyntaxError
from waygraph.formats.dot import parse_dot

# ---------------------------------------------------------------- refusals

BAD = [
    # (text, error class, line, fragments of the message)
    ("graph p { a -- b }", PlanSyntaxError, 1, ["undirected 'graph'"]),
    ("digraph p {\n a -- b }", PlanSyntaxError, 2, ["'--'", "use '->'"]),
    ("strict digraph p { }", PlanSyntaxError, 1, ["'strict'"]),
    ("digraph p {\n subgraph c a }", PlanSyntaxError, 2, ["'{' to open the subgraph"]),
    ("digraph p {\n { a b } -> c }", PlanSyntaxError, 2, ["edges from subgraphs"]),
    ("digraph p {\n a -> { b } }", PlanSyntaxError, 2, ["subgraphs"]),
    ("digraph p {\n a:n -> b }", PlanSyntaxError, 2, ["ports", "'a:port'"]),
    ("digraph p {\n a -> b:s }", PlanSyntaxError, 2, ["ports"]),
    ("digraph p {\n a [label=<<b>x</b>>] }", PlanSyntaxError, 2, ["HTML"]),
    ('digraph p {\n a [label="x" + "y"] }', PlanSyntaxError, 2, ["'+'"]),
    ('digraph p {\n a [label="open] }', PlanSyntaxError, 2, ["not closed"]),
    ("digraph p {\n /* open", PlanSyntaxError, 2, ["'/*'"]),
    ("digraph p {\n a\n", PlanSyntaxError, 3, ["never closed"]),
    ("digraph p { a } digraph q { b }", PlanSyntaxError, 1, ["one plan"]),
    ("digraph p {\n 2abc }", PlanSyntaxError, 2, ["cannot start with a digit"]),
    ("digraph p {\n a [label] }", PlanSyntaxError, 2, ["needs a value"]),
    ("digraph p {\n a [label=] }", PlanSyntaxError, 2, ["expected a value for 'label'"]),
    ("digraph p {\n node a }", PlanSyntaxError, 2, ["expected '[' after 'node'"]),
    ("digraph p {\n a -> node }", PlanSyntaxError, 2, ["expected a node id"]),
    ("digraph p {\n a @ b }", PlanSyntaxError, 2, ["unexpected character '@'"]),
    ("  \n // nothing\n", PlanSyntaxError, None, ["empty"]),
    ("p { }", PlanSyntaxError, 1, ["expected 'digraph"]),
    ("digraph p {\n a\n b }", PlanFormatError, 1, ["no start node"]),
    (
        "digraph p {\n a [shape=Mdiamond]\n b [shape=Mdiamond] }",
        PlanFormatError,
        3,
        [
            "several start nodes (a, b)",
        ],
    ),
    (
        "digraph p {\n s [shape=Mdiamond]\n t [max_retries=two] }",
        PlanFormatError,
        3,
        [
            "field 'max_retries'",
            "whole number",
            "'two'",
        ],
    ),
    (
        "digraph p {\n s [shape=Mdiamond]\n t [max_retries=-1] }",
        PlanFormatError,
        3,
        [
            "node 't', field 'max_retries'",
        ],
    ),
    (
        "digraph p {\n s [shape=Mdiamond]\n t [status=paused] }",
        PlanFormatError,
        3,
        [
            "field 'status'",
        ],
    ),
    (
        'digraph p {\n s [shape=Mdiamond]\n t [verify="{\\"type\\": \\"nope\\"}"] }',
        PlanFormatError,
        3,
        ["node 't', field 'verify.type'", "unknown verify type"],
    ),
    (
        'digraph p {\n s [shape=Mdiamond]\n t [verify="{oops"] }',
        PlanFormatError,
        3,
        [
            "field 'verify'",
            "invalid JSON",
        ],
    ),
    ('digraph p {\n s [shape=Mdiamond]\n t [meta="[1]"] }', PlanFormatError, 3, ["JSON object"]),
    (
        "digraph p {\n s [shape=Mdiamond]\n t [prompt=a, action=b] }",
        PlanFormatError,
        3,
        [
            "both prompt and action",
        ],
    ),
    (
        "digraph p {\n s [shape=Mdiamond]\n t [required=maybe] }",
        PlanFormatError,
        3,
        [
            "true or false",
        ],
    ),
    (
        "digraph p {\n s [shape=Mdiamond]\n s -> t\n [condition=sometimes] }",
        PlanFormatError,
        4,
        [
            "edge s -> t, field 'condition'",
            "unknown edge condition 'sometimes'",
        ],
    ),
    (
        'digraph p {\n s [shape=Mdiamond]\n s -> t [when="data.x >"] }',
        PlanFormatError,
        3,
        [
            "field 'when'",
            "column 9",
        ],
    ),
    (
        'digraph p {\n s [shape=Mdiamond]\n s -> t [condition="outcome=partial"] }',
        PlanFormatError,
        3,
        ["outcome clause"],
    ),
    (
        'digraph p {\n s [shape=Mdiamond]\n s -> t [condition="outcome=success || x"] }',
        PlanFormatError,
        3,
        ["outcome clause"],
    ),
    (
        'digraph p {\n s [shape=Mdiamond]\n s -> t [condition="outcome=fail && on_fail"] }',
        PlanFormatError,
        3,
        ["outcome twice"],
    ),
    (
        'digraph p {\n s [shape=Mdiamond]\n s -> t [condition="a &&  && b"] }',
        PlanFormatError,
        3,
        ["empty clause"],
    ),
    (
        'digraph p {\n s [shape=Mdiamond]\n s -> t [condition="on_fail && a", when=b] }',
        PlanFormatError,
        3,
        ["'when' is set too"],
    ),
    (
        "digraph p {\n s [shape=Mdiamond]\n s -> t [weight=heavy] }",
        PlanFormatError,
        3,
        [
            "must be a number",
        ],
    ),
    (
        "digraph p {\n s [shape=Mdiamond]\n stale_after_turns=0 }",
        PlanFormatError,
        3,
        [
            "field 'stale_after_turns'",
        ],
    ),
    (
        "digraph p {\n s [shape=Mdiamond]\n match_mode=fuzzy }",
        PlanFormatError,
        3,
        [
            "field 'match_mode'",
            "'fuzzy'",
        ],
    ),
    (
        "digraph p {\n default_max_retry=1\n default_max_retries=2 }",
        PlanFormatError,
        3,
        [
            "disagree",
        ],
    ),
    ('digraph p {\n triggers="[1, 2]" }', PlanFormatError, 2, ["list of strings"]),
    ('digraph p {\n id="" }', PlanFormatError, 2, ["plan id is empty"]),
]


@pytest.mark.parametrize(("text", "kind", "line", "fragments"), BAD, ids=lambda x: None)
def test_refusals_name_the_file_line_and_place(text, kind, line, fragments):
    with pytest.raises(kind) as info:
        parse(text, file="bad.dot")
    err = info.value
    assert err.file == "bad.dot" and err.line == line
    message = str(err)
    assert message.startswith("bad.dot" if line is None else f"bad.dot:{line}:")
    for fragment in fragments:
        assert fragment in message


def test_non_text_is_refused():
    with pytest.raises(PlanSyntaxError, match="must be a str"):
        parse_dot(b"digraph p {}")  # type: ignore[arg-type]
