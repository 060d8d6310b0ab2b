"""examples/research_planner.py runs end to end, through each of its branches."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests._scripts import load_script
from tests.bus_contract import async_test
from waygraph.events import InProcessBus, Planner, Worker

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "research_planner.py"


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    # The example's default store is one file in the temp folder, shared by every
    # process on the machine (other checkouts, the other xdist worker): a store
    # of this module's own keeps it from reading their plans or their schema.
    store = tmp_path_factory.mktemp("research") / "plans.db"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("WAYGRAPH_DATABASE_URL", f"sqlite:///{store}")
        yield load_script(EXAMPLE, "research_planner_example")


def test_the_module_exposes_a_planner_a_worker_and_a_factory(example: ModuleType) -> None:
    assert isinstance(example.planner, Planner) and isinstance(example.worker, Worker)
    assert example.planner.goal_types == ["research.goal"]
    assert sorted(example.worker.task_types) == [
        "analysis.requested",
        "user.clarification.requested",
        "web.search.requested",
    ]


@async_test(30)
async def test_every_branch_of_the_example(example: ModuleType, tmp_path: Path) -> None:
    bus = InProcessBus()
    planner, worker = example.build(bus, f"sqlite:///{tmp_path / 'plans.db'}")
    worker.human_timeout_seconds = 0.05  # nobody answers in a test: take the default
    await planner.start()
    await worker.start()
    try:
        answers = {
            topic: await bus.ask("research.goal", {"topic": topic}, "research.done", timeout=10)
            for topic in ("graph planners", "graph", "zebras")
        }
        states = {t: list(a.data["result"]["summary"]) for t, a in answers.items()}
        assert states == {
            "graph planners": ["searching", "analyzing"],
            "graph": ["searching", "retry_search", "analyzing"],
            "zebras": ["searching", "retry_search", "ask_user", "analyzing"],
        }
        assert all(a.data["status"] == "completed" for a in answers.values())
        zebras = answers["zebras"].data["result"]["summary"]
        assert zebras["ask_user"] == {"answer": "anything recent"}
        assert zebras["analyzing"]["documents"] == 0
    finally:
        await worker.close()
        await planner.close()
        await bus.close()


def test_running_the_script_prints_the_answer(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLE), "graph planners"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={"PATH": "", "WAYGRAPH_DATABASE_URL": f"sqlite:///{tmp_path / 'p.db'}"},
    )
    assert result.returncode == 0, result.stderr
    assert '"status": "completed"' in result.stdout
    assert "State machines drive event-driven planners" in result.stdout
    assert "Traceback" not in result.stderr
