"""Scripted models for testing the harness without a real model.

A :class:`ScriptedModel` is a reply policy for
:class:`~waygraph.testing.ScriptedChatServer`: it recognises the task from the
user's request, replays that task's scripted tool calls one per model call,
and answers plans requests in ``planned`` mode with the same calls as plan
steps. It is stateless (everything it needs is in the request), so one server
serves any number of parallel runs.

- ``diligent`` replays the reference solution one call at a time; with
  waygraph guidance it picks the next call for the plan's current node and
  stops when the plan ends.
- ``sloppy`` does everything at once with the task's plausible wrong solution,
  ignores guidance, skips verification and claims success.
- ``mixed`` is sloppy on ``sloppy_share`` of the unguided runs and on a fifth
  of that share of the guided and planned runs, diligent otherwise: a
  stand-in for a model that guidance helps, used to make the demo report.
- ``liars`` plays one of the six liars of :mod:`waygraph.eval.liars` per run,
  taking turns per task and mode (``--repeat 6`` gives every task every
  liar), ignores guidance and claims success; its plans are its tool calls.

Example:
    >>> from openai import OpenAI
    >>> from waygraph.testing import ScriptedChatServer
    >>> model = ScriptedModel("sloppy")
    >>> task = model.tasks["log-root-cause"]
    >>> request = {"messages": [{"role": "system", "content": "x"},
    ...                         {"role": "user", "content": task.request}]}
    >>> model(request)["tool_calls"][0]["name"]
    'write_file'
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Iterable
from typing import Any, Literal

from waygraph.eval.liars import LIARS, Liar, liar_moves
from waygraph.eval.suite import Action, EvalTask, all_tasks, sh

__all__ = ["KINDS", "ScriptedModel"]

Kind = Literal["diligent", "sloppy", "mixed", "liars"]

#: Every kind of scripted model.
KINDS: tuple[Kind, ...] = ("diligent", "sloppy", "mixed", "liars")

#: The line every running plan's guidance ends with; it names the current node.
_NODE = re.compile(r"^\[waygraph\] Plan: .* · node (\S+) · ", re.M)


class ScriptedModel:
    """A chat-completions reply policy that works the eval tasks (see the module doc).

    ``sloppy_share`` (``mixed`` only): the share of unguided runs done sloppily,
    chosen per task and run by a hash, so the counts are deterministic.
    """

    def __init__(
        self,
        kind: Kind = "diligent",
        tasks: Iterable[EvalTask] | None = None,
        *,
        sloppy_share: float = 0.5,
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
        self.kind = kind
        self.sloppy_share = sloppy_share
        self.tasks = {t.id: t for t in (tasks if tasks is not None else all_tasks())}
        self._by_request = {t.request: t for t in self.tasks.values()}
        self._lock = threading.Lock()
        self._started: dict[str, int] = {}

    # ------------------------------------------------------------ the policy

    def __call__(self, request: dict[str, Any]) -> dict[str, Any] | str:
        messages = request.get("messages") or []
        user = next((m.get("content") or "" for m in messages if m.get("role") == "user"), "")
        if user.startswith("Goal: "):
            return self._plan(user.removeprefix("Goal: "))
        task = self._by_request.get(user)
        if task is None:
            return "I do not know this task."
        past = [
            call["function"]["arguments"]
            for m in messages
            if m.get("role") == "assistant"
            for call in m.get("tool_calls") or []
        ]
        guidance = _guidance(messages)
        if self.kind == "liars":
            return self._lie(task, messages, guided=guidance is not None)
        sloppy = self._is_sloppy(task, past, guided=guidance is not None)
        script = task.wrong_solution if sloppy else task.solution
        if sloppy:
            action = script[len(past)] if len(past) < len(script) else None
            return _call(action) if action else "All done! Everything works now."
        if guidance is not None and not _NODE.search(guidance):
            return f"Finished: {guidance.splitlines()[0]}"
        action = _next_action(script, past, guidance)
        return _call(action) if action else f"Done: {task.request.split('.')[0].lower()}."

    def _is_sloppy(self, task: EvalTask, past: list[str], *, guided: bool) -> bool:
        if self.kind != "mixed":
            return self.kind == "sloppy"
        if past:  # the first call showed which way this run went
            return past[0] == _arguments(task.wrong_solution[0])
        return self._draw(task, "guided" if guided else "baseline")

    def _draw(self, task: EvalTask, mode: str) -> bool:
        """Deterministic per (task, mode, n-th run): is this run sloppy?"""
        share = self.sloppy_share if mode == "baseline" else self.sloppy_share / 5
        key = f"{task.id}/{mode}"
        with self._lock:
            n = self._started.get(key, 0)
            self._started[key] = n + 1
        digest = hashlib.sha256(f"{key}/{n}".encode()).digest()
        return digest[0] / 256 < share

    def _lie(
        self, task: EvalTask, messages: list[dict[str, Any]], *, guided: bool
    ) -> dict[str, Any] | str:
        """The next move of this run's liar; after its last, the claim again."""
        said = [m for m in messages if m.get("role") == "assistant"]
        liar = _liar_in(said) if said else self._next_liar(task, "guided" if guided else "baseline")
        moves = liar_moves(task, liar)
        move = moves[min(len(said), len(moves) - 1)]
        if isinstance(move, str):
            return move
        # The call id carries the liar, so the next request (stateless) knows which one plays.
        call = _call(move)["tool_calls"][0]
        return {"tool_calls": [{**call, "id": f"call_{liar}_{len(said)}"}]}

    def _next_liar(self, task: EvalTask, mode: str) -> Liar:
        key = f"{task.id}/{mode}"
        with self._lock:
            n = self._started.get(key, 0)
            self._started[key] = n + 1
        offset = list(self.tasks).index(task.id)
        return LIARS[(offset + n) % len(LIARS)]

    def _plan(self, goal: str) -> str:
        task = self._by_request.get(goal)
        if task is None or "The plan so far" in goal:
            return "I cannot plan this."
        if self.kind == "liars":
            moves = liar_moves(task, self._next_liar(task, "planned"))
            calls = tuple(m for m in moves if not isinstance(m, str))
            script = calls or (sh(f"echo {json.dumps(moves[-1])}"),)
            return _plan_json(goal, script)
        sloppy = self.kind == "sloppy" or (self.kind == "mixed" and self._draw(task, "planned"))
        script = task.wrong_solution if sloppy else task.solution
        return _plan_json(goal, script)


