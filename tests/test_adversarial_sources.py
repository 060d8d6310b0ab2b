"""Who may pass a step (issue 32): liars, a question and a loop through every driver and adapter.

The transcripts (tests/adversarial_sources.py): the printed-status liar, the
word-echoing liar at a ``manual`` gate, the fake-command liar, a model that
asks the user a question, and a model that keeps failing a step whose retry
loop goes through a diagnostic; with an honest control where the job can be
done. Each is played through the Navigator and AsyncNavigator, Hooks, the
OpenAI loop against the shipped chat server, the OpenAI Agents SDK, LangGraph
and Pydantic AI adapters (offline, scripted models), the installed
Agent-Zero hooks of both layouts and MCP over stdio, in a real workspace. For
every driver and transcript, three counts must be zero: false completions,
forged approvals and questions scolded as claims; and the person's own
message (or answer) is what passes the gate and carries the question's run on.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from tests.adversarial_drivers import (
    ANSWERING,
    DRIVERS,
    Outcome,
    drive_agent_zero,
    drive_mcp,
)
from tests.adversarial_frameworks import FRAMEWORKS
from tests.adversarial_sources import CASES, SOURCE_JOBS, SOURCES_LIBRARY, check
from tests.adversarial_transcripts import BUGFIX_PLAN, workspace
from tests.agent_zero_fake import (  # noqa: F401 (agent_zero_modules: an autouse fixture)
    agent_zero_modules,
    make_tree,
)

#: Every driver that runs in this process, the framework adapters' included.
IN_PROCESS = {**DRIVERS, **FRAMEWORKS}
#: The transcripts where the person speaks.
PERSON = [key for key, case in CASES.items() if case.waits]


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("library")
    shutil.copy(BUGFIX_PLAN, folder / "bugfix_workflow.yaml")
    (folder / "sources.yaml").write_text(SOURCES_LIBRARY)
    return folder


@pytest.mark.parametrize("driver", list(IN_PROCESS))
@pytest.mark.parametrize("key", list(CASES), ids="-".join)
def test_only_the_evidence_a_step_names_passes_it(
    driver: str, key: tuple[str, str], library: Path, tmp_path: Path
) -> None:
    case = CASES[key]
    ws = workspace(tmp_path, SOURCE_JOBS[case.job])
    outcome = IN_PROCESS[driver](SOURCE_JOBS[case.job], case.moves, ws, library)
    check(case, outcome, ws)


@pytest.mark.parametrize("driver", list(ANSWERING))
@pytest.mark.parametrize("key", PERSON, ids="-".join)
def test_the_person_may_answer_through_answer(
    driver: str, key: tuple[str, str], library: Path, tmp_path: Path
) -> None:
    case = CASES[key]
    ws = workspace(tmp_path, SOURCE_JOBS[case.job])
    outcome = ANSWERING[driver](SOURCE_JOBS[case.job], case.moves, ws, library, answers=True)
    check(case, outcome, ws)
    answered = [e for e in outcome.last.events if e["type"] == "human_answered"]
    assert [e.get("by") for e in answered] == ["the user"]


@pytest.mark.parametrize("layout", ["0.9", "1.x"])
@pytest.mark.parametrize("key", list(CASES), ids="-".join)
def test_only_the_evidence_a_step_names_passes_it_in_agent_zero(
    layout: str, key: tuple[str, str], library: Path, tmp_path: Path
) -> None:
    case = CASES[key]
    job = SOURCE_JOBS[case.job]
    tree = make_tree(tmp_path / "a0", layout)
    work = tree / "usr" / "workdir"  # Agent-Zero's default work dir
    work.mkdir(parents=True)
    ws = job.setup(work)
    check(case, drive_agent_zero(job, case.moves, ws, library, tree, layout), ws)


def test_only_the_evidence_a_step_names_passes_it_over_mcp(library: Path, tmp_path: Path) -> None:
    """Every transcript through its own ``waygraph mcp`` server, all at once."""

    async def one(key: tuple[str, str]) -> tuple[Outcome, Path]:
        case = CASES[key]
        base = tmp_path / "-".join(key)
        base.mkdir()
        ws = workspace(base, SOURCE_JOBS[case.job])
        return await drive_mcp(SOURCE_JOBS[case.job], case.moves, ws, library, base), ws

    async def every() -> list[tuple[Outcome, Path]]:
        return await asyncio.gather(*(one(key) for key in CASES))

    results = asyncio.run(asyncio.wait_for(every(), timeout=120))
    for case, (outcome, ws) in zip(CASES.values(), results, strict=True):
        check(case, outcome, ws)
