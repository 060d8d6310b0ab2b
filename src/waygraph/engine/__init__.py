"""The pure traversal engine: (plan, run, outcome) -> (new run, events).

No I/O, no clock, no globals: every function takes what it needs and returns
a new :class:`Run` (the input is never modified) plus the events it produced.
:mod:`waygraph.engine.dag` holds the rules of an executed plan (which nodes
are ready, which are skipped) over an immutable ``DagRun``, and
:mod:`waygraph.engine.events` those of an event-driven plan (routing, and
the state machine's transitions over an immutable
:class:`~waygraph.engine.event_run.EventRun`), and
:mod:`waygraph.engine.session_plan` those of a session plan the model
declares itself (document 001) over an immutable
:class:`~waygraph.engine.session_plan_run.SessionPlanRun`, as pure
functions too.
Verifications that need I/O run in the driver; the engine receives a
``judge`` callable that answers "does the latest observation satisfy this
predicate?" for the current node's ``verify`` and decision ``when`` edges.

The rules (DESIGN.md, "Engine semantics"):

- A fresh entry into a task (through ``on_success``, ``always`` or another
  node's ``on_retry``) sets its attempt count to 1. Failing verification, or
  being entered through ``on_fail``/``on_exhaust`` (a failure further on sends
  the run back to it), starts a new attempt when the count is below
  ``1 + max_retries`` (``None``: unbounded); otherwise the node is exhausted
  and takes its ``on_exhaust``/``on_fail`` edge, or the run escalates. A node
  that left through its own ``on_retry`` edge keeps counting when the run
  comes back to it, so a retry loop takes at most ``1 + max_retries`` attempts.
- Success follows ``on_success``, else ``always``. Failure with attempts left
  follows ``on_retry``, else stays on the node (``retry_triggered``).
  Exhausted follows ``on_exhaust``, else ``on_fail``, else ``always``, else
  stays (``stall``). Within one condition: higher weight, then file order.
- Decision nodes route on the latest observation at once: the first ``when``
  edge that holds, else their ``verify`` through the plain edges; without
  either, on the outcome of the result that led to them.
- A task without ``verify`` fails on a known non-zero exit status and passes
  otherwise (the judge decides; :func:`waygraph.verify.evaluate`).
- A ``human`` node (and a task with a ``manual`` check) waits for a person
  (``awaiting == "user"``, ``human_asked``): tool results there are only
  recorded; :func:`hear` applies the person's answer.
- A final model reply that asks the user something is a question, not a
  claim (``question_asked``): the run waits for the user.
- Routing through non-task nodes is bounded (15 hops); more than
  ``max_transitions`` edges ends the run as escalated; a run with more than
  ``stale_after_turns`` turns without a transition expires.
- A verdict is success, fail or unknown. Unknown (the evidence cannot decide)
  consumes no attempt and follows no edge; the run waits with a notice.
- Words the model wrote (``Evidence.source == "model"``) are never judged:
  :func:`claim` records them and the run stays where it is.
- An exit node with a ``verify`` is a gate: it is judged before the run may
  finish. Success completes; failure is a failed attempt at the task the run
  came from; unknown keeps the run one step before the exit.
- The same failing call with the same output ``plan.repeat_limit`` times in a
  row on one node counts as exhausted (``repeat_detected``): its
  ``on_exhaust``/``on_fail`` edge is followed, else the run escalates.
- Edge choice (:mod:`waygraph.engine.choice`): ties of weight go to file
  order, or in a plan with ``routing == "attractor"`` (every DOT file unless
  it says ``routing=waygraph``) to the lexically first target (§3.3), except
  out of a human node. An edge whose ``when`` is a data check over
  ``context.*``/``outcome``/``preferred_label`` is eligible only while it
  holds over the run's context, out of any node a person does not choose from.
- Context (§5.1): a tool result whose last line is ``{"context_updates":
  {...}}`` (``Evidence.context_updates``) merges those keys into
  ``Run.context`` before routing (``context_updated``; past the bounds of
  :mod:`waygraph.engine.run_context`, ``context_refused``). An attractor run
  starts with the graph's goal as ``graph.goal``.
- A failure in an attractor-routed plan (§3.5, §3.7, §11.5, the executed
  mode's reading too): a matching ``on_fail``/``on_exhaust`` edge (whose
  ``when``, if any, holds) is followed at once, without retrying; with none,
  the node is retried while ``max_retries`` allows; once spent, the run goes
  to the node's ``retry_target``, else its ``fallback_retry_target``
  (``retry_routed``), else escalates: the pipeline failed.
- Goal gates (§3.4): a run about to complete at an exit while a visited
  ``goal_gate`` node's last outcome is not a success goes to that node's
  ``retry_target``, else ``fallback_retry_target``, else the graph's
  (``goal_gate_unsatisfied``), at most ``max_goal_gate_redirects`` (10)
  times; with nowhere to go, or past that, the run ends ``failed``.

Example:
    >>> import waygraph
    >>> plan = waygraph.load_library()["bugfix_workflow"]
    >>> run, events = start(plan, run_id="r1", turn=1)
    >>> run.current_node, [e["type"] for e in events][:2]
    ('reproduce', ['plan_activated', 'node_entered'])
    >>> run, events = observe(plan, run, lambda verify: True, turn=2)
    >>> run.current_node
    'isolate'
"""

from __future__ import annotations

from waygraph.engine import (
    dag,
    event_run,
    events,
    session_plan,
    session_plan_run,
    session_plan_text,
)
from waygraph.engine.choice import first_edge, pick_edge
from waygraph.engine.guided import (
    abort,
    advance,
    claim,
    expire,
    hear,
    next_plan,
    observe,
    rewind,
    start,
)
from waygraph.engine.state import (
    EVENT_TYPES,
    EXCERPT_CHARS,
    EXHAUST_EDGES,
    MAX_EVENTS,
    MAX_LAST_OUTPUT,
    MAX_ROUTING_HOPS,
    RETRY_EDGES,
    SUCCESS_EDGES,
    Evidence,
    Judge,
    Result,
    Run,
    from_record,
    to_record,
)

__all__ = [
    "EVENT_TYPES",
    "EXCERPT_CHARS",
    "EXHAUST_EDGES",
    "MAX_EVENTS",
    "MAX_LAST_OUTPUT",
    "MAX_ROUTING_HOPS",
    "RETRY_EDGES",
    "SUCCESS_EDGES",
    "Evidence",
    "Judge",
    "Result",
    "Run",
    "abort",
    "advance",
    "claim",
    "dag",
    "event_run",
    "events",
    "expire",
    "first_edge",
    "from_record",
    "hear",
    "next_plan",
    "observe",
    "pick_edge",
    "rewind",
    "session_plan",
    "session_plan_run",
    "session_plan_text",
    "start",
    "to_record",
]
