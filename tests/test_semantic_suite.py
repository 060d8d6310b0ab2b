"""Matching by meaning with the real model (issue 40): the paraphrase suite, the CLI and
a model that does not load.

Needs the ``semantic`` extra (``make test`` installs it); without it every
test here is skipped with the reason. The model is loaded once for the
module, and the tests share one xdist worker so it is loaded once per run.
The figures the floors below come from are in docs/matching.md.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from waygraph.errors import MissingExtra
from waygraph.library import Library, load_library
from waygraph.match import Matcher
from waygraph.match._words import phrase_words

pytestmark = [pytest.mark.xdist_group("semantic")]

DATA = Path(__file__).parent / "data"
#: The test set (never tuned on) and the development set (examples, thresholds and
#: scoring were chosen on it); docs/matching.md gives the method and the figures.
SETS = {"test": DATA / "paraphrases.yaml", "dev": DATA / "paraphrases_dev.yaml"}
#: Recall and false activations each set must keep, a little under what was measured
#: (test: semantic 88%, both 90%, 1 of 30 off-topic; dev: 93%, 95%, 1 of 30).
FLOORS = {
    "test": {"semantic": 0.85, "both": 0.88},
    "dev": {"semantic": 0.90, "both": 0.92},
}
FALSE_ACTIVATIONS = 1


def suite(name: str = "test") -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(SETS[name].read_text(encoding="utf-8"))
    return data


def off_topic(name: str = "test") -> list[str]:
    return list(suite(name)["off_topic"])


def jobs(name: str = "test") -> list[tuple[str, str, bool]]:
    return [
        (entry["message"], plan_id, bool(entry.get("no_trigger_word")))
        for plan_id, entries in suite(name)["jobs"].items()
        for entry in entries
    ]


@pytest.fixture(scope="module")
def library() -> Library:
    return load_library()


@pytest.fixture(scope="module")
def matcher(library: Library) -> Any:
    from waygraph.match.semantic import SemanticMatcher, check_extra, load_embedder

    try:
        check_extra()
    except MissingExtra as exc:
        pytest.skip(f"matching by meaning needs the semantic extra: {exc}")
    return SemanticMatcher(library, load_embedder())


# ---------------------------------------------------------------- the sets themselves


@pytest.mark.parametrize("name", SETS)
def test_each_set_has_what_the_issue_asks(library: Library, name: str):
    written = jobs(name)
    assert len(written) >= 40
    assert {plan_id for _, plan_id, _ in written} == set(library.ids())
    assert len(suite(name)["off_topic"]) >= 30
    unlike = [(m, p) for m, p, no_word in written if no_word]
    assert len(unlike) * 2 >= len(written)
    for message, plan_id in unlike:
        trigger_words = {w for t in library[plan_id].triggers for w in phrase_words(t)}
        shared = trigger_words & set(phrase_words(message))
        assert not shared, f"{message!r} shares {shared} with {plan_id}'s triggers"


def test_the_sets_share_no_message_and_no_example_is_a_message_of_them(library: Library):
    test = {m.lower() for m, _, _ in jobs("test")} | {m.lower() for m in suite("test")["off_topic"]}
    dev = {m.lower() for m, _, _ in jobs("dev")} | {m.lower() for m in suite("dev")["off_topic"]}
    assert not test & dev
    examples = {e.lower() for plan in library for e in plan.examples}
    assert not examples & (test | dev)


@pytest.mark.parametrize("name", SETS)
def test_phrases_alone_miss_every_message_in_other_words(library: Library, name: str):
    phrase = Matcher(library)
    assert [m for m, _, no_word in jobs(name) if no_word and phrase.best(m) is not None] == []


# ---------------------------------------------------------------- recall


@pytest.fixture(scope="module")
def by_meaning(matcher: Any) -> dict[str, str | None]:
    """The plan each message of both sets starts by meaning alone (one batch)."""
    messages = [
        m for name in SETS for m in [*(j[0] for j in jobs(name)), *suite(name)["off_topic"]]
    ]
    found = matcher.match_many(messages)
    return {m: f[0].plan_id if f else None for m, f in zip(messages, found, strict=True)}


def outcomes(
    by_meaning: dict[str, str | None], library: Library, mode: str, messages: list[str]
) -> list[str | None]:
    """The plan each message starts in ``mode`` ("semantic" or "both"), or None."""
    phrase = Matcher(library)
    started = []
    for message in messages:
        hit = phrase.best(message) if mode == "both" else None
        started.append(hit.plan_id if hit else by_meaning[message])
    return started


@pytest.mark.parametrize("name", SETS)
@pytest.mark.parametrize("mode", ["semantic", "both"])
def test_paraphrases_start_the_right_plan(
    by_meaning: dict[str, str | None], library: Library, mode: str, name: str
):
    written = jobs(name)
    started = outcomes(by_meaning, library, mode, [m for m, _, _ in written])
    right = [s == plan_id for s, (_, plan_id, _) in zip(started, written, strict=True)]
    assert sum(right) / len(written) >= FLOORS[name][mode]
    # Meaning catches most messages phrases cannot.
    unlike = [ok for ok, (_, _, no_word) in zip(right, written, strict=True) if no_word]
    assert sum(unlike) >= 0.8 * len(unlike)


@pytest.mark.parametrize("name", SETS)
@pytest.mark.parametrize("mode", ["semantic", "both"])
def test_off_topic_messages_almost_never_start_a_plan(
    by_meaning: dict[str, str | None], library: Library, mode: str, name: str
):
    started = outcomes(by_meaning, library, mode, suite(name)["off_topic"])
    assert sum(s is not None for s in started) <= FALSE_ACTIVATIONS


def test_the_issues_examples(matcher: Any):
    found = matcher.best("the nightly container image won't build")
    assert found is not None and found.plan_id == "docker_build_deploy"
    assert matcher.best("what's the weather like in Paris tomorrow?") is None


# ---------------------------------------------------------------- through the host


def test_a_navigator_in_both_mode_starts_a_plan_by_meaning(matcher: Any):
    from waygraph import Navigator

    nav = Navigator(store="memory://", matching="both")
    guidance = nav.turn("s", user_message="the nightly container image won't build")
    assert guidance.run is not None and guidance.run["plan_id"] == "docker_build_deploy"
    activated = next(e for e in guidance.events if e["type"] == "plan_activated")
    assert activated["matched_by"] == "semantic"
    # The phrase default is unchanged: the same message starts nothing.
    phrase = Navigator(store="memory://")
    assert phrase.turn("s", user_message="the nightly container image won't build").run is None


def test_waygraph_match_semantic_explains_the_similarities(matcher: Any, tmp_path: Path):
    from waygraph.cli import app

    runner = CliRunner()
    message = "the nightly container image won't build"
    store = f"sqlite:///{tmp_path}/w.db"
    plain = runner.invoke(app, ["match", message, "--store", store])
    assert plain.exit_code == 0 and "No plan activates" in plain.output
    shown = runner.invoke(
        app, ["match", message, "--semantic", "--explain", "--store", store], env={"COLUMNS": "200"}
    )
    assert shown.exit_code == 0, shown.output
    assert "docker_build_deploy activates by meaning (similarity 0." in shown.output
    assert "not the closest plan" in shown.output
    data = json.loads(
        runner.invoke(app, ["match", message, "--matching", "semantic", "--json"]).output
    )
    assert (data["activates"], data["matched_by"]) == ("docker_build_deploy", "semantic")
    assert data["matches"][0]["similarity"] > 0.3
    # The plan embeddings were kept next to the store.
    assert list((tmp_path / "waygraph-embeddings").glob("embeddings-*.npz"))


@pytest.fixture
def broken_model(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{not json", encoding="utf-8")
    old = os.environ.get("WAYGRAPH_EMBEDDING_MODEL")
    os.environ["WAYGRAPH_EMBEDDING_MODEL"] = str(folder)
    yield folder
    if old is None:
        os.environ.pop("WAYGRAPH_EMBEDDING_MODEL", None)
    else:
        os.environ["WAYGRAPH_EMBEDDING_MODEL"] = old


def test_a_model_that_does_not_load_warns_and_matches_by_phrase(
    matcher: Any, broken_model: Path, caplog: pytest.LogCaptureFixture
):
    from waygraph import Navigator

    with caplog.at_level(logging.WARNING, logger="waygraph.match"):
        nav = Navigator(store="memory://", matching="semantic")
        other_words = nav.turn("a", user_message="the nightly container image won't build")
        by_phrase = nav.turn("b", user_message="I need to fix a bug in the login module")
    assert other_words.run is None and other_words.error is None
    assert by_phrase.run is not None and by_phrase.run["plan_id"] == "bugfix_workflow"
    assert str(broken_model) in (nav.selector.failure or "")
    assert "matching by meaning is off" in caplog.text


BLOCKING_MAIN = """
import runpy, sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "sentence_transformers":
            raise ImportError(f"No module named {name!r}")
sys.meta_path.insert(0, Block())
sys.argv[0] = "waygraph"
runpy.run_module("waygraph", run_name="__main__", alter_sys=True)
"""


@pytest.mark.parametrize(
    "args",
    [
        ["match", "ship it", "--semantic"],
        ["match", "ship it", "--matching", "both"],
        ["mcp", "--matching", "semantic", "--store", "memory://"],
    ],
)
def test_without_the_extra_a_semantic_mode_is_one_line_and_exit_2(args: list[str], tmp_path: Path):
    done = subprocess.run(
        [sys.executable, "-c", BLOCKING_MAIN, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**os.environ, "HOME": str(tmp_path), "COLUMNS": "200"},
    )
    assert done.returncode == 2, done.stdout + done.stderr
    error = done.stderr.strip()
    assert "\n" not in error and "Traceback" not in error
    assert "pip install 'waygraph[semantic]'" in error
