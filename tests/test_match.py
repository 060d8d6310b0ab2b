"""Trigger matching: activation rules, both modes, the normaliser, and index == scan."""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import waygraph.match as match_module
from waygraph.library import Library, load_library
from waygraph.match import (
    MAX_GAP,
    Match,
    Matcher,
    match,
    naive_match,
    normalise_word,
    phrase_words,
)
from waygraph.model import Plan

COMPAT = Path(__file__).parent / "fixtures" / "compat"
COMPAT_FILES = ["agent-zero-graph-library-v2.json", "agent-zero-linear-library-v1.json"]
BUG_MESSAGE = "I need to fix a bug in the login module"


def plan(plan_id: str, triggers: list[str], **fields: Any) -> Plan:
    return Plan.model_validate(
        {"id": plan_id, "triggers": triggers, "steps": [{"name": "Do it"}], **fields}
    )


def library(*plans: Plan, mode: str | None = None) -> Library:
    return Library(plans, meta={"match_mode": mode} if mode else None)


def ids(results: list[Match]) -> list[str]:
    return [m.plan_id for m in results]


@pytest.fixture(scope="module", params=COMPAT_FILES)
def compat(request: pytest.FixtureRequest) -> Library:
    return load_library(COMPAT / request.param, validate=False)


# ---------------------------------------------------------------- acceptance


def test_bug_message_activates_bugfix_workflow(compat: Library):
    best = Matcher(compat).best(BUG_MESSAGE, "bugfix")
    assert best == Match(
        plan_id="bugfix_workflow",
        score=2,
        hits=("fix bug",),
        domain_matched=True,
        activates=True,
        reason=None,
    )
    assert match(compat, BUG_MESSAGE, "bugfix")[0] == best


def test_weather_matches_nothing(compat: Library):
    for domain in (None, "", "bugfix"):
        assert match(compat, "What's the weather like?", domain) == []
        assert naive_match(compat, "What's the weather like?", domain) == []
        assert Matcher(compat).best("What's the weather like?", domain) is None


def test_allow_list_blocks_an_unlisted_plan(compat: Library):
    m = Matcher(compat)
    [blocked] = m.match(BUG_MESSAGE, "bugfix", ["git_merge_pr"])
    assert (blocked.plan_id, blocked.activates) == ("bugfix_workflow", False)
    assert blocked.reason == "not in the allowed plans"
    assert m.best(BUG_MESSAGE, "bugfix", ["git_merge_pr"]) is None
    # An empty list is an allow-list that lists nothing; None means no list.
    assert m.best(BUG_MESSAGE, "bugfix", []) is None
    assert m.best(BUG_MESSAGE, "bugfix", None).plan_id == "bugfix_workflow"
    assert m.best(BUG_MESSAGE, "bugfix", ("bugfix_workflow",)).plan_id == "bugfix_workflow"
    # A bare id is taken as a one-id list, not as a set of characters.
    assert m.best(BUG_MESSAGE, "bugfix", "bugfix_workflow").plan_id == "bugfix_workflow"


# ---------------------------------------------------------------- domains


def test_a_domain_not_listed_filters_the_plan(compat: Library):
    [miss] = match(compat, BUG_MESSAGE, "git_ops")
    assert not miss.activates and not miss.domain_matched
    assert miss.reason == "domain 'git_ops' not in ['bugfix']"
    assert miss.score == 1


@pytest.mark.parametrize("domain", [None, ""])
def test_no_domain_skips_the_filter_without_a_bonus(compat: Library, domain: str | None):
    [hit] = match(compat, BUG_MESSAGE, domain)
    assert (hit.plan_id, hit.activates, hit.domain_matched, hit.score) == (
        "bugfix_workflow",
        True,
        False,
        1,
    )


def test_a_plan_without_domains_admits_every_domain():
    lib = library(plan("any", ["deploy"], trigger_threshold=1))
    for domain in (None, "", "bugfix", "anything"):
        [hit] = match(lib, "deploy it", domain)
        assert hit.activates and not hit.domain_matched and hit.score == 1


def test_the_domain_bonus_outranks_library_order():
    lib = library(
        plan("first", ["deploy"], trigger_threshold=1),
        plan("second", ["deploy"], trigger_threshold=1, domains=["ops"]),
    )
    assert ids(match(lib, "deploy", "ops")) == ["second", "first"]
    assert ids(match(lib, "deploy")) == ["first", "second"]


