"""Exceptions raised by waygraph.

Every exception waygraph raises on purpose derives from :class:`WaygraphError`,
and subclasses also inherit the built-in they mean, so ``except ValueError``
keeps working for callers who do not know waygraph::

    WaygraphError
    ├── PlanFormatError (ValueError)      a plan file or plan data is malformed
    │   ├── PlanSyntaxError               the file is not valid JSON / YAML / DOT
    │   ├── StateMachineError             a state machine names a bad state or field
    │   ├── PipelineValidationError       an Attractor pipeline fails lint (``.diagnostics``)
    │   └── CorruptPlan                   a session's plan.json is not a session plan
    ├── PlanNotFoundError (KeyError)      a plan id is not in the library
    │   └── PlanContextNotFoundError      no stored plan context has that plan id
    ├── LibraryError (ValueError)         a library as a whole is inconsistent
    ├── StoreError (RuntimeError)         a store could not read or write
    │   └── Conflict                      another writer committed first
    ├── InputError (ValueError, TypeError) a call's argument is of the wrong type or too long
    ├── NotWaitingError (RuntimeError)    an answer for a session that waits for nobody
    ├── RunHeldError (RuntimeError)       another live process runs that pipeline run
    ├── RefusedFile (OSError)             a workspace file that is not a regular file
    ├── ConfigError (ValueError)          a bad URL, option or setting
    │   ├── GraphvizNotFoundError         Graphviz's dot is not installed
    │   └── MissingExtra (ImportError)    an optional package (an extra) is not installed
    ├── GraphvizError (RuntimeError)      Graphviz's dot failed or took too long
    ├── PatternTimeout (TimeoutError)     a plan's regex ran past its time bound
    ├── CommandFailed (RuntimeError)      a plan's shell command exited non-zero
    ├── EventFormatError (ValueError)     an event envelope breaks the CloudEvents format
    │   └── PayloadTooLargeError          an event is larger than the bus carries
    ├── PlanStateError (RuntimeError)     a plan context cannot do that in its state
    ├── EventTimeoutError (TimeoutError)  no response event arrived in time
    ├── BusClosedError (RuntimeError)     the bus was closed
    ├── ApiError                          an HTTP route answers with an error status
    ├── ReadOnlyFieldError (AttributeError) a field of a façade over a frozen run was assigned
    └── PlanningError                     anything the planning agent raises
        ├── InvalidPlanError (ValueError)   a plan failed validation (``.problems``)
        ├── PlanParseError (ValueError)     a model reply holds no usable JSON
        ├── PlanRejectedError               approval rejected the plan
        ├── LLMError (RuntimeError)         a model call failed
        ├── ToolDefinitionError (TypeError) a function cannot be used as a tool
        └── AgentBusyError (RuntimeError)   a second run on an agent that is running

Every class is defined here, once; the modules that raise them
(:mod:`waygraph.planning`, :mod:`waygraph.draw`, :mod:`waygraph.sandbox.patterns`,
...) import them from here and keep exporting them under the same names.

Example:
    >>> from waygraph.errors import PlanFormatError
    >>> err = PlanFormatError("unknown node type 'tsk'", file="a.json", plan="p", node="n",
    ...                       field="type", value="tsk")
    >>> str(err)
    "a.json: plan 'p', node 'n', field 'type': unknown node type 'tsk' (got 'tsk')"
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

__all__ = [
    "AgentBusyError",
    "ApiError",
    "BusClosedError",
    "CommandFailed",
    "ConfigError",
    "Conflict",
    "CorruptPlan",
    "EventFormatError",
    "EventTimeoutError",
    "GraphvizError",
    "GraphvizNotFoundError",
    "InputError",
    "IntegrationVersionError",
    "InvalidPlanError",
    "LLMError",
    "LibraryError",
    "MissingExtra",
    "NotWaitingError",
    "PatternTimeout",
    "PayloadTooLargeError",
    "PermanentError",
    "PipelineValidationError",
    "PlanContextNotFoundError",
    "PlanFormatError",
    "PlanNotFoundError",
    "PlanParseError",
    "PlanRejectedError",
    "PlanStateError",
    "PlanSyntaxError",
    "PlannerSetupError",
    "PlanningError",
    "ReadOnlyFieldError",
    "RefusedFile",
    "RunHeldError",
    "RunNotFoundError",
    "StateMachineError",
    "StoreError",
    "ToolDefinitionError",
    "TransientError",
    "WaygraphError",
]


class WaygraphError(Exception):
    """Base class of every error waygraph raises on purpose."""


class PlanFormatError(WaygraphError, ValueError):
    """A plan file or plan data is malformed.

    The message names where the problem is (file, line, plan, node or edge,
    field) and quotes the offending value, so a person can fix it without a
    debugger.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        plan: str | None = None,
        node: str | None = None,
        edge: str | None = None,
        field: str | None = None,
        value: Any = None,
        has_value: bool | None = None,
    ) -> None:
        self.reason = message
        self.file = file
        self.line = line
        self.plan = plan
        self.node = node
        self.edge = edge
        self.field = field
        self.value = value
        self.has_value = value is not None if has_value is None else has_value
        super().__init__(self._compose())

    def located(self, **where: Any) -> PlanFormatError:
        """Return a copy with missing location parts filled in from ``where``."""
        fields = {
            k: getattr(self, k) for k in ("file", "line", "plan", "node", "edge", "field", "value")
        }
        for key, val in where.items():
            if fields.get(key) is None and val is not None:
                fields[key] = val
        err = type(self)(self.reason, has_value=self.has_value, **fields)
        return err

    def _compose(self) -> str:
        where = ""
        if self.file:
            where = self.file if self.line is None else f"{self.file}:{self.line}"
        elif self.line is not None:
            where = f"line {self.line}"
        parts = []
        if self.plan is not None:
            parts.append(f"plan {self.plan!r}")
        if self.node is not None:
            parts.append(f"node {self.node!r}")
        if self.edge is not None:
            parts.append(f"edge {self.edge}")
        if self.field is not None:
            parts.append(f"field {self.field!r}")
        location = ", ".join(parts)
        head = ": ".join(p for p in (where, location) if p)
        text = f"{head}: {self.reason}" if head else self.reason
        if self.has_value:
            shown = repr(self.value)
            if len(shown) > 80:
                shown = shown[:77] + "..."
            text += f" (got {shown})"
        return text


