"""waygraph beside an org kernel: when plans may start, the mirror, the SALUTE report.

- **When a plan may start.** An org dispatcher writes this message's
  allow-list (``_org_htn_allowed_plans``) in some hook, and a belief-state
  tracker its domain. A plan that would start at one of waygraph's hooks
  before any of them has run for the message waits (:func:`may_start`): Agent-Zero
  runs a hook point's files from every folder in name order, so the ones
  before waygraph's hook have run; the others have run once an iteration has
  gone round since the message was first seen.
- **The mirror** (:func:`htn_state`): ``agent._htn_state`` in document 003's
  shapes: ``total_nodes`` counts every node, ``path`` repeats a retried node,
  the current node's ``visited`` outcome is ``pending`` while it is on a
  later attempt; an escalated run stays (``status: "escalated"``, its
  ``reason`` and ``pace_level``) until the next plan starts.
- **SALUTE** (:func:`emit_salute`): on escalation, the org kernel's own
  emitter reports at once. The contract is the Exocortex org dispatcher's: a
  module-level ``_emit_salute(agent, role, org, loop_data)`` in an extension
  file of the tree, called while the kernel is active on the agent
  (``agent._org_active`` and ``agent._org_active_role`` set). Absent, or
  failing, it is skipped (a failure is one warning); the hook goes on.

Example:
    >>> htn_state({"status": "completed"}, None) is None
    True
"""

from __future__ import annotations

import importlib.util
import itertools
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from waygraph.integrations.agent_zero import neighbours
from waygraph.model import Plan

__all__ = ["INJECT", "SELECT", "emit_salute", "htn_state", "may_start"]

log = logging.getLogger("waygraph.agent_zero")

#: Where waygraph's two plan-starting hooks run: (hook point index, file name).
INJECT = (neighbours.HOOK_ORDER.index("message_loop_prompts_after"), "_80_waygraph_guidance.py")
SELECT = (neighbours.HOOK_ORDER.index(neighbours.SELECTOR_HOOK), neighbours.OWN_SELECTOR)

#: In ``agent.data``: (message token, last hook position, an iteration has gone round).
_WAIT_KEY = "_waygraph_waiting"
_lock = threading.Lock()
_waiting: dict[str, Any] = {}


def may_start(root: Path, agent: Any, session: str, token: Any, here: tuple[int, str]) -> bool:
    """True when every classifier has run for the message ``token`` before the hook ``here``.

    Example:
        >>> import tempfile
        >>> may_start(Path(tempfile.mkdtemp()), object(), "s", "fix it", SELECT)
        True
    """
    found = neighbours.classifiers(root)
    if not found or all(c < here for c in found):
        return True
    data = getattr(agent, "data", None)
    store: dict[str, Any] = data if isinstance(data, dict) else _waiting
    key = _WAIT_KEY if store is data else session
    with _lock:
        seen = store.get(key)
        same = (
            isinstance(seen, tuple)
            and len(seen) == 3
            and (seen[0] is token or (isinstance(token, str) and seen[0] == token))
        )
        if not same:
            store[key] = (token, here, False)
            return False
        assert isinstance(seen, tuple)
        gone_round = bool(seen[2]) or here <= seen[1]
        store[key] = (token, here, gone_round)
        return gone_round


def htn_state(record: dict[str, Any] | None, plan: Plan | None) -> dict[str, Any] | None:
    """``agent._htn_state`` for ``record``: running or escalated runs, in document 003's shapes.

    Example:
        >>> state = htn_state({"status": "running", "current_node": "fix", "attempts": 2,
        ...                    "path": ["fix"], "visited": {"fix": {"outcome": "fail"}}}, None)
        >>> state["path"], state["visited"]["fix"]["outcome"]
        (['fix', 'fix'], 'pending')
    """
    if record is None or record.get("status") not in ("running", "escalated"):
        return None
    state = dict(record)
    running = record.get("status") == "running"
    if plan is not None and record.get("mode") == "graph":
        # Every node of the graph (document 003's example: 9); a linear plan's
        # start and exit are waygraph's own, not steps.
        state["total_nodes"] = len(plan.graph.nodes)
    state["path"] = _path(record, running)
    current = record.get("current_node")
    visited = record.get("visited")
    attempts = record.get("attempts")
    if running and isinstance(visited, dict) and isinstance(attempts, int) and attempts > 1:
        visit = visited.get(current)
        if isinstance(visit, dict):
            state["visited"] = {**visited, current: {**visit, "outcome": "pending"}}
    return state


def _path(record: dict[str, Any], running: bool) -> list[Any]:
    """Every node entered, a retried node once per attempt (from the events while they
    reach back to the activation, else the record's path and the current attempts)."""
    events = record.get("events")
    if isinstance(events, list) and events and events[0].get("type") == "plan_activated":
        return [
            e.get("node") for e in events if e.get("type") in ("node_entered", "retry_triggered")
        ]
    path = list(record.get("path") or ())
    attempts = record.get("attempts")
    if running and path and isinstance(attempts, int) and attempts > 1:
        path += [path[-1]] * (attempts - 1)
    return path


# ---------------------------------------------------------------- SALUTE

_EMITTER_MARK = "def _emit_salute("
_emitters: dict[Path, tuple[int, Callable[..., Any] | None]] = {}
_module_ids = itertools.count(1)


def emit_salute(root: Path, agent: Any, loop_data: Any) -> bool:
    """Report at once through the org kernel's ``_emit_salute``; True when it was called.

    Example:
        >>> import tempfile
        >>> emit_salute(Path(tempfile.mkdtemp()), object(), None)
        False
    """
    org = getattr(agent, "_org_active", None)
    role = getattr(agent, "_org_active_role", None)
    if not org or not isinstance(role, dict):
        return False  # no org kernel active on this agent
    try:
        emitter = _emitter(root)
        if emitter is None:
            return False
        emitter(agent, role, org, loop_data)
    except Exception as exc:
        log.debug("SALUTE emitter failed", exc_info=True)
        try:
            agent.context.log.log(
                type="warning",
                content=f"[HTN] SALUTE report not sent: {type(exc).__name__}: {exc}",
            )
        except Exception:
            log.debug("agent log unavailable", exc_info=True)
        return False
    return True


def _emitter(root: Path) -> Callable[..., Any] | None:
    """The org kernel's ``_emit_salute``, loaded as Agent-Zero loads extensions (by path)."""
    for hook in neighbours.HOOK_ORDER:
        for folder in neighbours.extension_folders(root, hook):
            for path in sorted(folder.glob("*.py")):
                if "waygraph" in path.name or not path.is_file():
                    continue
                stamp = path.stat().st_mtime_ns
                with _lock:
                    known = _emitters.get(path)
                if known is not None and known[0] == stamp:
                    if known[1] is not None:
                        return known[1]
                    continue
                found = _load_emitter(path) if _EMITTER_MARK in _read(path) else None
                with _lock:
                    _emitters[path] = (stamp, found)
                if found is not None:
                    return found
    return None


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _load_emitter(path: Path) -> Callable[..., Any] | None:
    name = f"_waygraph_org_{next(_module_ids)}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    emitter = getattr(module, "_emit_salute", None)
    return emitter if callable(emitter) else None