# ---------------------------------------------------------------- threshold and score


def test_threshold_counts_trigger_hits_not_the_domain_bonus():
    lib = library(plan("ship", ["build image", "push image", "deploy"], domains=["ops"]))
    [miss] = match(lib, "build the image", "ops")
    assert (miss.activates, miss.score, miss.reason) == (False, 2, "1 of 2 trigger hits needed")
    [hit] = match(lib, "build the image and deploy", "ops")
    assert (hit.activates, hit.score, hit.hits) == (True, 3, ("build image", "deploy"))


def test_a_threshold_below_one_still_needs_a_hit():
    lib = library(plan("eager", ["deploy"], trigger_threshold=0))
    assert match(lib, "hello there") == []
    assert match(lib, "deploy")[0].activates


def test_each_trigger_counts_once():
    lib = library(plan("bug", ["fix bug", "debug"], trigger_threshold=2))
    [miss] = match(lib, "fix bug, fix bug, fix the bug again")
    assert (miss.score, miss.hits, miss.activates) == (1, ("fix bug",), False)


@pytest.mark.parametrize(
    ("mode", "triggers", "kept"),
    [
        ("phrase", ["fix bug", "Fixing bugs", "fix  bug!", "debug"], ("fix bug", "debug")),
        (
            "substring",
            ["fix bug", "FIX BUG", "fix bugs", "debug"],
            ("fix bug", "fix bugs", "debug"),
        ),
    ],
)
def test_triggers_that_test_the_same_thing_count_once(
    mode: str, triggers: list[str], kept: tuple[str, ...]
):
    lib = library(plan("bug", triggers, trigger_threshold=1), mode=mode)
    [hit] = match(lib, "please fix bugs and debug")
    assert hit.hits == kept


def test_blank_triggers_never_hit():
    # In substring mode an empty trigger would be "in" every message.
    blank = ["", "   "]
    for mode in ("phrase", "substring"):
        lib = library(plan("blank", [*blank, "?!"], trigger_threshold=1), mode=mode)
        assert match(lib, "anything   at all") == []
    # "?!" has no words, so it can only hit as a substring.
    assert match(library(plan("b", ["?!"], trigger_threshold=1)), "what ?!") == []
    lib = library(plan("b", ["?!"], trigger_threshold=1), mode="substring")
    assert match(lib, "what ?!")[0].hits == ("?!",)


# ---------------------------------------------------------------- ranking


def test_ties_break_by_library_order():
    a = plan("a", ["deploy", "release"], trigger_threshold=1)
    b = plan("b", ["release", "deploy"], trigger_threshold=1)
    assert ids(match(library(a, b), "deploy the release")) == ["a", "b"]
    assert ids(match(library(b, a), "deploy the release")) == ["b", "a"]


def test_activating_plans_come_first_then_near_misses_best_first():
    lib = library(
        plan("miss_low", ["deploy", "rollback", "canary"], trigger_threshold=3),
        plan("win_low", ["deploy"], trigger_threshold=1),
        plan("miss_high", ["deploy", "release", "canary"], trigger_threshold=3),
        plan("win_high", ["deploy", "release"], trigger_threshold=2),
        plan("silent", ["unrelated"], trigger_threshold=1),
    )
    results = Matcher(lib).match("deploy the release")
    assert ids(results) == ["win_high", "win_low", "miss_high", "miss_low"]
    assert [m.activates for m in results] == [True, True, False, False]
    assert ids(Matcher(lib).match("deploy the release", include_misses=False)) == [
        "win_high",
        "win_low",
    ]
    assert Matcher(lib).best("deploy the release").plan_id == "win_high"


def test_every_failed_rule_is_named():
    lib = library(plan("ship", ["deploy", "release"], domains=["ops"]))
    [miss] = match(lib, "deploy", "git", ["other"])
    assert miss.reason == (
        "not in the allowed plans; domain 'git' not in ['ops']; 1 of 2 trigger hits needed"
    )


def test_to_dict_is_json_ready(compat: Library):
    [hit] = match(compat, BUG_MESSAGE, "bugfix")
    assert json.loads(json.dumps(hit.to_dict())) == {
        "plan_id": "bugfix_workflow",
        "score": 2,
        "hits": ["fix bug"],
        "domain_matched": True,
        "activates": True,
        "reason": None,
    }


