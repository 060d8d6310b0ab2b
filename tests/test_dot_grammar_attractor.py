"""The DOT grammar of StrongDM's Attractor spec (section 2.2), at the statement level.

Everything here goes through ``parse_statements(tokenize(text, None), None)``:
the grammar only, before the reader turns attributes into a plan.
"""

from __future__ import annotations

import pytest

from waygraph.errors import PlanSyntaxError
from waygraph.formats._dot_statements import (
    MAX_SUBGRAPH_DEPTH,
    Attr,
    DotGraph,
    parse_statements,
    subgraph_class,
)
from waygraph.formats._dot_syntax import quote_id, tokenize


def read(text: str) -> DotGraph:
    return parse_statements(tokenize(text, None), None)


def values(attrs: dict[str, Attr]) -> dict[str, str]:
    return {k: a.value for k, a in attrs.items()}


def refused(text: str) -> PlanSyntaxError:
    with pytest.raises(PlanSyntaxError) as caught:
        read(text)
    return caught.value


def assert_refused(text: str, line: int, *fragments: str) -> None:
    error = refused(text)
    assert error.line == line, str(error)
    for fragment in fragments:
        assert fragment in str(error)


# ---------------------------------------------------------------- subgraphs


def test_the_spec_subgraph_example_scopes_defaults_and_derives_a_class():
    g = read(
        """digraph G {
    node [shape=box]
    subgraph cluster_loop {
        label = "Loop A"
        node [thread_id="loop-a", timeout="900s"]

        Plan      [label="Plan next step"]
        Implement [label="Implement", timeout="1800s"]
    }
    after
}"""
    )
    plan, implement, after = g.nodes["Plan"], g.nodes["Implement"], g.nodes["after"]
    assert values(plan.attrs) == {
        "shape": "box",
        "thread_id": "loop-a",
        "timeout": "900s",
        "label": "Plan next step",
    }
    assert values(implement.attrs)["timeout"] == "1800s"
    assert values(implement.attrs)["thread_id"] == "loop-a"
    assert plan.classes == implement.classes == ("loop-a",)
    # After '}' the graph's own defaults are back, and no class.
    assert values(after.attrs) == {"shape": "box"} and after.classes == ()
    # The subgraph's label is not the graph's.
    assert g.attrs == {}
    assert (plan.line, implement.line, after.line) == (7, 8, 10)


def test_nodes_and_edges_of_nested_subgraphs_keep_file_order():
    g = read(
        """digraph p {
  a
  subgraph one {
    b -> c
    { d; subgraph { e -> f } }
    g
  }
  h -> a
}"""
    )
    assert list(g.nodes) == ["a", "b", "c", "d", "e", "f", "g", "h"]
    assert [(e.name, e.line) for e in g.edges] == [
        ("b -> c", 4),
        ("e -> f", 5),
        ("h -> a", 8),
    ]


def test_edge_defaults_are_scoped_too():
    g = read(
        """digraph p {
  edge [weight=1]
  subgraph s { edge [weight=5, color=red]; a -> b; subgraph { edge [weight=9]; b -> c } }
  c -> d
  { x -> y }
}"""
    )
    weights = {e.name: values(e.attrs) for e in g.edges}
    assert weights == {
        "a -> b": {"weight": "5", "color": "red"},
        "b -> c": {"weight": "9", "color": "red"},
        "c -> d": {"weight": "1"},
        "x -> y": {"weight": "1"},
    }


def test_an_inner_subgraph_inherits_and_restores_node_defaults():
    g = read(
        """digraph p {
  subgraph outer {
    node [fidelity=full]
    subgraph inner { node [fidelity=compact, shape=hexagon]; a }
    b
  }
  c
}"""
    )
    assert values(g.nodes["a"].attrs) == {"fidelity": "compact", "shape": "hexagon"}
    assert values(g.nodes["b"].attrs) == {"fidelity": "full"}
    assert values(g.nodes["c"].attrs) == {}