class PlanSyntaxError(PlanFormatError):
    """The file is not valid JSON, YAML or DOT at all."""


class PipelineValidationError(PlanFormatError):
    """An Attractor pipeline has error-severity lint diagnostics (specification §7.3).

    Raised by :func:`waygraph.pipelines.lint.validate_or_raise`; ``diagnostics``
    holds every diagnostic found (errors, warnings and notes), so a caller can
    show them all, and the message lists the errors.

    Example:
        >>> err = PipelineValidationError("1 lint error: no start node", plan="p")
        >>> (str(err), err.diagnostics)
        ("plan 'p': 1 lint error: no start node", ())
    """

    def __init__(self, message: str, *, diagnostics: Sequence[Any] = (), **where: Any) -> None:
        self.diagnostics: tuple[Any, ...] = tuple(diagnostics)
        super().__init__(message, **where)

    def located(self, **where: Any) -> PlanFormatError:
        """Like :meth:`PlanFormatError.located`, keeping the diagnostics."""
        err = super().located(**where)
        if isinstance(err, PipelineValidationError):
            err.diagnostics = self.diagnostics
        return err


class PlanNotFoundError(WaygraphError, KeyError):
    """A plan id that is not in the library."""

    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0]) if self.args else "plan not found"


class LibraryError(WaygraphError, ValueError):
    """A library is inconsistent as a whole (for example a duplicate plan id)."""


class StoreError(WaygraphError, RuntimeError):
    """A store could not read or write a record."""


class Conflict(StoreError):
    """Another writer committed the record first; reload and apply again."""


class InputError(WaygraphError, ValueError, TypeError):
    """An argument of a call is of the wrong type, too long or not valid text.

    It is both a ValueError and a TypeError, so code written against either
    built-in still catches it.
    """


class NotWaitingError(WaygraphError, RuntimeError):
    """An answer came for a session that is not waiting for a person's answer."""


class RunHeldError(WaygraphError, RuntimeError):
    """Another live process runs that pipeline run (its lease holds): wait, or take it over."""


class RefusedFile(WaygraphError, OSError):
    """A file waygraph would not read: not a regular file, or over its size limit
    (:func:`waygraph.sandbox.safe_files.read_regular_file`).

    ``reason`` says what it is (``"a symbolic link"``, ``"a FIFO"``, ``"over
    the 4194304-byte limit"``); ``str()`` is one line naming the file.

    Example:
        >>> str(RefusedFile("/w/plan.json", "a FIFO"))
        'refused /w/plan.json: it is a FIFO, not a regular file'
    """

    def __init__(
        self, path: str | os.PathLike[str], reason: str, expected: str = "a regular file"
    ) -> None:
        self.path = os.fspath(path)
        self.reason = reason
        self.expected = expected
        what = f"it is {reason}, not {expected}" if expected else f"it is {reason}"
        super().__init__(f"refused {self.path}: {what}")

    def __reduce__(self) -> tuple[object, ...]:
        # OSError pickles through its args; keep the path and reason instead.
        return (type(self), (self.path, self.reason, self.expected))


