"""What one Agent-Zero model iteration costs the installed hooks: one load, one commit, one render.

The hooks are called as Agent-Zero's message loop calls them (the stand-in of
tests/design_examples): ``tool_execute_before`` and ``tool_execute_after``
with a terminal command's result, then the next prompt's
``message_loop_prompts_after`` and ``before_main_llm_call``. The Navigator's
store and the render functions are wrapped to count what the iteration does:
a *load* is the turn's own read of the run (from the Navigator's memory or
the store) or any other read of a run record from the store; a *commit* is
one store transaction; a *render* is one guidance text built. The guidance
the model sees and the mirrored run must still be those of a fresh read.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.design_examples.agent_zero_standin import EXTRAS_KEY, AgentZero, Response
from waygraph import render
from waygraph.integrations.agent_zero import runtime, setups
from waygraph.integrations.agent_zero.runtime import EXIT_MARKER
from waygraph.navigator import Navigator

LIBRARY = """\
plans:
  chain:
    name: Chain
    triggers: [run the chain]
    trigger_threshold: 1
    steps:
      - {name: Build, action: Run the build, verify: {type: exit_code_zero}}
      - {name: Test, action: Run the tests, verify: {type: exit_code_zero}}
      - {name: Lint, action: Run the linter, verify: {type: exit_code_zero}}
      - {name: Ship, action: Tag the release, verify: {type: exit_code_zero}}
"""


@pytest.fixture(autouse=True)
def _fresh_runtime():
    runtime.reset()
    yield
    runtime.reset()


@pytest.fixture
def a0(tmp_path: Path) -> AgentZero:
    library = tmp_path / "plans.yaml"
    library.write_text(LIBRARY, encoding="utf-8")
    return AgentZero(tmp_path, library)


class Counts:
    """Wraps one Navigator's store and the render functions; counts per kind."""

    def __init__(self, nav: Navigator, monkeypatch: pytest.MonkeyPatch) -> None:
        self.seen: Counter[str] = Counter()
        self._in_load = False
        self._rendering = False
        store = nav.store
        load, get, commit_all = nav._load, store.get, store.commit_all

        def counted_load(session: str) -> Any:
            self.seen["load"] += 1
            self._in_load = True
            try:
                return load(session)
            finally:
                self._in_load = False

        def counted_get(key: str) -> Any:
            if not self._in_load and not key.startswith("plan:"):
                self.seen["load"] += 1  # a record read outside the turn's own load
            return get(key)

        def counted_commit(writes: Any) -> Any:
            self.seen["commit"] += 1
            return commit_all(writes)

        monkeypatch.setattr(nav, "_load", counted_load)
        monkeypatch.setattr(store, "get", counted_get)
        monkeypatch.setattr(store, "commit_all", counted_commit)
        for name in ("context", "finished_message"):
            original = getattr(render, name)

            def counted_render(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
                if self._rendering:  # one text: a finished run's context is its end message
                    return _original(*args, **kwargs)
                self.seen["render"] += 1
                self._rendering = True
                try:
                    return _original(*args, **kwargs)
                finally:
                    self._rendering = False

            monkeypatch.setattr(render, name, counted_render)

    def take(self) -> dict[str, int]:
        seen = dict(self.seen)
        self.seen.clear()
        return seen


def navigator_of(a0: AgentZero) -> Navigator:
    setup = setups.setup_for(Path(a0.verifier))
    return setup.navigator


def tool_iteration(a0: AgentZero, exit_code: int = 0) -> str | None:
    """A terminal command's result, then the next prompt: the text the model sees."""
    args = {"runtime": "terminal", "session": 0, "code": "make check"}
    runtime.prepare_tool_call(
        a0.extension,
        a0.verifier.replace("tool_execute_after", "tool_execute_before"),
        {"tool_args": args, "tool_name": "code_execution_tool"},
    )
    assert args["code"].endswith(f'echo "{EXIT_MARKER}=$?"')
    runtime.verify_tool_result(
        a0.extension,
        a0.verifier,
        {
            "response": Response(f"make check\nall good\n{EXIT_MARKER}={exit_code}\n"),
            "tool_name": "code_execution_tool",
        },
    )
    return a0.iteration()


def test_an_iteration_with_a_tool_result_is_one_load_one_commit_one_render(
    a0: AgentZero, monkeypatch: pytest.MonkeyPatch
):
    a0.user("please run the chain")
    assert "Build << CURRENT" in (a0.iteration() or "")
    nav = navigator_of(a0)
    counts = Counts(nav, monkeypatch)
    for current in ("Test", "Lint"):
        text = tool_iteration(a0)
        assert counts.take() == {"load": 1, "commit": 1, "render": 1}
        # What the model sees and what the supervisor reads are what the store holds.
        session = "agent-zero:chat:0"
        assert text is not None and f"{current} << CURRENT" in text
        assert text == nav.context(session)
        assert a0.htn_state() == nav.state(session)
        counts.take()


def test_a_failed_result_and_a_restarted_process_cost_the_same(
    a0: AgentZero, monkeypatch: pytest.MonkeyPatch
):
    a0.user("please run the chain")
    a0.iteration()
    # A new process: the Navigator has nothing in memory, the turn reads the store once.
    runtime.reset()
    counts = Counts(navigator_of(a0), monkeypatch)
    text = tool_iteration(a0, exit_code=2)
    assert counts.take() == {"load": 1, "commit": 1, "render": 1}
    assert text is not None and "Build << CURRENT" in text
    assert a0.htn_state()["current_node"] == a0.htn_state()["path"][-1]


def test_the_iteration_that_completes_the_plan_says_so_without_reading_back(
    a0: AgentZero, monkeypatch: pytest.MonkeyPatch
):
    a0.user("please run the chain")
    a0.iteration()
    for _ in range(3):
        tool_iteration(a0)
    counts = Counts(navigator_of(a0), monkeypatch)
    runtime.verify_tool_result(
        a0.extension,
        a0.verifier,
        {"response": Response(f"tagged\n{EXIT_MARKER}=0\n"), "tool_name": "code_execution_tool"},
    )
    assert counts.take() == {"load": 1, "commit": 1, "render": 1}
    extras = a0.agent.loop_data.extras_temporary if a0.agent.loop_data else {}
    assert "completed" in extras[EXTRAS_KEY].lower()
    assert a0.htn_state() is None
