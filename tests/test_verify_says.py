"""A check's ``says``: the plan's own words for it, shown to the model instead of the
check's terms (issue 37: small models were shown raw regular expressions)."""

from __future__ import annotations

import re

import pytest
from pydantic import ValidationError

from tests.test_guidance_compact import at_node
from waygraph import load_library, render
from waygraph.model import Verify
from waygraph.verify import Observation, check
from waygraph.verify_types import describe

COMMIT = Verify(type="regex", value=r"^\[[^\]\n]+ [0-9a-f]{7,}\]", flags="m")
SAID = COMMIT.model_copy(update={"says": "git printed the new commit's summary"})


def test_the_model_is_told_the_words_not_the_pattern():
    assert describe(COMMIT) == r"output must match /^\[[^\]\n]+ [0-9a-f]{7,}\]/m"
    assert describe(SAID) == "git printed the new commit's summary"


def test_the_words_change_nothing_that_is_judged():
    for output in ("[main 1a2b3c4] fix login", "nothing to commit"):
        seen = Observation(output=output, exit_code=0)
        assert check(SAID, seen) is check(COMMIT, seen)


def test_a_command_binding_is_still_named_beside_the_words():
    bound = SAID.model_copy(update={"command_matches": r"\bgit\s+commit\b"})
    assert (
        describe(bound)
        == r"git printed the new commit's summary, from a command matching /\bgit\s+commit\b/"
    )


def test_a_negated_check_with_words_keeps_them_whole():
    quiet = Verify(type="not", checks=(Verify(type="regex", value="x+", says="an x is printed"),))
    assert describe(quiet) == "not (an x is printed)"


@pytest.mark.parametrize("says", ["", "x" * 301])
def test_empty_or_overlong_words_are_refused_naming_the_field(says: str):
    with pytest.raises(ValidationError, match="says"):
        Verify(type="any_output", says=says)


def test_no_shipped_plan_shows_the_model_a_regular_expression():
    shown = []
    for plan in load_library():
        for node in plan.graph.nodes.values():
            if node.verify is not None and re.search(r"must (not )?match /", describe(node.verify)):
                shown.append(f"{plan.id}/{node.id}")
    assert shown == []


def test_the_full_guidance_carries_the_words():
    lib = load_library()
    plan = lib["git_merge_pr"]
    node = plan.graph.nodes["merge"]
    assert node.verify is not None and node.verify.says
    text = render.context(plan, at_node(plan, "merge"))
    assert node.verify.says in " ".join(text.split())