# ---------------------------------------------------------------- modes


@pytest.mark.parametrize(
    ("trigger", "message", "in_substring", "in_phrase"),
    [
        ("debug", "debugging the parser", True, True),
        ("fix bug", "fix the login bug", False, True),
        ("fix bug", "prefix bugs", True, False),
        ("fix bug", "I fixed two bugs", False, True),
        ("merge branch", "merging branches", False, True),
        ("stop", "it stopped", True, True),
        ("log", "login fails", True, False),
        ("Fix Bug", "FIX BUG NOW", True, True),
        ("bug fix", "fix bug", False, False),
        ("error in", "Error: in the logs", False, True),
        ("user's guide", "the users guide", False, True),
        ("log-in", "log in page", False, True),
        ("update dependencies", "updating the dependency", False, True),
    ],
)
def test_substring_and_phrase_modes(
    trigger: str, message: str, in_substring: bool, in_phrase: bool
):
    for mode, expected in (("substring", in_substring), ("phrase", in_phrase)):
        lib = library(plan("p", [trigger], trigger_threshold=1), mode=mode)
        assert bool(match(lib, message)) is expected, mode
        assert naive_match(lib, message) == match(lib, message)


@pytest.mark.parametrize("gap", range(5))
def test_phrase_gap_limit(gap: int):
    lib = library(plan("p", ["fix bug"], trigger_threshold=1))
    message = " ".join(["fix", *["word"] * gap, "bug"])
    assert bool(match(lib, message)) is (gap <= MAX_GAP)
    assert MAX_GAP == 2


def test_the_gap_applies_between_each_pair_of_trigger_words():
    lib = library(plan("p", ["find error logs"], trigger_threshold=1))
    assert match(lib, "find that odd error in these logs")
    assert not match(lib, "find that very odd error in these logs")
    # A later occurrence of the first word can start a closer match.
    assert match(lib, "find nothing here then find an error in logs")


def test_library_meta_selects_substring_mode_and_a_plan_can_override_it():
    lib = library(
        plan("lib_mode", ["fix bug"], trigger_threshold=1),
        plan("own_mode", ["fix bug"], trigger_threshold=1, match_mode="phrase"),
        mode="substring",
    )
    assert lib.match_mode == "substring"
    assert ids(match(lib, "prefix bugs")) == ["lib_mode"]
    assert ids(match(lib, "fix the bug")) == ["own_mode"]
    flipped = library(plan("p", ["fix bug"], trigger_threshold=1, match_mode="substring"))
    assert ids(match(flipped, "prefix bugs")) == ["p"]


def test_an_empty_message_matches_nothing(compat: Library):
    assert match(compat, "") == [] == naive_match(compat, "")


# ---------------------------------------------------------------- normaliser


@pytest.mark.parametrize(
    "forms",
    [
        ["fix", "fixes", "fixed", "fixing"],
        ["bug", "bugs"],
        ["debug", "debugs", "debugged", "debugging"],
        ["merge", "merges", "merged", "merging"],
        ["stop", "stops", "stopped", "stopping"],
        ["dependency", "dependencies"],
        ["copy", "copies", "copied", "copying"],
        ["branch", "branches"],
        ["pass", "passes", "passed", "passing"],
        ["install", "installs", "installed", "installing"],
        ["add", "adds", "added", "adding"],
        ["need", "needs", "needed", "needing"],
        ["user", "users", "user's", "users'", "User\u2019s"],
    ],
)
def test_inflections_share_one_key(forms: list[str]):
    assert len({normalise_word(w) for w in forms}) == 1, {w: normalise_word(w) for w in forms}


@pytest.mark.parametrize(
    "word", ["status", "class", "analysis", "bring", "string", "red", "was", "v2", "über"]
)
def test_words_that_only_look_inflected_are_left_alone(word: str):
    assert normalise_word(word) == word


@pytest.mark.parametrize(
    ("a", "b"), [("break", "broken"), ("log", "login"), ("fix", "prefix"), ("bug", "debug")]
)
def test_different_words_keep_different_keys(a: str, b: str):
    assert normalise_word(a) != normalise_word(b)