class ConfigError(WaygraphError, ValueError):
    """A bad store URL, option or setting."""


class StateMachineError(PlanFormatError):
    """A state machine names an unknown state, has no terminal state, or is malformed.

    Like :class:`PlanFormatError`, but the location says ``state`` instead of
    ``node``, because that is what the author of a state machine wrote.

    Example:
        >>> str(StateMachineError("unknown target state 'x'", plan="research",
        ...                       state="searching", field="default_next"))
        "plan 'research', state 'searching', field 'default_next': unknown target state 'x'"
    """

    def __init__(self, message: str, *, state: str | None = None, **where: Any) -> None:
        if state is not None:
            where["node"] = state
        super().__init__(message, **where)

    @property
    def state(self) -> str | None:
        """The state the error is about (stored as ``node``), or None."""
        return self.node

    def _compose(self) -> str:
        text = super()._compose()
        if self.node is not None:
            text = text.replace(f"node {self.node!r}", f"state {self.node!r}", 1)
        return text


class PlanContextNotFoundError(PlanNotFoundError):
    """No plan context is stored under that plan id."""


class EventFormatError(WaygraphError, ValueError):
    """An event envelope breaks the CloudEvents 1.0 JSON format or waygraph's rules for it.

    ``attribute`` names the offending attribute (its wire name), when there is one.

    Example:
        >>> str(EventFormatError("must be '1.0'", attribute="specversion", value="0.3"))
        "event attribute 'specversion': must be '1.0' (got '0.3')"
    """

    def __init__(self, message: str, *, attribute: str | None = None, value: Any = None) -> None:
        self.reason = message
        self.attribute = attribute
        self.value = value
        text = f"event attribute {attribute!r}: {message}" if attribute else message
        if value is not None:
            shown = repr(value)
            text += f" (got {shown[:77] + '...' if len(shown) > 80 else shown})"
        super().__init__(text)


class PayloadTooLargeError(EventFormatError):
    """An event is larger than the bus carries (NATS: the server's ``max_payload``).

    ``size`` and ``limit`` are bytes of the event's CloudEvents JSON.

    Example:
        >>> err = PayloadTooLargeError("the answer", size=2_000_000, limit=1_048_064)
        >>> str(err), err.size
        ('the answer is 2000000 bytes; the bus carries at most 1048064', 2000000)
    """

    def __init__(self, what: str, *, size: int, limit: int, event_type: str | None = None) -> None:
        self.size = size
        self.limit = limit
        self.event_type = event_type
        super().__init__(f"{what} is {size} bytes; the bus carries at most {limit}")


class PlanStateError(WaygraphError, RuntimeError):
    """A plan context was asked to do something its current state does not allow."""


class ReadOnlyFieldError(WaygraphError, AttributeError):
    """A field of a run façade was assigned; the message names the method that changes it.

    A ``PlanContext`` changes only through an engine transition and a store
    commit (``execute_next``, ``finalize``, ``pause``, ``resume``, ...), so
    the object never holds what the store does not.
    """


class EventTimeoutError(WaygraphError, TimeoutError):
    """The response event of a request did not arrive before the timeout."""


class BusClosedError(WaygraphError, RuntimeError):
    """The bus was closed; it publishes and subscribes no more until started again."""


class PermanentError(WaygraphError):
    """Raise from a handler when retrying cannot help: the goal is answered as failed at once."""


class TransientError(WaygraphError):
    """Raise from a handler to have the event redelivered, whatever else the error is."""


class PlannerSetupError(StateMachineError):
    """A planner registered something that cannot work; the message names planner and goal.

    Example:
        >>> str(PlannerSetupError("unknown target state 'dnoe'", planner="p", goal="g.goal",
        ...                       state="searching", field="default_next"))
        "planner 'p', goal 'g.goal', state 'searching', field 'default_next': unknown target \
state 'dnoe'"
    """

    def __init__(
        self, message: str, *, planner: str | None = None, goal: str | None = None, **where: Any
    ) -> None:
        self.planner = planner
        self.goal = goal
        super().__init__(message, **where)

    def _compose(self) -> str:
        head = [f"planner {self.planner!r}"] if self.planner else []
        if self.goal:
            head.append(f"goal {self.goal!r}")
        text = super()._compose()
        if not head:
            return text
        joiner = ", " if self.node is not None or self.field is not None else ": "
        return ", ".join(head) + joiner + text


