"""Agent-Zero, small: the stand-ins the Agent-Zero tests load the installed hooks into.

An ``Extension`` base class registered under each layout's module name, a
loader that does what Agent-Zero's ``load_classes_from_folder`` does (files in
name order, ``spec_from_file_location``, the alphabetically last subclass),
and plain objects for the agent, its context and log, ``LoopData`` and a tool
``Response``. :class:`FakeAgentZero` calls the hooks in the order of
Agent-Zero's message loop; :func:`make_tree` builds a small Agent-Zero folder
of either layout.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import inspect
import os
import sys
import types
from collections import OrderedDict
from pathlib import Path
from typing import Any

import pytest

from waygraph.integrations.agent_zero import LAYOUTS, runtime
from waygraph.navigator import Navigator

LIBRARY = """\
plans:
  bugfix:
    name: Bug fix
    domains: [bugfix]
    triggers: [fix bug, login bug]
    trigger_threshold: 1
    graph:
      start: start
      nodes:
        start: {type: start}
        reproduce: {type: task, action: Run the failing test, verify: {type: any_output}}
        fix: {type: task, action: Fix the code, max_retries: 1}
        test:
          type: task
          action: Run the tests
          verify: {type: output_not_contains, value: failed}
        done: {type: exit}
        stuck: {type: escalate, reason: fix attempts exhausted, pace_level: contingent}
      edges:
        - {from: start, to: reproduce}
        - {from: reproduce, to: fix, condition: on_success}
        - {from: fix, to: test, condition: on_success}
        - {from: fix, to: stuck, condition: on_exhaust}
        - {from: test, to: done, condition: on_success}
        - {from: test, to: fix, condition: on_fail}
  hotfix:
    name: Hotfix
    domains: [ops]
    triggers: [fix bug, hotfix]
    trigger_threshold: 1
    steps:
      - {name: Patch production, action: Apply the patch}
      - {name: Check health, action: Curl the health endpoint}
"""

BASE_MODULES = {"0.9": "python.helpers.extension", "1.x": "helpers.extension"}
KEY = "waygraph_plan"
HTN_KEY = "htn_active_plan"


# ---------------------------------------------------------------- stand-ins


class Extension:
    """Agent-Zero's base class, as both layouts define it."""

    def __init__(self, agent: Any, **kwargs: Any) -> None:
        self.agent = agent
        self.kwargs = kwargs

    async def execute(self, **kwargs: Any) -> Any:
        raise NotImplementedError


class Log:
    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []

    def log(self, type: str = "info", heading: str | None = None, content: str = "", **kw: Any):
        self.lines.append((type, content))

    def text(self, kind: str | None = None) -> str:
        return "\n".join(c for t, c in self.lines if kind is None or t == kind)


class Context:
    def __init__(self, context_id: str, log: Log) -> None:
        self.id = context_id
        self.log = log


class Agent:
    def __init__(self, context: Context, number: int = 0) -> None:
        self.context = context
        self.number = number
        self.data: dict[str, Any] = {}
        self.loop_data: LoopData | None = None

    def get_data(self, key: str) -> Any:
        return self.data.get(key)


class Message:
    """history.Message: ``content`` is what the user-message template produced."""

    def __init__(self, content: Any) -> None:
        self.content = content


class LoopData:
    def __init__(self, **kwargs: Any) -> None:
        self.iteration = -1
        self.system: list[str] = []
        self.user_message: Message | None = None
        self.history_output: list[dict[str, Any]] = []
        self.extras_temporary: OrderedDict[str, Any] = OrderedDict()
        self.extras_persistent: OrderedDict[str, Any] = OrderedDict()
        self.params_temporary: dict[str, Any] = {}
        self.params_persistent: dict[str, Any] = {}
        self.current_tool = None
        for key, value in kwargs.items():
            setattr(self, key, value)


class Response:
    def __init__(self, message: str, break_loop: bool = False) -> None:
        self.message = message
        self.break_loop = break_loop


@pytest.fixture(autouse=True)
def agent_zero_modules(monkeypatch: pytest.MonkeyPatch):
    """Both layouts' base-class modules, and a fresh runtime cache per test."""
    for name in ("python", "python.helpers", "helpers"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    for name in BASE_MODULES.values():
        module = types.ModuleType(name)
        module.Extension = Extension  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, name, module)
    runtime.reset()
    yield
    runtime.reset()


def load_extensions(folder: Path) -> list[type]:
    """What Agent-Zero's load_classes_from_folder does: name order, by path, last subclass."""
    classes = []
    for name in sorted(f for f in os.listdir(folder) if f.endswith(".py")):
        spec = importlib.util.spec_from_file_location(name[:-3], folder / name)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for _, cls in reversed(inspect.getmembers(module, inspect.isclass)):
            if cls is not Extension and issubclass(cls, Extension):
                classes.append(cls)
                break
    return classes