def test_subgraph_attributes_do_not_leak_into_the_graph():
    g = read(
        """digraph p {
  goal = "ship it"
  subgraph s {
    label="Loop A"; rank=same
    graph [label="Other", style=dashed]
    a
  }
  graph [rankdir=LR]
}"""
    )
    assert values(g.attrs) == {"goal": "ship it", "rankdir": "LR"}
    assert g.attrs["goal"].line == 2 and g.attrs["rankdir"].line == 8
    # graph [label=...] inside the subgraph is its label too: the last one wins.
    assert g.nodes["a"].classes == ("other",)


def test_nested_labels_give_classes_outermost_first_without_repeats():
    g = read(
        """digraph p {
  subgraph a { label="Loop A"
    subgraph b { label="Fast Models"
      subgraph c { label="loop a"; x }
      subgraph { y }
    }
  }
  z
}"""
    )
    assert g.nodes["x"].classes == ("loop-a", "fast-models")
    assert g.nodes["y"].classes == ("loop-a", "fast-models")
    assert g.nodes["z"].classes == ()
    assert "class" not in g.nodes["x"].attrs


def test_a_label_after_the_nodes_still_names_the_subgraph():
    g = read('digraph p { subgraph s { a -> b; label="Review Gate" } }')
    assert g.nodes["a"].classes == g.nodes["b"].classes == ("review-gate",)


def test_membership_is_by_mention_but_defaults_only_at_creation():
    g = read(
        """digraph p {
  a [shape=box]
  subgraph s { label="Loop"; node [timeout=5m]; a; b }
  subgraph t { label="Other"; a }
}"""
    )
    a = g.nodes["a"]
    assert a.classes == ("loop", "other")
    assert values(a.attrs) == {"shape": "box"}  # created before the subgraph
    assert a.line == 2
    assert values(g.nodes["b"].attrs) == {"timeout": "5m"}


def test_explicit_class_attribute_is_kept_apart_from_derived_classes():
    g = read('digraph p { subgraph { label="Loop A"; n [class="code,critical"] } }')
    assert g.nodes["n"].attrs["class"].value == "code,critical"
    assert g.nodes["n"].classes == ("loop-a",)


@pytest.mark.parametrize(
    ("label", "derived"),
    [
        ("Loop A", "loop-a"),
        ("  Two  Spaces ", "--two--spaces-"),
        ("Review (fast)!", "review-fast"),
        ("UPPER_case.dot", "uppercasedot"),
        ("Café 2", "caf-2"),
        ("!!!", ""),
    ],
)
def test_subgraph_class_derivation(label, derived):
    assert subgraph_class(label) == derived


def test_a_label_that_derives_nothing_gives_no_class():
    g = read('digraph p { subgraph { label="!!!"; a } }')
    assert g.nodes["a"].classes == ()


def test_empty_and_named_subgraphs_and_semicolons():
    g = read('digraph p { subgraph {} ; subgraph "a b" { } ; {} ; { a ; } ; }')
    assert list(g.nodes) == ["a"] and g.edges == [] and g.attrs == {}


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("digraph p {\n a -> { b c } }", 2, "edges to subgraphs"),
        ("digraph p {\n a -> subgraph s { b } }", 2, "edges to subgraphs"),
        ("digraph p {\n { a b } -> c }", 2, "edges from subgraphs"),
        ("digraph p {\n subgraph s { a }\n -> c }", 3, "edges from subgraphs"),
        ("digraph p {\n { a } -- c }", 2, "edges from subgraphs"),
        ("digraph p {\n subgraph s a }", 2, "expected '{' to open the subgraph, not 'a'"),
        ("digraph p {\n subgraph node { a } }", 2, "not 'node'"),
        ("digraph p {\n subgraph s {\n a\n", 4, "the '{' on line 2 is never closed"),
        ("digraph p {\n subgraph s { a } } }", 2, "after the digraph"),
    ],
)
def test_subgraph_refusals_name_the_line(text, line, fragment):
    assert_refused(text, line, fragment)


