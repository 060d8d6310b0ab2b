"""Where the public ports agree on the path a simulated run takes, waygraph takes it too.

``tests/fixtures/attractor/expected_paths.json`` holds the paths three ports
(two Python, one TypeScript) took through every corpus file in simulation:
codergen stages succeed, human gates take the first choice, tool nodes are
stubbed to succeed (the files hold real shell commands). waygraph runs each
file the same way; where every port that ran it ended the same way (same
path, same status), waygraph must take that path. Runs that loop forever in
the ports (status ``error``, cut at 50 steps) are left out, as are files a
port could not run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from waygraph.formats.dot import parse_dot
from waygraph.pipelines.interviewers import AutoApproveInterviewer
from waygraph.pipelines.outcome import Outcome
from waygraph.pipelines.runner import run_pipeline

CORPUS = Path(__file__).parent / "fixtures" / "attractor"
EXPECTED: dict[str, dict[str, dict]] = json.loads(
    (CORPUS / "expected_paths.json").read_text(encoding="utf-8")
)


def _agreed() -> list[tuple[str, list[str], str]]:
    cases = []
    for name, ports in sorted(EXPECTED.items()):
        runs = list(ports.values())
        if len(runs) < 2 or any(r["status"] not in ("success", "fail") for r in runs):
            continue
        first = runs[0]
        if all(r["path"] == first["path"] and r["status"] == first["status"] for r in runs):
            cases.append((name, first["path"], first["status"]))
    return cases


AGREED = _agreed()


class _StubTool:
    """A tool node that succeeds without running its command, as the ports were run."""

    def execute(self, node, context, plan, logs_root):
        return Outcome(status="success", context_updates={"tool.output": ""})


def test_the_ports_agree_on_most_files():
    assert len(AGREED) >= 60


@pytest.mark.parametrize(("name", "path", "status"), AGREED, ids=[c[0] for c in AGREED])
def test_waygraph_takes_the_path_the_ports_agree_on(name, path, status, tmp_path):
    plan = parse_dot((CORPUS / name).read_text(encoding="utf-8"), file=name)
    result = run_pipeline(
        plan,
        interviewer=AutoApproveInterviewer(),
        handlers={"tool": _StubTool()},
        logs=tmp_path,
        sleep=lambda _seconds: None,
        validate=False,
    )
    assert list(result.path) == path
    assert result.outcome.status == ("success" if status == "success" else "fail")
