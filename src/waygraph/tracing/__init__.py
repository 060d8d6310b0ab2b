"""OpenTelemetry spans for guided turns and generated-plan runs (the ``otel`` extra).

Each ``Navigator.turn`` is a span ``waygraph.turn`` whose attributes say the
session, plan, node, verdict and transition, with every engine event of the
turn as a span event; a generated plan's run is a span ``waygraph.plan``
with a child span ``waygraph.step`` per step execution; each model call
waygraph makes is a span ``chat {model}`` (GenAI semantic conventions).
:data:`SPAN_ATTRIBUTES` names every attribute each span may carry. waygraph depends on
``opentelemetry-api`` only (``pip install 'waygraph[otel]'``); exporting is
the application's: it configures an SDK ``TracerProvider`` as usual.

Tracing is on when ``opentelemetry-api`` is installed and a tracer provider
is configured (OpenTelemetry's global one, or one given to
:func:`instrument`); ``WAYGRAPH_OTEL=0`` (read at the first turn, and by
:func:`instrument`) switches it off whatever the code says. Switched off or
not installed, nothing imports ``opentelemetry`` and a turn pays one global
lookup. See docs/tracing.md.

Example:
    >>> from waygraph import tracing
    >>> tracing.uninstrument()
    >>> tracing.enabled()
    False
    >>> tracing.stamp([{"type": "node_entered"}])
    [{'type': 'node_entered'}]
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import re
import sys
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any, TypeVar

from waygraph.tracing import _chat

if TYPE_CHECKING:
    from waygraph.guided.turns import Guidance

__all__ = [
    "ENV_SWITCH",
    "ENV_TRACE_URL",
    "SPAN_ATTRIBUTES",
    "chat_span",
    "enabled",
    "instrument",
    "latest_trace_id",
    "plan_span",
    "stamp",
    "step_span",
    "trace_link",
    "turn_span",
    "uninstrument",
]

#: ``WAYGRAPH_OTEL=0`` (or ``false``, ``off``, ``no``) switches every span off.
ENV_SWITCH = "WAYGRAPH_OTEL"
#: A trace viewer's URL with ``{trace_id}`` in it; the dashboard links trace ids there.
ENV_TRACE_URL = "WAYGRAPH_TRACE_URL"
#: The instrumentation scope's name, as tracers are named after their library.
SCOPE = "waygraph"
#: Longest text (a goal, a failure) put in an attribute or a status.
MAX_TEXT = 1000

# Attribute names. The gen_ai.* ones are the GenAI semantic conventions' own
# (checked against opentelemetry-semantic-conventions in the tests); the
# waygraph.* ones say what those conventions have no name for.
SESSION_ID = "waygraph.session.id"
PLAN_ID = "waygraph.plan.id"
NODE_ID = "waygraph.node.id"
VERDICT = "waygraph.verdict"
TRANSITION = "waygraph.transition"
RUN_STATUS = "waygraph.run.status"
RUN_ID = "waygraph.run.id"
TURN = "waygraph.turn.number"
STEP_ID = "waygraph.step.id"
STEP_ACTION = "waygraph.step.action"
PLAN_DEPTH = "waygraph.plan.depth"
PLAN_GOAL = "waygraph.plan.goal"
GEN_AI_CONVERSATION_ID = "gen_ai.conversation.id"
GEN_AI_TOOL_NAME = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID = "gen_ai.tool.call.id"
PLAN_REVISION = "waygraph.plan.revision"
GEN_AI_OPERATION_NAME = _chat.GEN_AI_OPERATION_NAME
GEN_AI_WORKFLOW_NAME = "gen_ai.workflow.name"
#: The longest ``gen_ai.workflow.name`` (a generated plan's goal, first line).
MAX_NAME = 200

#: Every attribute each span may carry, by span name (the one registry:
#: docs/tracing.md's tables are tested against it). Names once emitted stay.
SPAN_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "waygraph.turn": (
        SESSION_ID, GEN_AI_CONVERSATION_ID, GEN_AI_TOOL_NAME, GEN_AI_TOOL_CALL_ID,
        PLAN_ID, RUN_ID, NODE_ID, VERDICT, TRANSITION, RUN_STATUS, TURN,
    ),
    "waygraph.plan": (
        GEN_AI_OPERATION_NAME, GEN_AI_WORKFLOW_NAME, PLAN_GOAL, PLAN_DEPTH, RUN_ID, RUN_STATUS,
    ),
    "waygraph.step": (STEP_ID, STEP_ACTION, PLAN_REVISION),
    "chat {model}": _chat.ATTRIBUTES,
}  # fmt: skip

T = TypeVar("T")
G = TypeVar("G", bound="Guidance")

_TRACE_ID = re.compile(r"[0-9a-f]{32}")
_UNSET: Any = object()
# The tracer waygraph uses: _UNSET until first needed, None when tracing is off.
_tracer: Any = _UNSET
# Whether the tracer follows OpenTelemetry's global provider (off until one is set).
_follows_global = False


@lru_cache(maxsize=1)
def _installed() -> bool:
    """Whether opentelemetry-api can be imported, asked once without importing it."""
    try:
        return importlib.util.find_spec("opentelemetry") is not None
    except (ImportError, ValueError):
        return False


def _switched_off() -> bool:
    return os.environ.get(ENV_SWITCH, "").strip().lower() in ("0", "false", "off", "no")


def instrument(tracer_provider: Any = None) -> bool:
    """Send waygraph's spans to ``tracer_provider`` (None: OpenTelemetry's global one).

    Returns whether spans are on: False when ``WAYGRAPH_OTEL=0``; else
    raises :class:`~waygraph.errors.MissingExtra` when opentelemetry-api is
    not installed. Calling it is optional: by default waygraph follows the
    global provider once the application sets one.

    Example:
        >>> from opentelemetry.sdk.trace import TracerProvider
        >>> instrument(TracerProvider())
        True
        >>> uninstrument()
    """
    global _tracer, _follows_global
    from waygraph._extras import require

    if _switched_off():
        _tracer, _follows_global = None, False
        return False
    trace = require("otel", "opentelemetry.trace", purpose="waygraph tracing")
    provider = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
    _tracer = provider.get_tracer(SCOPE, _version())
    _follows_global = tracer_provider is None
    return True


def uninstrument() -> None:
    """Make no spans at all until :func:`instrument` is called.

    Example:
        >>> uninstrument(); enabled()
        False
    """
    global _tracer, _follows_global
    _tracer, _follows_global = None, False


def enabled() -> bool:
    """Whether waygraph makes spans now (see the module's docstring for when).

    Example:
        >>> uninstrument(); enabled()
        False
    """
    return _active() is not None


def _version() -> str:
    from waygraph import __version__

    return __version__


def _active() -> Any:
    """The tracer to use now, or None (off, not installed, or no provider set yet)."""
    global _tracer, _follows_global
    tracer = _tracer
    if tracer is None:
        return None
    if tracer is _UNSET:
        if _switched_off() or not _installed():
            _tracer = None
            return None
        try:
            from opentelemetry import trace
        except ImportError:
            _tracer = None
            return None
        tracer = _tracer = trace.get_tracer(SCOPE, _version())
        _follows_global = True
    if _follows_global and not _global_configured():
        # OpenTelemetry's stand-in provider: nobody configured tracing, so a
        # span would be a no-op; skipping it keeps the turn at its old cost.
        return None
    return tracer


def _global_configured() -> bool:
    # Asked twice a turn: the module is looked up once (an import statement
    # costs about a microsecond), and a provider once set stays set.
    global _provider_set
    if _provider_set:
        return True
    trace = sys.modules.get("opentelemetry.trace") or importlib.import_module("opentelemetry.trace")
    # While none is set, get_tracer_provider() looks OTEL_PYTHON_TRACER_PROVIDER
    # up in os.environ (about 1 µs, twice a turn). The global it keeps a provider
    # in says "none" for free: one set in code lands there, and one named by that
    # variable is loaded there by the first get_tracer_provider(), which
    # trace.get_tracer() made when waygraph took its tracer.
    if getattr(trace, "_TRACER_PROVIDER", _NOT_KEPT) is None:
        return False
    _provider_set = not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
    return _provider_set


#: OpenTelemetry lets a global tracer provider be set once, for good.
_provider_set = False
#: A release of OpenTelemetry that keeps its provider elsewhere: ask it.
_NOT_KEPT = object()


# ---------------------------------------------------------------- turns


class _Off:
    """What a span helper returns while tracing is off: does nothing, costs nothing."""

    def __enter__(self) -> _Off:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def done(self, result: T) -> T:
        return result


_OFF = _Off()


class _Current:
    """A span made current while a turn or a plan runs, ended (with any error) after."""

    __slots__ = ("_span", "_token")

    def __init__(self, span: Any) -> None:
        self._span = span
        self._token: Any = None

    def __enter__(self) -> Any:
        from opentelemetry import context, trace

        self._token = context.attach(trace.set_span_in_context(self._span))
        return self

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        from opentelemetry import context

        try:
            if exc is not None:
                self._span.record_exception(exc)
                _error(self._span, f"{type(exc).__name__}: {exc}")
        finally:
            context.detach(self._token)
            self._span.end()


def _error(span: Any, description: str) -> None:
    from opentelemetry.trace import Status, StatusCode

    span.set_status(Status(StatusCode.ERROR, description))


class _TurnSpan(_Current):
    """One turn's span: current while the turn runs, so its trace id is stamped on the events."""

    __slots__ = ()

    def __enter__(self) -> _TurnSpan:
        super().__enter__()
        return self

    def done(self, guidance: G) -> G:
        """Record what the turn did on the span; return the guidance unchanged."""
        _record_turn(self._span, guidance)
        return guidance


def turn_span(
    session_id: str, tool_name: str | None = None, call_id: str | None = None
) -> _TurnSpan | _Off:
    """A context manager around one turn (``waygraph.turn``); ``.done(guidance)`` records it.

    Off (or a span nobody records): a shared no-op object.

    Example:
        >>> from waygraph.guided.turns import Guidance
        >>> uninstrument()
        >>> with turn_span("chat-1") as span:
        ...     span.done(Guidance(text="hi")).text
        'hi'
    """
    tracer = _active()
    if tracer is None:
        return _OFF
    span = tracer.start_span("waygraph.turn")
    if not span.is_recording():
        # A no-op or sampled-out span: nothing to record, nothing to make current.
        span.end()
        return _OFF
    span.set_attributes(_turn_attributes(session_id, tool_name, call_id))
    return _TurnSpan(span)


def _turn_attributes(session_id: str, tool_name: str | None, call_id: str | None) -> dict[str, str]:
    attributes = {SESSION_ID: session_id, GEN_AI_CONVERSATION_ID: session_id}
    if tool_name is not None:
        attributes[GEN_AI_TOOL_NAME] = tool_name
    if call_id is not None:
        attributes[GEN_AI_TOOL_CALL_ID] = call_id
    return attributes


def _record_turn(span: Any, guidance: Guidance) -> None:
    run = guidance.run or {}
    attributes: dict[str, Any] = {
        PLAN_ID: run.get("plan_id"),
        RUN_ID: run.get("run_id"),
        NODE_ID: run.get("current_node"),
        RUN_STATUS: run.get("status"),
        TURN: run.get("turn"),
    }
    edges: list[Mapping[str, Any]] = []
    for event in guidance.events:
        kind = str(event.get("type", "event"))
        if kind == "node_verified":
            attributes[VERDICT] = event.get("outcome")
        elif kind == "edge_followed":
            edges.append(event)
        span.add_event(kind, flatten(event))
    if edges:
        path = [str(edges[0].get("from")), *(str(e.get("to")) for e in edges)]
        attributes[TRANSITION] = " -> ".join(path)
    span.set_attributes({k: v for k, v in attributes.items() if v is not None})
    if guidance.error is not None:
        _error(span, guidance.error)


def flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Event data as span attributes: nested mappings dotted, other values JSON-ready.

    Example:
        >>> flatten({"node": "fix", "passed": True, "seen": {"a": 1}, "hits": ["x", "y"],
        ...          "mixed": [1, {"b": 2}], "none": None})
        {'node': 'fix', 'passed': True, 'seen.a': 1, 'hits': ['x', 'y'], 'mixed': '[1, {"b": 2}]'}
    """
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if value is None:
            continue
        if isinstance(value, bool | int | float | str):
            out[name] = value
        elif isinstance(value, Mapping):
            out.update(flatten(value, f"{name}."))
        elif isinstance(value, list | tuple) and _homogeneous(value):
            out[name] = list(value)
        else:
            out[name] = json.dumps(value, default=str)
    return out


def _homogeneous(values: Sequence[Any]) -> bool:
    """Whether OpenTelemetry takes ``values`` as an array attribute (one primitive type)."""
    kinds = {type(v) for v in values}
    return len(kinds) <= 1 and kinds <= {bool, int, float, str}


# ---------------------------------------------------------------- trace ids


def stamp(events: Sequence[Mapping[str, Any]]) -> Sequence[Mapping[str, Any]]:
    """The events with the current trace id (``trace_id``, hex) in each, if a span is current.

    The Navigator stores a turn's events this way, so a session links to
    its trace; off, or outside a valid span, the list comes back as is.

    Example:
        >>> uninstrument()
        >>> stamp([{"type": "node_entered"}])
        [{'type': 'node_entered'}]
    """
    if not events or _active() is None:
        return events
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return events
    trace_id = trace.format_trace_id(context.trace_id)
    return [{**event, "trace_id": trace_id} for event in events]


def latest_trace_id(events: Iterable[Mapping[str, Any]]) -> str | None:
    """The last ``trace_id`` (32 hex digits) recorded in ``events`` (oldest first), or None.

    Example:
        >>> latest_trace_id([{"trace_id": "ab" * 16}, {"type": "x"}])
        'abababababababababababababababab'
    """
    found: str | None = None
    for event in events:
        value = event.get("trace_id")
        # Only a real trace id: the dashboard puts it in a link.
        if isinstance(value, str) and _TRACE_ID.fullmatch(value):
            found = value
    return found


def trace_link(trace_id: str | None) -> str | None:
    """Where a trace viewer shows ``trace_id``: ``WAYGRAPH_TRACE_URL`` filled in, or None.

    Example:
        >>> import os
        >>> os.environ["WAYGRAPH_TRACE_URL"] = "http://jaeger:16686/trace/{trace_id}"
        >>> trace_link("ab" * 16)
        'http://jaeger:16686/trace/abababababababababababababababab'
        >>> del os.environ["WAYGRAPH_TRACE_URL"]
        >>> trace_link("ab" * 16) is None
        True
    """
    template = os.environ.get(ENV_TRACE_URL, "").strip()
    if not trace_id or not template:
        return None
    return template.replace("{trace_id}", trace_id)


# ---------------------------------------------------------------- generated plans


class _PlanSpan(_Current):
    """A generated plan's run (``waygraph.plan``), current so its steps nest under it."""

    __slots__ = ()

    def __enter__(self) -> _PlanSpan:
        super().__enter__()
        return self

    def done(self, result: T) -> T:
        """Record the run's outcome (its ``success``) and return it unchanged."""
        success = getattr(result, "success", None)
        if isinstance(success, bool):
            self._span.set_attribute(RUN_STATUS, "completed" if success else "failed")
            if not success:
                _error(
                    self._span, str(getattr(result, "final_output", None) or "failed")[:MAX_TEXT]
                )
        return result


def plan_span(goal: str, *, depth: int = 0, run_id: str | None = None) -> _PlanSpan | _Off:
    """A context manager around a generated plan's run; ``.done(result)`` records it.

    ``run_id``: the stored run's id, when the run is saved (``agent.resume``).

    Example:
        >>> uninstrument()
        >>> with plan_span("find the bug") as span:
        ...     span.done("result")
        'result'
    """
    tracer = _active()
    if tracer is None:
        return _OFF
    attributes: dict[str, Any] = {
        GEN_AI_OPERATION_NAME: "invoke_workflow",
        GEN_AI_WORKFLOW_NAME: (goal.strip().splitlines() or [""])[0][:MAX_NAME],
        PLAN_GOAL: goal[:MAX_TEXT],
        PLAN_DEPTH: depth,
    }
    if run_id is not None:
        attributes[RUN_ID] = run_id
    span = tracer.start_span("waygraph.plan", attributes=attributes)
    if not span.is_recording():
        span.end()
        return _OFF
    return _PlanSpan(span)


def step_span(
    work: Coroutine[Any, Any, T],
    step_id: str,
    action: str,
    failure: Callable[[T], str | None],
    revision: int | None = None,
) -> Coroutine[Any, Any, T]:
    """``work`` (one step's execution) inside a ``waygraph.step`` span; off: ``work`` itself.

    ``failure`` says why a result is a failure (the span's error status), or None;
    ``revision``: the plan's revision the step belongs to (0: the first plan).

    Example:
        >>> import asyncio
        >>> uninstrument()
        >>> async def step() -> int:
        ...     return 1
        >>> asyncio.run(step_span(step(), "s1", "search", lambda r: None))
        1
    """
    tracer = _active()
    if tracer is None:
        return work
    attributes: dict[str, Any] = {STEP_ID: step_id, STEP_ACTION: action}
    if revision is not None:
        attributes[PLAN_REVISION] = revision
    return _traced_step(tracer, work, attributes, failure)


async def _traced_step(
    tracer: Any,
    work: Coroutine[Any, Any, T],
    attributes: dict[str, Any],
    failure: Callable[[T], str | None],
) -> T:
    # The step's task copied the plan span's context when it was created.
    with tracer.start_as_current_span("waygraph.step", attributes=attributes) as span:
        result = await work
        why = failure(result)
        if why is not None:
            _error(span, why)
        return result


# ---------------------------------------------------------------- model calls


class _ChatSpan(_Current):
    """One model call (``chat {model}``), current while the request runs."""

    __slots__ = ()

    def __enter__(self) -> _ChatSpan:
        super().__enter__()
        return self

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        if exc is not None:
            self._span.set_attribute(_chat.ERROR_TYPE, type(exc).__qualname__)
        super().__exit__(kind, exc, tb)

    def done(self, response: T) -> T:
        """Record what the endpoint reported (model, id, token usage); return ``response``."""
        self._span.set_attributes(_chat.response_attributes(response))
        return response


def chat_span(request: Mapping[str, Any], base_url: str | None) -> _ChatSpan | _Off:
    """A context manager around one chat-completions ``request`` sent to ``base_url``.

    The span ``chat {model}`` follows the GenAI semantic conventions
    (attributes: ``SPAN_ATTRIBUTES["chat {model}"]``); ``.done(response)``
    records the reply's model and token usage, an exception is its ERROR
    status and ``error.type``. Off: a shared no-op object.

    Example:
        >>> uninstrument()
        >>> with chat_span({"model": "llama3.1"}, "http://localhost:11434/v1") as span:
        ...     span.done("reply")
        'reply'
    """
    tracer = _active()
    if tracer is None:
        return _OFF
    from opentelemetry.trace import SpanKind

    attributes = _chat.request_attributes(request, base_url)
    name = f"chat {attributes[_chat.GEN_AI_REQUEST_MODEL]}".strip()
    span = tracer.start_span(name, kind=SpanKind.CLIENT, attributes=attributes)
    if not span.is_recording():
        span.end()
        return _OFF
    return _ChatSpan(span)
