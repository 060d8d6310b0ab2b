"""Shared helpers of the pipeline runner tests: scripted backends and a quiet runner."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from waygraph.formats.dot import parse_dot
from waygraph.model import Node, Plan
from waygraph.pipelines.context import Context
from waygraph.pipelines.outcome import Outcome
from waygraph.pipelines.runner import PipelineResult, run_pipeline
from waygraph.pipelines.stages import Backoff


class Scripted:
    """A codergen backend answering each node from a script: a list of outcomes per node
    (the last one repeats), text for a plain response; records every call."""

    def __init__(self, script: Mapping[str, Iterable[Outcome | str | BaseException]] | None = None):
        self.script = {k: list(v) for k, v in (script or {}).items()}
        self.calls: list[str] = []
        self.prompts: dict[str, str] = {}
        self.seen: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def run(self, node: Node, prompt: str, context: Context) -> str | Outcome:
        with self._lock:
            self.calls.append(node.id)
            self.prompts[node.id] = prompt
            self.seen[node.id] = context.snapshot()
            steps = self.script.get(node.id)
            step = (steps.pop(0) if len(steps) > 1 else steps[0]) if steps else f"did {node.id}"
        if isinstance(step, BaseException):
            raise step
        return step


def ok(**updates: Any) -> Outcome:
    return Outcome(status="success", context_updates=updates)


def status(name: str, **fields: Any) -> Outcome:
    return Outcome(status=name, **fields)  # type: ignore[arg-type]


def plan_of(dot: str) -> Plan:
    return parse_dot(dot)


def run(dot: str | Plan, logs: Path, **options: Any) -> PipelineResult:
    """run_pipeline without waiting between retries."""
    options.setdefault("sleep", lambda seconds: None)
    options.setdefault("backoff", Backoff(jitter=False))
    return run_pipeline(dot, logs=logs, **options)


LINEAR = """digraph linear { goal="Ship it"
    start [shape=Mdiamond]; done [shape=Msquare]
    plan [prompt="Plan: $goal"]; build [label="Build it"]
    start -> plan -> build -> done }"""
