"""The 119 public Attractor pipelines, run in simulation, against the paths three ports take.

Every file runs to an end. Where waygraph takes a path none of the ports
takes, the file is listed below with the reason, which is one of waygraph's
documented rules (issue 34) or a route that depends on what a real command
printed; a change in which files differ fails here, so it is seen.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.pipeline_helpers import run
from waygraph.pipelines.outcome import Outcome

CORPUS = Path(__file__).parent / "fixtures" / "attractor"
EXPECTED: dict[str, dict[str, dict]] = json.loads((CORPUS / "expected_paths.json").read_text())

PARALLEL = "every branch runs, then the run continues once at the fan-in"
DIFFERENT = {
    "allouis__attractor/pipelines__review-core__pipeline.dot": PARALLEL,
    "gutelius__attractor/docs__examples__ch08-parallel.dot": PARALLEL,
    "robotdad__amplifier-bundle-attractor/examples__pipelines__05-parallel-fan-out.dot": PARALLEL,
    "robotdad__amplifier-bundle-attractor/examples__pipelines__practical__multi-lens-review.dot": (
        PARALLEL
    ),
    "robotdad__amplifier-bundle-attractor/examples__pipelines__practical__pr-review.dot": PARALLEL,
    "wcraigjones__attractor/conformance__05-parallel__01-fan-out-fan-in__pipeline.dot": PARALLEL,
    "wcraigjones__attractor/conformance__05-parallel__02-branch-context__pipeline.dot": PARALLEL,
    "wcraigjones__attractor/conformance__05-parallel__03-branch-failure__pipeline.dot": PARALLEL,
    "wcraigjones__attractor/conformance__05-parallel__04-branch-timeout__pipeline.dot": PARALLEL,
    "robotdad__amplifier-bundle-attractor/examples__pipelines__10-full-attractor.dot": PARALLEL,
    "robotdad__amplifier-bundle-attractor/examples__pipelines__practical__feature-build.dot": (
        "every branch runs (the ports run one); then, as in every port, the test gate loops "
        "until the step bound"
    ),
    "mnesler__attractor/examples__exercise_all_nodes.dot": (
        "its manager loop names no stack.child_dotfile, which is a FAIL"
    ),
    "wcraigjones__attractor/conformance__03-execution__20-max-visits__pipeline.dot": (
        "an endless loop: the ports raise, waygraph stops failed at its step bound"
    ),
}


class SimulatedTool:
    """Tool nodes succeed without running anything (no corpus command runs here)."""

    def execute(self, node, context, plan, logs_root):
        return Outcome(status="success", context_updates={"tool.output": ""})


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_pipeline_runs_as_a_port_does_or_as_documented(tmp_path, name):
    result = run(CORPUS / name, tmp_path, handlers={"tool": SimulatedTool()}, max_steps=200)
    paths = [tuple(port["path"]) for port in EXPECTED[name].values()]
    if name in DIFFERENT:
        assert result.path not in paths, f"{name} now runs as a port does: drop it from DIFFERENT"
        if DIFFERENT[name] == PARALLEL:
            assert len(result.path) == len(set(result.path)), "a branch ran twice"
    else:
        assert result.path in paths
    assert (tmp_path / "checkpoint.json").is_file()