def test_phrase_words_splits_on_punctuation_and_drops_quote_marks():
    assert normalise_word("Log-In") == "log in"
    assert phrase_words("What's broken?! Fixing the users' bugs_now (v2).") == (
        "what",
        "broken",
        "fix",
        "the",
        "user",
        "bug",
        "now",
        "v2",
    )


# ---------------------------------------------------------------- the convenience cache


def test_match_builds_one_matcher_per_library(monkeypatch: pytest.MonkeyPatch):
    built: list[Library] = []

    class CountingMatcher(Matcher):
        def __init__(self, lib: Library) -> None:
            built.append(lib)
            super().__init__(lib)

    monkeypatch.setattr(match_module, "Matcher", CountingMatcher)
    monkeypatch.setattr(match_module, "_matchers", type(match_module._matchers)())
    lib = library(plan("p", ["deploy"], trigger_threshold=1))
    for _ in range(3):
        assert ids(match(lib, "deploy")) == ["p"]
    assert built == [lib]
    other = library(plan("q", ["deploy"], trigger_threshold=1))
    assert ids(match(other, "deploy")) == ["q"]
    assert built == [lib, other]
    # The cache does not keep a library alive.
    del built[:], lib, other
    gc.collect()
    assert len(match_module._matchers) == 0


# ---------------------------------------------------------------- index == scan

BASE_WORDS = ["fix", "bug", "debug", "merge", "branch", "log", "in", "error", "stop", "api"]
INFLECTED = ["fixes", "fixing", "bugs", "debugging", "merged", "branches", "login", "stopped"]
FILLER = ["the", "a", "prefix", "please", "now", "Fix", "BUG", "log-in", "error's", "x"]
SEPARATORS = [" ", " ", " ", ", ", "-", "'", "! ", ""]
DOMAINS = ["bugfix", "git", "ops"]


@st.composite
def trigger_texts(draw: st.DrawFn) -> str:
    words = draw(st.lists(st.sampled_from(BASE_WORDS + INFLECTED), min_size=1, max_size=3))
    return draw(st.sampled_from([" ", "  ", "-"])).join(words)


@st.composite
def libraries(draw: st.DrawFn) -> Library:
    plans = []
    for i in range(draw(st.integers(1, 6))):
        fields: dict[str, Any] = {
            "trigger_threshold": draw(st.integers(0, 3)),
            "domains": draw(st.lists(st.sampled_from(DOMAINS), max_size=2, unique=True)),
        }
        mode = draw(st.sampled_from([None, None, "phrase", "substring"]))
        if mode:
            fields["match_mode"] = mode
        triggers = draw(st.lists(trigger_texts() | st.sampled_from(["", " "]), max_size=5))
        plans.append(plan(f"p{i}", triggers, **fields))
    return library(*plans, mode=draw(st.sampled_from([None, "phrase", "substring"])))


@st.composite
def messages(draw: st.DrawFn, lib: Library) -> str:
    """Chunks of the library's own triggers, their words, and filler, loosely joined."""
    triggers = [t for p in lib for t in p.triggers if t.strip()] or ["fix bug"]
    trigger_words = [w for t in triggers for w in t.split()]
    chunk = st.one_of(
        st.sampled_from(triggers),
        st.sampled_from(trigger_words),
        st.sampled_from(BASE_WORDS + INFLECTED + FILLER),
    )
    parts = []
    for text in draw(st.lists(chunk, max_size=10)):
        parts += [text, draw(st.sampled_from(SEPARATORS))]
    return "".join(parts)


@settings(max_examples=250, deadline=None)
@given(
    data=st.data(),
    lib=libraries(),
    domain=st.sampled_from([None, "", *DOMAINS, "other"]),
    allowed=st.none() | st.lists(st.sampled_from(["p0", "p1", "p2", "p3", "ghost"])),
)
def test_the_index_agrees_with_the_plain_scan(
    data: st.DataObject, lib: Library, domain: str | None, allowed: list[str] | None
):
    message = data.draw(messages(lib), label="message")
    expected = naive_match(lib, message, domain, allowed)
    matcher = Matcher(lib)
    assert matcher.match(message, domain, allowed) == expected
    assert matcher.match(message, domain, allowed, include_misses=False) == [
        m for m in expected if m.activates
    ]
    assert matcher.best(message, domain, allowed) == next(
        (m for m in expected if m.activates), None
    )