def test_nesting_at_the_limit_is_read_and_one_more_is_refused():
    depth = MAX_SUBGRAPH_DEPTH
    g = read("digraph p {\n" + "subgraph {" * depth + "a" + "}" * depth + "}")
    assert list(g.nodes) == ["a"]
    error = refused("digraph p {\n" + "subgraph {\n" * (depth + 1) + "a" + "}" * (depth + 1) + "}")
    assert error.line == depth + 2
    assert f"nested more than {depth} deep" in str(error)


def test_hostile_deep_nesting_is_a_syntax_error_not_a_recursion_error():
    for opener in ("subgraph {\n", "{\n"):
        error = refused("digraph p {\n" + opener * 100_000)
        assert error.line == MAX_SUBGRAPH_DEPTH + 2


def test_a_two_megabyte_file_of_subgraphs_is_read_whole():
    count = 20_000
    body = "".join(
        f'subgraph s{i} {{ label="Loop {i % 7}"; node [timeout={i}s]; n{i} -> m{i} }}\n'
        for i in range(count)
    )
    text = "digraph p {\n" + body * 2 + "}"
    assert len(text) > 2_000_000
    g = read(text)
    assert len(g.nodes) == 2 * count and len(g.edges) == 2 * count
    assert g.attrs == {}
    last = g.nodes[f"n{count - 1}"]
    assert last.attrs["timeout"].value == f"{count - 1}s"
    # Mentioned again in the repeated half, inside a subgraph of the same label.
    assert last.classes == (f"loop-{(count - 1) % 7}",)
    assert g.edges[-1].line == 2 * count + 1


# ---------------------------------------------------------------- qualified keys


def test_qualified_keys_in_attribute_lists_and_declarations():
    g = read(
        """digraph p {
  stack.child_dotfile = "child.dot"
  tool_hooks.pre="make lint"
  graph [stack.child_workdir="/tmp/w", tool_hooks.post=done]
  gate [shape=hexagon,
        human.default_choice=approve]
  boss [manager.poll_interval="45s"]
  subgraph { manager.max_cycles=3; x }
}"""
    )
    assert values(g.attrs) == {
        "stack.child_dotfile": "child.dot",
        "tool_hooks.pre": "make lint",
        "stack.child_workdir": "/tmp/w",
        "tool_hooks.post": "done",
    }
    assert g.attrs["tool_hooks.pre"].line == 3
    gate = g.nodes["gate"].attrs["human.default_choice"]
    assert (gate.value, gate.line) == ("approve", 6)
    assert g.nodes["boss"].attrs["manager.poll_interval"].value == "45s"
    assert "manager.max_cycles" not in g.attrs  # the subgraph's, not the graph's


@pytest.mark.parametrize(
    ("text", "line", "fragments"),
    [
        ("digraph p {\n a.b [x=1] }", 2, ["node id 'a.b'", "'.'"]),
        ("digraph p {\n a -> b.c }", 2, ["node id 'b.c'"]),
        ("digraph p {\n a.b -> c }", 2, ["node id 'a.b'"]),
        ("digraph p {\n a [human.=1] }", 2, ["after 'human'", "human.default_choice"]),
        ("digraph p {\n a [human.1x=1] }", 2, ["after 'human'"]),
        ("digraph p {\n a [.x=1] }", 2, ["unexpected character '.'"]),
    ],
)
def test_bad_dotted_names_are_refused_by_name(text, line, fragments):
    assert_refused(text, line, *fragments)


def test_a_quoted_dotted_node_id_is_left_to_the_reader():
    g = read('digraph p { "a.b" -> c }')
    assert list(g.nodes) == ["a.b", "c"]


# ---------------------------------------------------------------- values


