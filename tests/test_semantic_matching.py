"""Matching by meaning, decided by rules (issue 40): the threshold, the margin, the domain
and allow-list rules, the modes, the embedding cache and the fallback to phrases.

A small stand-in model (words hashed into a vector) makes the similarities
known without loading a real one; tests/test_semantic_suite.py runs the real
model shipped by the ``semantic`` extra.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

np = pytest.importorskip("numpy", reason="matching by meaning needs numpy (waygraph[semantic])")

from tests.semantic_helpers import WordModel  # noqa: E402
from waygraph.errors import ConfigError  # noqa: E402
from waygraph.library import Library  # noqa: E402
from waygraph.match import Matcher, semantic  # noqa: E402
from waygraph.match._semantic_cache import CACHE_FOLDER, EmbeddingCache, cache_dir_for  # noqa: E402
from waygraph.match.selector import PlanSelector, check_matching  # noqa: E402
from waygraph.match.semantic import EMBED_CHARS, Embedder, SemanticMatcher, plan_texts  # noqa: E402
from waygraph.model import Plan  # noqa: E402
from waygraph.navigator import Navigator  # noqa: E402


def plan(pid: str, name: str, description: str, *, domains: Sequence[str] = ()) -> Plan:
    return Plan.model_validate(
        {
            "id": pid,
            "name": name,
            "description": description,
            "domains": list(domains),
            "triggers": [f"{pid} now"],
            "trigger_threshold": 1,
            "steps": [{"name": "Do it", "action": "Do the work."}],
        }
    )


def library(**meta: Any) -> Library:
    return Library(
        [
            plan("ship", "Ship a release", "Publish the package to the registry.", domains=["ops"]),
            plan("restore", "Restore a backup", "Unpack the archive into the folder."),
        ],
        meta=meta,
    )


@pytest.fixture
def model() -> WordModel:
    return WordModel()


def matcher(model: WordModel, lib: Library | None = None, **kwargs: Any) -> SemanticMatcher:
    return SemanticMatcher(lib or library(), Embedder(model, "words"), **kwargs)


def test_a_message_in_other_words_starts_the_closest_plan(model: WordModel):
    found = matcher(model).best("publish the package to the registry please")
    assert found is not None
    assert (found.plan_id, found.matched_by, found.hits) == ("ship", "semantic", ())
    assert found.similarity is not None and found.similarity >= semantic.DEFAULT_THRESHOLD
    assert found.to_dict()["matched_by"] == "semantic"


def test_below_the_threshold_nothing_starts_and_the_reason_says_so(model: WordModel):
    m = matcher(model, threshold=0.99)
    assert m.best("publish the package") is None
    top = m.match("publish the package")[0]
    assert top.plan_id == "ship" and not top.activates
    assert top.reason is not None and "below the threshold 0.99" in top.reason


def test_a_near_tie_between_two_plans_starts_neither(model: WordModel):
    # Equally close to both plans' names: no margin over the second.
    m = matcher(model, threshold=0.0, margin=0.05)
    assert m.best("ship a release or restore a backup") is None
    assert "ahead of the next plan" in (
        m.match("ship a release or restore a backup")[0].reason or ""
    )


def test_domain_and_allow_list_rules_apply_as_for_phrases(model: WordModel):
    m = matcher(model)
    message = "publish the package to the registry"
    assert m.best(message, "ops").plan_id == "ship"  # type: ignore[union-attr]
    assert m.best(message, "git") is None
    refused = next(r for r in m.match(message, "git") if r.plan_id == "ship")
    assert refused.reason == "domain 'git' not in ['ops']"
    assert m.best(message, None, ["restore"]) is None
    refused = next(r for r in m.match(message, None, ["restore"]) if r.plan_id == "ship")
    assert refused.reason == "not in the allowed plans"


def test_thresholds_are_the_librarys_and_a_bad_one_names_the_field(model: WordModel):
    m = matcher(model, library(semantic_threshold=0.9, semantic_margin=0.1))
    assert (m.threshold, m.margin) == (0.9, 0.1)
    with pytest.raises(ConfigError, match=r"_meta.semantic_threshold must be a number"):
        matcher(model, library(semantic_threshold="high"))


def test_plan_texts_are_name_description_triggers_and_first_steps():
    texts = plan_texts(library()["ship"])
    assert texts == [
        "Ship a release",
        "Publish the package to the registry.",
        "ship now",
        "Do it",
        "Do the work.",
    ]


def test_examples_are_embedded_after_the_triggers_and_start_their_plan(model: WordModel):
    ship = library()["ship"].model_copy(update={"examples": ("put version two on pypi",)})
    lib = Library([ship, library()["restore"]])
    assert plan_texts(ship)[2:4] == ["ship now", "put version two on pypi"]
    found = matcher(model, lib).best("put version two on pypi")
    assert found is not None and found.plan_id == "ship"


def test_a_plan_is_as_close_as_the_mean_of_its_two_closest_texts(model: WordModel):
    one = Plan.model_validate({"id": "one", "name": "alpha", "steps": [{"name": "alpha"}]})
    two = Plan.model_validate(
        {"id": "two", "name": "alpha beta", "examples": ["alpha gamma"], "steps": [{"name": "x"}]}
    )
    scores = dict(matcher(model, Library([one, two])).similarities("alpha"))
    # "one" has a single text ("alpha", its step repeats it) and is scored on it alone;
    # "two" is the mean of 1/sqrt(2), twice (its step "x" is farther).
    assert scores == {"one": 1.0, "two": pytest.approx(0.7071, abs=1e-4)}


def test_the_examples_field_round_trips_and_is_in_the_schema(tmp_path: Path):
    from waygraph.formats.dot import plan_to_dot
    from waygraph.formats.json_library import library_to_data, to_json
    from waygraph.formats.schema import library_schema
    from waygraph.formats.yaml_library import to_yaml
    from waygraph.library import load_library, load_text

    ship = library()["ship"].model_copy(update={"examples": ("put 2.1 on pypi", "cut a release")})
    for name, text in (
        ("a.json", to_json(library_to_data([ship]))),
        ("a.yaml", to_yaml(library_to_data([ship]))),
        ("a.dot", plan_to_dot(ship)),
    ):
        (tmp_path / name).write_text(text, encoding="utf-8")
        assert load_library(tmp_path / name)["ship"].examples == ship.examples, name
    field = library_schema()["$defs"]["PlanBody"]["properties"]["examples"]
    assert field["type"] == "array" and "meaning" in field["description"]
    with pytest.raises(Exception, match="examples"):
        load_text('{"plans": {"p": {"examples": "one", "steps": [{"name": "a"}]}}}', "json")


def test_each_starter_example_starts_its_own_plan_or_none_by_phrase():
    from waygraph.library import load_library

    starter = load_library()
    assert [p.id for p in starter if len(p.examples) < 8] == []
    # The checker's rule for it (waygraph check warns example-starts-other-plan).
    assert [str(p) for p in starter.check() if p.code == "example-starts-other-plan"] == []


def test_a_huge_message_is_cut_before_it_is_embedded(model: WordModel):
    m = matcher(model)
    model.calls.clear()
    m.best("publish " * 20_000_000)  # 160 MB of text
    assert [len(t) for t in model.calls[-1]] == [EMBED_CHARS]


def test_empty_messages_start_nothing(model: WordModel):
    assert matcher(model).match("   ") == []


# ---------------------------------------------------------------- the cache


def test_plan_embeddings_are_kept_on_disk_and_reused(model: WordModel, tmp_path: Path):
    matcher(model, cache_dir=tmp_path)
    assert len(list(tmp_path.glob("embeddings-*.npz"))) == 1
    EmbeddingCache._memory.pop("words", None)  # a new process
    model.calls.clear()
    matcher(model, cache_dir=tmp_path)
    assert model.calls == []


def test_a_changed_library_embeds_only_its_new_texts(model: WordModel, tmp_path: Path):
    matcher(model, cache_dir=tmp_path)
    EmbeddingCache._memory.pop("words", None)
    model.calls.clear()
    changed = Library([*library(), plan("lint", "Lint the code", "Run the linter.")])
    matcher(model, changed, cache_dir=tmp_path)
    assert model.calls == [["Lint the code", "Run the linter.", "lint now"]]
    assert len(list(tmp_path.glob("embeddings-*.npz"))) == 2


def test_a_changed_examples_list_is_embedded_again(model: WordModel, tmp_path: Path):
    matcher(model, cache_dir=tmp_path)
    model.calls.clear()
    ship = library()["ship"].model_copy(update={"examples": ("cut version two",)})
    m = matcher(model, Library([ship, library()["restore"]]), cache_dir=tmp_path)
    assert model.calls == [["cut version two"]]
    assert len(list(tmp_path.glob("embeddings-*.npz"))) == 2
    assert m.best("cut version two").plan_id == "ship"  # type: ignore[union-attr]


def test_a_corrupt_cache_file_is_a_miss_with_a_warning(
    model: WordModel, tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    matcher(model, cache_dir=tmp_path)
    [cached] = tmp_path.glob("embeddings-*.npz")
    cached.write_bytes(b"not a numpy file")
    EmbeddingCache._memory.pop("words", None)
    with caplog.at_level(logging.WARNING, logger="waygraph.match"):
        m = matcher(model, cache_dir=tmp_path)
    assert m.best("publish the package to the registry").plan_id == "ship"  # type: ignore[union-attr]
    assert "ignoring the embedding cache file" in caplog.text


def test_the_cache_folder_is_next_to_the_store(tmp_path: Path):
    assert cache_dir_for(f"sqlite:///{tmp_path}/w.db") == tmp_path / CACHE_FOLDER
    assert cache_dir_for(f"file://{tmp_path}/runs") == tmp_path / "runs" / CACHE_FOLDER
    assert cache_dir_for("memory://") is None
    assert cache_dir_for("postgresql://u@h/db").name == CACHE_FOLDER  # type: ignore[union-attr]


# ---------------------------------------------------------------- modes and fallback


def test_matching_must_be_one_of_the_modes():
    with pytest.raises(ConfigError, match="matching must be one of 'phrase', 'semantic', 'both'"):
        check_matching("fuzzy")
    with pytest.raises(ConfigError, match="matching must be one of"):
        Navigator(store="memory://", matching="fuzzy")


@pytest.fixture
def word_model(monkeypatch: pytest.MonkeyPatch, model: WordModel) -> WordModel:
    """Navigators load the stand-in model, as if the extra were installed."""
    monkeypatch.setattr(semantic, "check_extra", lambda purpose="": None)
    monkeypatch.setattr(semantic, "load_embedder", lambda: Embedder(model, "words"))
    return model


def test_both_tries_phrases_first_then_meaning(word_model: WordModel):
    lib = library()
    selector = PlanSelector("both")
    by_phrase = selector.best(lib, Matcher(lib), "restore now", None, None)
    assert by_phrase is not None and by_phrase.matched_by == "phrase"
    by_meaning = selector.best(lib, Matcher(lib), "unpack the archive", None, None)
    assert by_meaning is not None and (by_meaning.plan_id, by_meaning.matched_by) == (
        "restore",
        "semantic",
    )
    assert PlanSelector("phrase").best(lib, Matcher(lib), "unpack the archive", None, None) is None


def test_a_start_by_meaning_is_recorded_on_the_activation(word_model: WordModel):
    nav = Navigator(library(), store="memory://", matching="semantic")
    guidance = nav.turn("s", user_message="please unpack the archive into the folder")
    assert guidance.run is not None and guidance.run["plan_id"] == "restore"
    activated = next(e for e in guidance.events if e["type"] == "plan_activated")
    assert (
        activated["matched_by"] == "semantic"
        and activated["similarity"] >= semantic.DEFAULT_THRESHOLD
    )
    assert activated["triggers"] == []


def test_a_model_that_does_not_load_falls_back_to_phrases_with_one_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
):
    def broken() -> Embedder:
        raise ConfigError("embedding model '/nowhere' is not a folder")

    monkeypatch.setattr(semantic, "check_extra", lambda purpose="": None)
    monkeypatch.setattr(semantic, "load_embedder", broken)
    with caplog.at_level(logging.WARNING, logger="waygraph.match"):
        nav = Navigator(library(), store="memory://", matching="semantic")
        nothing = nav.turn("a", user_message="unpack the archive")
        started = nav.turn("b", user_message="restore now")
    assert nothing.error is None and nothing.run is None
    assert started.run is not None and started.run["plan_id"] == "restore"
    assert nav.selector.failure == "embedding model '/nowhere' is not a folder"
    assert caplog.text.count("matching by meaning is off") == 1


def test_hooks_pass_matching_on_and_refuse_it_with_a_shared_navigator(word_model: WordModel):
    from waygraph.hooks import Hooks

    hooks = Hooks("s", library=library(), store="memory://", matching="both")
    assert hooks.navigator is not None and hooks.navigator.matching == "both"
    assert hooks.on_user_message("unpack the archive").run["plan_id"] == "restore"  # type: ignore[index]
    with pytest.raises(ConfigError, match="matching="):
        Hooks("s", navigator=Navigator(store="memory://"), matching="both")


def test_the_phrase_default_loads_no_model_and_no_numpy():
    import subprocess
    import sys

    code = (
        "import sys, waygraph\n"
        "nav = waygraph.Navigator(store='memory://')\n"
        "nav.turn('s', user_message='the nightly container image will not build')\n"
        "print(sorted(m for m in ('numpy', 'torch', 'sentence_transformers') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "[]"
