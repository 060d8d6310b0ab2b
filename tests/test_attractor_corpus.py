"""Real Attractor pipelines load: the specification's own examples and 114 files from the
example folders of thirteen public ports (tests/fixtures/attractor/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from waygraph.check import check_plan
from waygraph.formats.dot import read_dot
from waygraph.pipelines.lint import validate

CORPUS = Path(__file__).parent / "fixtures" / "attractor"
FILES = sorted(p for p in CORPUS.rglob("*") if p.suffix in (".dot", ".gv"))


def test_the_corpus_is_there():
    assert len(FILES) >= 100
    assert len(list((CORPUS / "spec").glob("*.dot"))) == 5


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(CORPUS)))
def test_every_public_pipeline_loads(path):
    report = read_dot(path.read_text(encoding="utf-8"), file=str(path))
    assert report.errors == (), [str(e) for e in report.errors]
    assert report.plan is not None
    # What waygraph's own checker and the specification's lint call errors are
    # the file's real faults, not reading trouble: none in these files.
    assert [p for p in check_plan(report.plan) if p.level == "error"] == []
    spec_errors = [d for d in validate(report.plan) if d.severity == "error"]
    assert all(d.rule in ("reachability", "terminal_node") for d in spec_errors), spec_errors


@pytest.mark.parametrize("path", sorted((CORPUS / "spec").glob("*.dot")), ids=lambda p: p.name)
def test_every_example_of_the_specification_runs_simulated_to_its_exit(path, tmp_path):
    from waygraph import run_pipeline
    from waygraph.pipelines.interviewers import AutoApproveInterviewer

    plan = read_dot(path.read_text(encoding="utf-8"), file=str(path)).plan
    assert plan is not None
    result = run_pipeline(
        plan, interviewer=AutoApproveInterviewer(), logs=tmp_path, sleep=lambda _s: None
    )
    assert result.status == "success", result.outcome
    assert plan.graph.nodes[result.path[-1]].type == "exit"
