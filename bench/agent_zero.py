"""Cost of the installed Agent-Zero hooks per model iteration vs one Navigator.turn.

Run: ``python bench/agent_zero.py`` (a table), ``--json`` (one JSON object:
figures, ratios, targets) or ``--profile`` (cProfile of the hooks' iterations
on SQLite, the top functions). Exits 1 when a target is missed.

Workload: ``waygraph install agent-zero`` into a temporary 1.x tree (a plan
library with one 12-step chain whose steps check the exit code), the
installed extension files loaded once the way Agent-Zero loads them (by
path, the last ``Extension`` subclass) and instantiated per call, as
Agent-Zero does. A user message starts the plan (an untimed iteration);
then each timed *model iteration with a tool result* is what Agent-Zero
calls, in its order, awaited inside one event loop:

1. ``tool_execute_before`` (``tool_name="code_execution_tool"``, a terminal
   command: the hook appends the exit-status marker);
2. ``tool_execute_after`` with the tool's ``Response`` (its output ends with
   the marker line the command printed, status 0): the result is verified,
   one turn of the plan;
3. ``message_loop_prompts_after`` (the next iteration's prompt: the guidance
   goes into ``loop_data.extras_temporary``);
4. ``before_main_llm_call`` (the plan selector: mirrors ``agent._htn_state``).

Against it, in the same run and interleaved iteration by iteration (the
order alternating), one ``Navigator.turn(session, tool_output=...,
exit_code=0)`` of the same plan on the same kind of store: SQLite in a
temporary file (the default store's kind, ``synchronous=NORMAL``; both sides
write the same file) and ``memory://``. The steps that keep the plan running
are timed (the last one, which completes it, is not); a figure is the median
of every timed iteration, in µs.

Target: hooks / turn at most 1.3 on each store (one load, one commit, one
render per iteration).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import importlib.util
import inspect
import io
import itertools
import json
import pstats
import statistics
import sys
import tempfile
import time
import types
import uuid
from collections import OrderedDict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from waygraph.integrations.agent_zero import install, runtime  # noqa: E402
from waygraph.integrations.agent_zero.runtime import EXIT_MARKER  # noqa: E402
from waygraph.navigator import Navigator  # noqa: E402

TARGET = 1.3
STEPS = 12
RUNS = 150
TRIGGER = "run the chain"
OUTPUT = "============ 12 passed in 0.31s ============\n"
HOOK_ORDER = (
    "tool_execute_before",
    "tool_execute_after",
    "message_loop_prompts_after",
    "before_main_llm_call",
)


def library_text(steps: int = STEPS) -> str:
    lines = [
        "plans:",
        "  chain:",
        "    name: Chain",
        f"    triggers: [{TRIGGER}]",
        "    trigger_threshold: 1",
        "    steps:",
    ]
    for i in range(steps):
        lines.append(
            f"      - {{name: step {i}, action: Run step {i}, verify: {{type: exit_code_zero}}}}"
        )
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- Agent-Zero stand-ins


class Extension:
    """Agent-Zero's base class: built with the agent, once per call."""

    def __init__(self, agent: Any, **kwargs: Any) -> None:
        self.agent = agent
        self.kwargs = kwargs

    async def execute(self, **kwargs: Any) -> Any:
        raise NotImplementedError


class Log:
    def __init__(self) -> None:
        self.lines = 0

    def log(self, type: str = "info", heading: str | None = None, content: str = "", **kw: Any):
        self.lines += 1


class Context:
    def __init__(self, context_id: str) -> None:
        self.id = context_id
        self.log = Log()


class Agent:
    def __init__(self, context_id: str) -> None:
        self.context = Context(context_id)
        self.number = 0
        self.data: dict[str, Any] = {}
        self.loop_data: LoopData | None = None

    def get_data(self, key: str) -> Any:
        return self.data.get(key)


class Message:
    def __init__(self, content: Any) -> None:
        self.content = content


class LoopData:
    def __init__(self, user_message: Message) -> None:
        self.iteration = -1
        self.user_message = user_message
        self.history_output: list[dict[str, Any]] = []
        self.extras_temporary: OrderedDict[str, Any] = OrderedDict()
        self.extras_persistent: OrderedDict[str, Any] = OrderedDict()


class Response:
    def __init__(self, message: str, break_loop: bool = False) -> None:
        self.message = message
        self.break_loop = break_loop


