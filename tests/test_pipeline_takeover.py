"""A stored pipeline run has one owner: --resume of a run another process holds is refused
(RunHeldError, naming --takeover), --takeover continues it, and a run that stops early lets
go of it."""

from __future__ import annotations

import pytest

from tests.pipeline_helpers import plan_of
from waygraph.errors import RunHeldError
from waygraph.pipelines.checkpoint import Checkpoint
from waygraph.pipelines.outcome import Outcome
from waygraph.pipelines.record import PipelineRecords
from waygraph.pipelines.runner import run_pipeline

DOT = """digraph held { start [shape=Mdiamond]; done [shape=Msquare]
    first [prompt=a]; second [prompt=b]; start -> first -> second -> done }"""


class Counting:
    """A codergen stage that succeeds and remembers which nodes it ran."""

    def __init__(self) -> None:
        self.nodes: list[str] = []

    def execute(self, node, context, plan, logs_root):
        self.nodes.append(node.id)
        return Outcome(status="success")


def _held_run(url: str) -> tuple[PipelineRecords, Checkpoint]:
    plan = plan_of(DOT)
    records = PipelineRecords(url)
    cp = Checkpoint(
        run_id="r-held",
        plan_id=plan.id,
        current_node="first",
        next_node="second",
        completed_nodes=("start", "first"),
        context={"graph.goal": ""},
    )
    records.save(cp, plan)  # the first save claims the run for this holder
    return records, cp


def test_resuming_a_run_another_holder_keeps_is_refused_then_taken_over(tmp_path):
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    _held_run(url)
    with pytest.raises(RunHeldError, match="takeover"):
        run_pipeline(DOT, store=url, resume="r-held", logs=tmp_path / "a")
    ran = Counting()
    result = run_pipeline(
        DOT,
        store=url,
        resume="r-held",
        logs=tmp_path / "b",
        takeover=True,
        handlers={"codergen": ran},
    )
    assert result.status == "success"
    assert result.path == ("start", "first", "second", "done")
    assert ran.nodes == ["second"]  # nothing finished ran again


def test_a_run_that_stops_early_lets_go_of_it(tmp_path):
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    records, _cp = _held_run(url)
    records.release("r-held")

    class Boom:
        def execute(self, node, context, plan, logs_root):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_pipeline(
            DOT, store=url, resume="r-held", logs=tmp_path / "a", handlers={"codergen": Boom()}
        )
    # Released: another resume needs no takeover.
    ran = Counting()
    result = run_pipeline(
        DOT, store=url, resume="r-held", logs=tmp_path / "b", handlers={"codergen": ran}
    )
    assert result.status == "success" and ran.nodes == ["second"]
