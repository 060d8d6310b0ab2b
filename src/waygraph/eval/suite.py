"""The task suite: what a task is, and the shipped tasks by id.

An :class:`EvalTask` is a user's request in plain words, a ``setup`` that builds a
small real workspace in an empty folder, a deterministic ``check`` that
inspects the result (files, git state, test results), and a step budget. Each
task also carries a reference ``solution`` and a plausible ``wrong_solution``
(scripted tool calls): the tests prove the checker passes the one and fails
the other, and the scripted models replay them.

Example:
    >>> [t.id for t in select_tasks("merge*")]
    ['merge-with-conflict']
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from waygraph.errors import ConfigError

__all__ = ["Action", "EvalTask", "TaskVerdict", "all_tasks", "get_task", "select_tasks"]


@dataclass(frozen=True)
class Action:
    """One scripted tool call: ``tool`` (``shell`` or ``write_file``) with ``args``.

    ``node`` names the shipped plan's node the call serves (a scripted model
    following guidance picks its next call by the current node);
    ``expect_failure`` marks a call whose non-zero exit is the point (running
    the failing test to see the bug), so a planned step does not fail on it.
    """

    tool: str
    args: dict[str, Any]
    node: str | None = None
    expect_failure: bool = False


def sh(command: str, node: str | None = None, *, expect_failure: bool = False) -> Action:
    """A ``shell`` action."""
    return Action("shell", {"command": command}, node, expect_failure)


def write(path: str, content: str, node: str | None = None) -> Action:
    """A ``write_file`` action."""
    return Action("write_file", {"path": path, "content": content}, node)


@dataclass(frozen=True)
class TaskVerdict:
    """A checker's answer: success, and what is wrong when it is not.

    Example:
        >>> TaskVerdict.of(["tests fail"]).success
        False
    """

    success: bool
    problems: tuple[str, ...] = ()

    @classmethod
    def of(cls, problems: Iterable[str]) -> TaskVerdict:
        """A verdict from the problems found: a success when there are none."""
        found = tuple(problems)
        return cls(success=not found, problems=found)


@dataclass(frozen=True)
class EvalTask:
    """One eval task.

    ``setup(root)`` builds the workspace inside the empty folder ``root`` and
    returns the folder the agent works in (``root`` itself, or a folder in it
    when the task needs something beside the workspace, like a git remote).
    ``check(workspace)`` returns a :class:`TaskVerdict`. ``plan`` is the id of the
    shipped plan whose domain the task covers; ``max_steps`` is the budget of
    model calls.
    """

    id: str
    plan: str
    request: str
    setup: Callable[[Path], Path]
    check: Callable[[Path], TaskVerdict]
    solution: tuple[Action, ...]
    wrong_solution: tuple[Action, ...]
    wrong_because: str
    max_steps: int = 20
    tags: tuple[str, ...] = field(default=())


_REGISTRY: dict[str, EvalTask] = {}


def register(task: EvalTask) -> EvalTask:
    if task.id in _REGISTRY:
        raise ValueError(f"two eval tasks are named {task.id!r}")
    _REGISTRY[task.id] = task
    return task


def _load() -> None:
    # The task modules register on import; imported lazily to keep `import waygraph`
    # light, and in suite order (the order they register in), not alphabetical.
    from waygraph.eval import tasks_code, tasks_api, tasks_deps, tasks_files, tasks_git  # noqa: F401, I001


def all_tasks() -> list[EvalTask]:
    """Every shipped task, in suite order."""
    _load()
    return list(_REGISTRY.values())


def get_task(task_id: str) -> EvalTask:
    """The task ``task_id`` (:class:`ConfigError` naming the known ids when absent)."""
    _load()
    try:
        return _REGISTRY[task_id]
    except KeyError:
        known = ", ".join(_REGISTRY)
        raise ConfigError(f"no eval task {task_id!r}; tasks: {known}") from None


def select_tasks(pattern: str | None = None) -> list[EvalTask]:
    """Tasks whose id matches ``pattern``: comma-separated shell globs (``git-*,fix-*``)
    or plain substrings; every task when None or empty.

    Raises :class:`ConfigError` when nothing matches.
    """
    tasks = all_tasks()
    if not pattern:
        return tasks
    parts = [p.strip() for p in pattern.split(",") if p.strip()]

    def hit(task: EvalTask) -> bool:
        for part in parts:
            if any(c in part for c in "*?[") and fnmatch.fnmatchcase(task.id, part):
                return True
            if part in task.id:
                return True
        return False

    chosen = [t for t in tasks if hit(t)]
    if not chosen:
        known = ", ".join(t.id for t in tasks)
        raise ConfigError(f"--tasks {pattern!r} matches no task; tasks: {known}")
    return chosen