class FakeAgentZero:
    """One agent of one chat, with hooks called in the order of Agent-Zero's loop."""

    def __init__(self, root: Path, layout: str, context_id: str = "chat1", number: int = 0):
        self.root = root
        self.hooks_root = root / LAYOUTS[layout].hooks_root
        self.log = Log()
        self.agent = Agent(Context(context_id, self.log), number)
        self.history: list[dict[str, Any]] = []

    def call(self, hook: str, **kwargs: Any) -> None:
        folder = self.hooks_root / hook
        if not folder.is_dir():
            return

        async def run() -> None:
            for cls in load_extensions(folder):
                result = cls(agent=self.agent).execute(**kwargs)
                if inspect.isawaitable(result):
                    await result

        asyncio.run(run())

    def user(self, text: str) -> None:
        """A new user message starts a monologue with a fresh LoopData."""
        message = Message({"user_message": text, "attachments": []})
        self.history.append({"ai": False, "content": message.content})
        self.agent.loop_data = LoopData(user_message=message)

    def prompt(self) -> dict[str, Any]:
        """One iteration up to the model call; returns the extras the model sees."""
        loop_data = self.agent.loop_data
        assert loop_data is not None
        loop_data.iteration += 1
        self.call("message_loop_prompts_before", loop_data=loop_data)
        loop_data.history_output = list(self.history)
        self.call("message_loop_prompts_after", loop_data=loop_data)
        seen = {**loop_data.extras_persistent, **loop_data.extras_temporary}
        loop_data.extras_temporary.clear()
        self.call("before_main_llm_call", loop_data=loop_data)
        return seen

    def tool(self, output: str, name: str = "code_execution_tool") -> None:
        self.history.append({"ai": True, "content": f'{{"tool_name": "{name}"}}'})
        self.call("tool_execute_after", response=Response(output), tool_name=name)
        self.history.append({"ai": False, "content": {"tool_name": name, "tool_result": output}})


# ---------------------------------------------------------------- trees


def make_tree(root: Path, layout: str, *, bst: bool = False) -> Path:
    """A small Agent-Zero folder: a few extensions of its own, a cache, user data.

    With ``bst``, a belief-state tracker in ``before_main_llm_call`` too
    (``_11_``), which makes waygraph start plans after it.
    """
    hooks = root / LAYOUTS[layout].hooks_root
    base = BASE_MODULES[layout]
    (root / "usr").mkdir(parents=True)
    (root / "agent.py").write_text("# Agent-Zero\n")
    (root / "usr" / "settings.json").write_text('{"chat_model": "x"}\n')
    recall = hooks / "message_loop_prompts_after" / "_50_recall_memories.py"
    recall.parent.mkdir(parents=True)
    recall.write_text(
        f"from {base} import Extension\n\n\n"
        "class RecallMemories(Extension):\n"
        "    async def execute(self, loop_data=None, **kwargs):\n"
        '        loop_data.extras_persistent["memories"] = "none"\n'
    )
    cache = recall.parent / "__pycache__"
    cache.mkdir()
    (cache / "_50_recall_memories.cpython-311.pyc").write_bytes(b"\x00old cache\x00")
    tracker = hooks / "before_main_llm_call" / "_11_belief_state_tracker.py"
    tracker.parent.mkdir(parents=True)
    if not bst:
        (root / "plans").mkdir()
        (root / "plans" / "library.yaml").write_text(LIBRARY)
        return root
    # A belief-state tracker: classifies the message as the test tells it to.
    tracker.write_text(
        f"from {base} import Extension\n\n\n"
        "class BeliefStateTracker(Extension):\n"
        "    async def execute(self, loop_data=None, **kwargs):\n"
        '        domain = self.agent.data.get("next_domain")\n'
        "        if domain:\n"
        '            self.agent._bst_store = {"__bst_belief_state__": {"domain": domain}}\n'
    )
    (root / "plans").mkdir()
    (root / "plans" / "library.yaml").write_text(LIBRARY)
    return root


def snapshot(root: Path) -> dict[str, str | None]:
    """Every path under ``root`` with a hash of its bytes (None for folders)."""
    return {
        p.relative_to(root).as_posix(): (
            hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else None
        )
        for p in sorted(root.rglob("*"))
    }


def session_state(root: Path, context_id: str = "chat1", number: int = 0) -> dict | None:
    nav = Navigator(
        root / "plans" / "library.yaml", store=f"sqlite:///{root}/usr/waygraph/waygraph.db"
    )
    try:
        return nav.state(f"agent-zero:{context_id}:{number}")
    finally:
        nav.close()
