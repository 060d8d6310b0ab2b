"""`waygraph tune` proposes the library's threshold for starting plans by meaning from the
stored runs (issue 40): raised when plans started by meaning often went nowhere, lowered
when goals of a plan's kind fell just short of it; applied to the library's `_meta`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("numpy", reason="matching by meaning needs numpy (waygraph[semantic])")

from tests.semantic_helpers import WordModel
from waygraph.learning.runs import guided_runs
from waygraph.learning.samples import Sample, SampleStep
from waygraph.learning.tune import tune
from waygraph.learning.tune_apply import apply_proposals, write_library
from waygraph.learning.tune_semantic import semantic_proposals
from waygraph.library import Library, load_library
from waygraph.match import semantic
from waygraph.match.semantic import Embedder, thresholds_of
from waygraph.model import Plan
from waygraph.navigator import Navigator

GOOD = "unpack the archive"  # similarity 0.82 to the restore plan's description
OFF = "unpack the lunch box"  # 0.33: just over the default threshold


@pytest.fixture(autouse=True)
def word_model(monkeypatch: pytest.MonkeyPatch) -> WordModel:
    model = WordModel()
    monkeypatch.setattr(semantic, "check_extra", lambda purpose="": None)
    monkeypatch.setattr(semantic, "load_embedder", lambda: Embedder(model, "words"))
    # The similarities written here are of the plan's closest text alone.
    monkeypatch.setattr(semantic, "TOP_TEXTS", 1)
    return model


def library() -> Library:
    restore = Plan.model_validate(
        {
            "id": "restore",
            "name": "Restore a backup",
            "description": "Unpack the archive into the folder.",
            "triggers": ["restore now"],
            "trigger_threshold": 1,
            "steps": [{"name": "Extract files", "action": "Extract every file."}],
        }
    )
    # Its own threshold, so these tests do not follow the default.
    return Library([restore], meta={"semantic_threshold": 0.3})


def record_runs(store: str, good: int, off: int) -> None:
    """``good`` runs started by meaning that completed, ``off`` that were dropped unworked."""
    nav = Navigator(library(), store=store, matching="semantic")
    for i in range(good):
        started = nav.turn(f"good-{i}", user_message=GOOD)
        assert started.run is not None and started.run["plan_id"] == "restore"
        done = nav.turn(f"good-{i}", tool_output="unpacked 3 files", exit_code=0)
        assert done.run is not None and done.run["status"] == "completed"
    for i in range(off):
        started = nav.turn(f"off-{i}", user_message=OFF)
        assert started.run is not None
        nav.reset(f"off-{i}")
    nav.close()


def test_runs_remember_how_meaning_started_them(tmp_path: Path):
    url = f"sqlite:///{tmp_path}/w.db"
    record_runs(url, good=1, off=1)
    from waygraph.store import open_store

    with open_store(url) as store:
        facts = {f.message: f for f in guided_runs(store)}
    assert facts[GOOD].matched_by == "semantic" and facts[GOOD].similarity == pytest.approx(0.8165)
    assert facts[OFF].false_activation and facts[OFF].similarity == pytest.approx(0.3333)


def test_false_starts_by_meaning_raise_the_threshold_and_apply_to_meta(tmp_path: Path):
    url = f"sqlite:///{tmp_path}/w.db"
    record_runs(url, good=4, off=4)
    from waygraph.store import open_store

    with open_store(url) as store:
        found = tune(store, library(), min_runs=4)
    # No trigger proposal: runs started by meaning hit no trigger.
    assert [(p.id, p.current, p.proposed) for p in found] == [
        ("_meta:raise-semantic-threshold", 0.3, 0.34)
    ]
    assert found[0].evidence.counts["kept_out"] == 4
    assert found[0].evidence.counts["good_runs_lost"] == 0
    assert found[0].evidence.messages[0] == OFF
    written = write_library(apply_proposals(library(), found), tmp_path / "tuned.yaml")
    assert thresholds_of(load_library(written)) == (0.34, 0.02)


def test_a_few_false_starts_propose_nothing(tmp_path: Path):
    url = f"sqlite:///{tmp_path}/w.db"
    record_runs(url, good=8, off=1)
    from waygraph.store import open_store

    with open_store(url) as store:
        assert tune(store, library(), min_runs=4) == []


def facts(similarity: float, *, completed: bool = True) -> Any:
    from waygraph.learning.runs import RunFacts

    return RunFacts(
        run=f"r{similarity}",
        plan="restore",
        status="completed" if completed else "aborted",
        message=GOOD,
        matched_by="semantic",
        similarity=similarity,
        completed=("unpack",) if completed else (),
    )


def test_goals_of_a_plans_kind_just_short_of_it_lower_the_threshold():
    # 0.26 to the plan; their steps are the plan's words, so the runs are of its kind.
    steps = (SampleStep("Unpack the archive into the folder"), SampleStep("restore now"))
    near = [
        Sample("dag", f"d{i}", "unpack the lunch box and the drawer cabinet", steps)
        for i in range(3)
    ]
    found = semantic_proposals(library(), {"restore": [facts(0.8)] * 5}, near, 4)
    assert [(p.id, p.current, p.proposed) for p in found] == [
        ("_meta:lower-semantic-threshold", 0.3, 0.25)
    ]
    assert found[0].evidence.runs == ["dag:d0", "dag:d1", "dag:d2"]
    # Without runs started by meaning there is nothing to tune.
    assert semantic_proposals(library(), {}, near, 4) == []
    # Nor while plans started by meaning were often false.
    often_false = [facts(0.8), facts(0.4, completed=False)]
    assert semantic_proposals(library(), {"restore": often_false}, near, 4) == []