class Empty(Extension):
    """An extension that does nothing: what Agent-Zero's dispatch alone costs."""

    async def execute(self, **kwargs: Any) -> Any:
        return None


def register_base_class() -> None:
    """The 1.x layout's ``helpers.extension`` module, with the stand-in base class."""
    sys.modules.setdefault("helpers", types.ModuleType("helpers"))
    module = types.ModuleType("helpers.extension")
    module.Extension = Extension  # type: ignore[attr-defined]
    sys.modules["helpers.extension"] = module


def load_classes(folder: Path) -> list[type]:
    """Agent-Zero's loading: files in name order, by path, the last subclass of each."""
    classes = []
    for path in sorted(folder.glob("*.py")):
        spec = importlib.util.spec_from_file_location(path.stem, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for _, cls in reversed(inspect.getmembers(module, inspect.isclass)):
            if cls is not Extension and issubclass(cls, Extension):
                classes.append(cls)
                break
    return classes


class AgentZeroTree:
    """A 1.x tree with waygraph installed, and one agent's message loop over it."""

    def __init__(self, root: Path, store: str, *, empty: bool = False) -> None:
        self.agent = Agent("bench")
        if empty:
            self.hooks: dict[str, list[type]] = {name: [Empty] for name in HOOK_ORDER}
            return
        (root / "extensions" / "python").mkdir(parents=True)
        (root / "usr" / "workdir").mkdir(parents=True)
        library = root / "plans.yaml"
        library.write_text(library_text(), encoding="utf-8")
        install(root, layout="1.x", library=library, store=store)
        hooks = root / "extensions" / "python"
        self.hooks = {name: load_classes(hooks / name) for name in HOOK_ORDER}

    async def call(self, hook: str, **kwargs: Any) -> None:
        for cls in self.hooks[hook]:
            await cls(agent=self.agent).execute(**kwargs)

    async def start(self, context_id: str) -> None:
        """A new chat whose user message starts the plan (the first iteration's hooks)."""
        self.agent = Agent(context_id)
        loop_data = LoopData(Message({"user_message": TRIGGER, "attachments": []}))
        self.agent.loop_data = loop_data
        await self.prompt(loop_data)
        if self.hooks["tool_execute_after"] != [Empty] and not hasattr(self.agent, "_htn_state"):
            raise RuntimeError("the plan did not start")

    async def prompt(self, loop_data: LoopData) -> None:
        loop_data.iteration += 1
        await self.call("message_loop_prompts_after", loop_data=loop_data)
        loop_data.extras_temporary.clear()  # what the model saw; gone after the call
        await self.call("before_main_llm_call", loop_data=loop_data)

    async def iteration(self) -> None:
        """One model iteration with a tool result, as Agent-Zero calls the hooks."""
        loop_data = self.agent.loop_data
        assert loop_data is not None
        tool_args = {"runtime": "terminal", "session": 0, "code": "pytest -q"}
        await self.call("tool_execute_before", tool_args=tool_args, tool_name="code_execution_tool")
        response = Response(f"{tool_args['code']}\n{OUTPUT}{EXIT_MARKER}=0\n")
        await self.call("tool_execute_after", response=response, tool_name="code_execution_tool")
        await self.prompt(loop_data)


# ---------------------------------------------------------------- measuring


async def measure(root: Path, store: str, runs: int) -> dict[str, float]:
    """Median µs per iteration of the hooks and of the two turns, interleaved."""
    tree = AgentZeroTree(root, store)
    empty = AgentZeroTree(root, store, empty=True)
    nav = Navigator(root / "plans.yaml", store=store, workspace=root, strict=True)
    samples: dict[str, list[int]] = {"iteration": [], "dispatch": [], "turn": [], "turn_ids": []}
    clock = time.perf_counter_ns
    args = {"runtime": "terminal", "session": 0, "code": "pytest -q"}
    # Ids as the verify hook makes them: a random prefix per process and a counter.
    prefix, counter = f"a0-{uuid.uuid4().hex[:16]}-", itertools.count(1)
    try:
        for run in range(runs):
            gc.collect()
            await tree.start(f"chat-{run}")
            await empty.start(f"chat-{run}")
            bare, ids = f"nav-{run}", f"ids-{run}"
            nav.turn(bare, user_message=TRIGGER)
            nav.turn(ids, user_message=TRIGGER)
            for step in range(STEPS - 1):
                sides = list(samples)
                shift = (run + step) % len(sides)  # each side goes first as often
                for side in sides[shift:] + sides[:shift]:
                    start = clock()
                    if side == "iteration":
                        await tree.iteration()
                    elif side == "dispatch":
                        await empty.iteration()
                    elif side == "turn":
                        nav.turn(bare, tool_output=OUTPUT, exit_code=0)
                    else:
                        # The turn the verify hook takes: tool name, a fresh
                        # observation id (kept in the record), the call's digest.
                        nav.turn(
                            ids,
                            tool_output=OUTPUT,
                            tool_name="code_execution_tool",
                            exit_code=0,
                            observation_id=f"{prefix}{next(counter):x}",
                            tool_args=args,
                        )
                    samples[side].append(clock() - start)
            mirrored = getattr(tree.agent, "_htn_state", None)
            for record in (nav.state(bare), nav.state(ids), mirrored):
                if record is None or record["current_step"] != STEPS - 1:
                    raise RuntimeError("a side did not advance one step per iteration")
    finally:
        nav.close()
        runtime.reset()
    return {side: statistics.median(values) / 1000 for side, values in samples.items()}


def profile(root: Path, store: str, runs: int, top: int = 25) -> str:
    """cProfile of the hooks' timed iterations (only those), the top functions by own time."""
    profiler = cProfile.Profile()

    async def body() -> None:
        tree = AgentZeroTree(root, store)
        for run in range(runs):
            await tree.start(f"chat-{run}")
            for _ in range(STEPS - 1):
                profiler.enable()
                await tree.iteration()
                profiler.disable()
        runtime.reset()

    asyncio.run(body())
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=RUNS, help="plan runs per store")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--profile", action="store_true", help="cProfile the hooks on SQLite")
    args = parser.parse_args(argv)
    register_base_class()
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        if args.profile:
            print(profile(base / "profile", f"sqlite:///{base / 'profile.db'}", args.runs))
            return 0
        stores = {
            "sqlite": f"sqlite:///{base / 'runs.db'}",
            "memory": "memory://",
        }
        figures: dict[str, float] = {}
        targets = []
        for name, url in stores.items():
            medians = asyncio.run(measure(base / name, url, args.runs))
            # What waygraph's files cost: the iteration less the dispatch to empty extensions.
            medians["hooks"] = medians["iteration"] - medians["dispatch"]
            for side, value in medians.items():
                figures[f"{side}_{name}_us"] = round(value, 1)
            ratio = medians["hooks"] / medians["turn"]
            figures[f"ratio_{name}"] = round(ratio, 3)
            figures[f"ratio_gross_{name}"] = round(medians["iteration"] / medians["turn"], 3)
            figures[f"ratio_hook_turn_{name}"] = round(medians["hooks"] / medians["turn_ids"], 3)
            targets.append(
                {
                    "name": f"hooks per iteration / Navigator.turn, {name}",
                    "ratio": round(ratio, 3),
                    "needed": TARGET,
                    "met": ratio <= TARGET,
                }
            )
    met = all(t["met"] for t in targets)
    if args.json:
        print(json.dumps({"bench": "agent_zero", "figures": figures, "targets": targets}))
        return 0 if met else 1
    samples = (STEPS - 1) * args.runs
    print(f"Python {sys.version.split()[0]}; {args.runs} runs x {STEPS - 1} iterations (medians)\n")
    print(
        "| store | iteration µs | dispatch µs | hooks µs | Navigator.turn µs | the hook's turn µs "
        "| hooks / turn | iteration / turn | hooks / the hook's turn |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name in stores:
        sides = ("iteration", "dispatch", "hooks", "turn", "turn_ids")
        cells = [f"{figures[f'{side}_{name}_us']:,.1f}" for side in sides]
        ratios = [
            f"{figures[f'{r}_{name}']:.2f}x" for r in ("ratio", "ratio_gross", "ratio_hook_turn")
        ]
        print(f"| {name} | {' | '.join(cells)} | {' | '.join(ratios)} |")
    for target in targets:
        verdict = "met" if target["met"] else "**missed**"
        print(f"- {target['name']}: {target['ratio']:.2f}x, needed <= {TARGET}x: {verdict}")
    print(f"\n{samples} timed iterations per side and store.")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