class CorruptPlan(PlanFormatError):
    """A session's plan.json exists but is not a session plan (bad JSON, wrong shape)."""


class GraphvizError(WaygraphError, RuntimeError):
    """Graphviz's ``dot`` program failed or took too long."""


class GraphvizNotFoundError(ConfigError):
    """Graphviz's ``dot`` program is not installed (it is optional)."""


class MissingExtra(ConfigError, ImportError):
    """A feature needs an optional package that is not installed.

    The text is one line naming the extra to install, e.g.
    ``waygraph plan needs the openai package: pip install 'waygraph[llm]'``.
    It is also an ImportError, so ``except ImportError`` keeps working.
    Raised by :func:`waygraph._extras.require`.
    """

    def __init__(self, extra: str, module: str, purpose: str | None = None) -> None:
        self.extra = extra
        self.module = module
        who = purpose or "this"
        super().__init__(
            f"{who} needs the {module} package, which is not installed: "
            f"pip install 'waygraph[{extra}]'"
        )
        self.name = module


class IntegrationVersionError(ConfigError):
    """An agent framework is installed in a version whose hook points an adapter cannot use.

    Raised when an adapter is set up, never later as a silent no-op. The text
    names the adapter, the version found and the versions supported, e.g.
    ``waygraph.integrations.langgraph supports langgraph >=0.6,<2; found 0.2.1``.
    Raised by :func:`waygraph.integrations._framework.require_framework`.
    """

    def __init__(
        self, adapter: str, package: str, found: str, supported: str, why: str = ""
    ) -> None:
        self.adapter, self.package, self.found, self.supported = adapter, package, found, supported
        tail = f" ({why})" if why else ""
        super().__init__(
            f"{adapter} supports {package} {supported}; found {found}{tail}: "
            f"pip install '{package}{supported}'"
        )


class PatternTimeout(WaygraphError, TimeoutError):
    """A plan's pattern did not finish matching within its time bound."""


class CommandFailed(WaygraphError, RuntimeError):
    """A ``shell`` command exited with a non-zero code, which fails its step."""


class ApiError(WaygraphError):
    """Raised by a route of ``waygraph serve`` to answer with ``status`` and an error body.

    No built-in fits an HTTP answer (a 404 is not a ``KeyError`` to its
    caller), so it derives from :class:`WaygraphError` alone.
    """

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


# ---------------------------------------------------------------- planning agent


class PlanningError(WaygraphError):
    """Base class of the planning agent's errors."""


class InvalidPlanError(PlanningError, ValueError):
    """A plan failed validation; ``problems`` lists every problem found.

    ``problems`` are :class:`waygraph.planning.PlanProblem` values and ``plan``
    is the offending :class:`waygraph.planning.Plan` when it could be parsed at
    all. They are typed loosely here because this module is the bottom of the
    package: it imports nothing of waygraph (tests/test_layers.py).
    """

    def __init__(self, problems: Sequence[Any], *, plan: Any = None, attempts: int = 1) -> None:
        self.problems = tuple(problems)
        self.plan = plan
        self.attempts = attempts
        head = "the plan is invalid"
        if attempts > 1:
            head += f" after {attempts} attempts"
        super().__init__(head + ":\n" + "\n".join(f"- {p}" for p in self.problems))


class PlanParseError(PlanningError, ValueError):
    """A model reply holds no JSON that could be extracted or repaired."""


class PlanRejectedError(PlanningError):
    """Plan approval (a callback or a person) rejected the plan."""


class LLMError(PlanningError, RuntimeError):
    """A model call failed (connection, HTTP error, empty reply)."""


class ToolDefinitionError(PlanningError, TypeError):
    """A function cannot be registered as a tool (for example it takes ``*args``)."""


class AgentBusyError(PlanningError, RuntimeError):
    """The agent is already running a plan; use one agent per concurrent run."""


class RunNotFoundError(PlanningError, KeyError):
    """No generated run with that id is in the store (``agent.resume(run_id)``)."""

    def __str__(self) -> str:
        # KeyError would quote the message.
        return str(self.args[0]) if self.args else ""