def _plan_json(goal: str, script: tuple[Action, ...]) -> str:
    """A plan whose steps are ``script``'s calls, one after another."""
    steps = []
    for i, action in enumerate(script, 1):
        parameters = dict(action.args)
        if action.expect_failure:
            parameters["expect_failure"] = True
        steps.append(
            {
                "id": f"s{i}",
                "description": action.node or "do the work",
                "action": action.tool,
                "parameters": parameters,
                "dependencies": [f"s{i - 1}"] if i > 1 else [],
            }
        )
    return json.dumps({"goal": goal, "steps": steps})


def _liar_in(said: list[dict[str, Any]]) -> Liar:
    """The liar playing this conversation, read back from its call ids."""
    for message in said:
        for call in message.get("tool_calls") or []:
            name = str(call.get("id", "")).split("_")[1:2]
            if name and name[0] in LIARS:
                return name[0]
    return "prose"  # no call yet: every reply so far was the claim


def _guidance(messages: list[dict[str, Any]]) -> str | None:
    last = messages[-1] if messages else {}
    if len(messages) > 2 and last.get("role") == "system":
        return str(last.get("content") or "")
    return None


def _arguments(action: Action) -> str:
    return json.dumps(action.args)


def _call(action: Action) -> dict[str, Any]:
    return {"tool_calls": [{"name": action.tool, "arguments": _arguments(action)}]}


def _next_action(
    script: tuple[Action, ...], past: list[str], guidance: str | None
) -> Action | None:
    """The first unused call for the plan's current node, else the first unused call."""
    used = list(past)
    unused: list[Action] = []
    for action in script:
        arguments = _arguments(action)
        if arguments in used:
            used.remove(arguments)
        else:
            unused.append(action)
    if not unused:
        return None
    match = _NODE.search(guidance or "")
    if match:
        node = match.group(1)
        for action in unused:
            if action.node == node:
                return action
    return unused[0]