@pytest.mark.parametrize(
    ("written", "text"),
    [
        ("900s", "900s"),
        ("20m", "20m"),
        ("250ms", "250ms"),
        ("2h", "2h"),
        ("1d", "1d"),
        ("1.5h", "1.5h"),
        ("gpt-4.1-mini", "gpt-4.1-mini"),
        ("claude-3.5:latest", "claude-3.5:latest"),
        ("high", "high"),
        ("true", "true"),
        ("false", "false"),
        ("-1", "-1"),
        ("-3.14", "-3.14"),
        (".5", ".5"),
        ("42", "42"),
        ("LR", "LR"),
        ("a_b.c:d-e", "a_b.c:d-e"),
        ('"900s"', "900s"),
        ('"a\\"b\\nc"', 'a"b\nc'),
    ],
)
def test_bare_values_durations_and_numbers_are_text(written, text):
    g = read(f"digraph p {{\n n [v={written}]\n k={written}\n}}")
    assert g.nodes["n"].attrs["v"] == Attr(text, 2)
    assert g.attrs["k"] == Attr(text, 3)


def test_a_bare_value_ends_where_the_statement_does():
    g = read(
        "digraph p {\n timeout=900s;rankdir=LR\n a [t=20m,m=gpt-4.1][w=2]"
        "\n k = /* why */ 5m // note\n j=x# note\n}"
    )
    assert values(g.attrs) == {"timeout": "900s", "rankdir": "LR", "k": "5m", "j": "x"}
    assert values(g.nodes["a"].attrs) == {"t": "20m", "m": "gpt-4.1", "w": "2"}


def test_a_hyphen_does_not_swallow_an_arrow():
    assert_refused("digraph p {\n k=v->w }", 2, "expected a statement, not '->'")


def test_multi_line_attribute_blocks_and_strings():
    g = read(
        """digraph p {
  review [
      shape=hexagon,
      timeout=15m;
      prompt="first \\
second",
      label="two
lines"
  ]
  after
}"""
    )
    attrs = g.nodes["review"].attrs
    assert (attrs["timeout"].value, attrs["timeout"].line) == ("15m", 4)
    assert attrs["prompt"].value == "first second" and attrs["prompt"].line == 5
    assert attrs["label"].value == "two\nlines" and attrs["label"].line == 7
    assert g.nodes["after"].line == 10


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("digraph p {\n 20m }", 2, "cannot start with a digit"),
        ("digraph p {\n a [20m=1] }", 2, "cannot start with a digit"),
        ("digraph p {\n a:n -> b }", 2, "ports"),
        ("digraph p {\n a -> b:s }", 2, "ports"),
        ("digraph p {\n a [x=-abc] }", 2, "unexpected character '-'"),
        ("digraph p {\n a [label=<b>] }", 2, "HTML"),
        ('digraph p {\n a [label="x" + "y"] }', 2, "'+'"),
        ("digraph p {\n a -- b }", 2, "'--'"),
        ("strict digraph p {\n}", 1, "'strict'"),
        ("graph p {\n}", 1, "undirected"),
        ("digraph p { }\ndigraph q { }", 2, "one plan"),
        ("digraph a.b { }", 1, "'.'"),
    ],
)
def test_old_refusals_still_hold(text, line, fragment):
    assert_refused(text, line, fragment)


# ---------------------------------------------------------------- writer round trip


@pytest.mark.parametrize(
    "value", ["900s", "gpt-4.1-mini", "a.b", "x:y", "-1", "1.5", "plain", "node", "a b"]
)
def test_what_quote_id_leaves_bare_reads_back_the_same(value):
    spelled = quote_id(value)
    # The writer still quotes durations, dotted and hyphenated text.
    assert spelled.startswith('"') == (value not in ("-1", "1.5", "plain"))
    g = read(f"digraph p {{ n [v={spelled}]; k={spelled} }}")
    assert g.nodes["n"].attrs["v"].value == g.attrs["k"].value == value
