"""What each node of an executed pipeline does: the specification's handlers (§4).

A handler has one method, ``execute(node, context, plan, logs_root) ->
Outcome`` (§4.1; the plan stands for the spec's graph). A
:class:`HandlerRegistry` maps handler type names to handlers and resolves a
node by its handler type (:func:`waygraph.pipelines.routing.handler_type`),
falling back to codergen (§4.2). :func:`default_handlers` builds a registry
with every built-in handler; register your own by type name. There is no
global registry: a registry is an object you pass to
:func:`~waygraph.pipelines.runner.run_pipeline`.

The handlers that run other stages (parallel, fan-in, manager loop) live in
:mod:`waygraph.pipelines.stages`.

Example:
    >>> from waygraph.model import Node
    >>> from waygraph.pipelines.outcome import Outcome
    >>> class Deploy:
    ...     def execute(self, node, context, plan, logs_root):
    ...         return Outcome(status="success", notes=f"deployed {node.id}")
    >>> registry = default_handlers()
    >>> registry.register("deploy", Deploy())
    >>> type(registry.resolve(Node(id="d", handler="deploy"))).__name__
    'Deploy'
    >>> type(registry.resolve(Node(id="x", handler="unknown"))).__name__
    'CodergenHandler'
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Protocol, runtime_checkable

from waygraph.eval.loop import run_shell
from waygraph.model import Edge, Node, Plan
from waygraph.pipelines.backends import CodergenBackend
from waygraph.pipelines.context import (
    Context,
    EventSink,
    InterviewCompleted,
    InterviewStarted,
    InterviewTimeout,
)
from waygraph.pipelines.interviewers import (
    AnswerValue,
    AutoApproveInterviewer,
    Interviewer,
    Option,
    Question,
    QuestionType,
    match_option,
)
from waygraph.pipelines.outcome import Outcome
from waygraph.pipelines.routing import handler_type
from waygraph.pipelines.run_folder import read_status, stage_dir, write_json, write_text
from waygraph.sandbox import landlock
from waygraph.verify_types.people import accelerator, choice_label

__all__ = [
    "NEEDS_ALLOW_COMMANDS",
    "TOOL_TIMEOUT",
    "CheckpointHandler",
    "CodergenHandler",
    "ConditionalHandler",
    "EscalateHandler",
    "ExitHandler",
    "Handler",
    "HandlerRegistry",
    "StartHandler",
    "ToolHandler",
    "WaitForHumanHandler",
    "default_handlers",
    "human_choices",
]

#: Why a tool node did not run its command.
NEEDS_ALLOW_COMMANDS = "commands need --allow-commands (allow_commands=True)"
#: Seconds a tool node's command may run when the node sets no ``timeout``.
TOOL_TIMEOUT = 600.0
#: Characters of a response kept in the context's ``last_response`` (§4.5).
_LAST_RESPONSE = 200


@runtime_checkable
class Handler(Protocol):
    """What runs one node (§4.1)."""

    def execute(self, node: Node, context: Context, plan: Plan, logs_root: Path) -> Outcome:
        """Run ``node`` and return its outcome; may read ``context``, must not raise on purpose."""
        ...


class HandlerRegistry:
    """Handler type name -> handler, with codergen's as the default (§4.2).

    Example:
        >>> registry = HandlerRegistry({"start": StartHandler()}, default=ConditionalHandler())
        >>> sorted(registry.types())
        ['start']
    """

    def __init__(
        self, handlers: Mapping[str, Handler] | None = None, *, default: Handler | None = None
    ) -> None:
        self._handlers: dict[str, Handler] = dict(handlers or {})
        self.default = default

    def register(self, type_name: str, handler: Handler) -> None:
        """Run nodes of handler type ``type_name`` with ``handler`` (replacing any before)."""
        self._handlers[type_name] = handler

    def get(self, type_name: str) -> Handler | None:
        """The handler registered for ``type_name``, or None."""
        return self._handlers.get(type_name)

    def types(self) -> tuple[str, ...]:
        """Every registered handler type name."""
        return tuple(self._handlers)

    def resolve(self, node: Node) -> Handler:
        """The handler for ``node``: its handler type's, else the default."""
        found = self._handlers.get(handler_type(node))
        if found is not None:
            return found
        if self.default is None:
            from waygraph.errors import ConfigError

            raise ConfigError(f"no handler for node {node.id!r} ({handler_type(node)})")
        return self.default


class StartHandler:
    """The entry point: SUCCESS, nothing done (§4.3)."""

    def execute(self, node: Node, context: Context, plan: Plan, logs_root: Path) -> Outcome:
        """SUCCESS: the run begins."""
        return Outcome(status="success")


class ExitHandler:
    """The exit: SUCCESS; the runner checks goal gates before it (§4.4)."""

    def execute(self, node: Node, context: Context, plan: Plan, logs_root: Path) -> Outcome:
        """SUCCESS: the run has reached its exit."""
        return Outcome(status="success")


class CheckpointHandler:
    """A checkpoint node: SUCCESS (the runner saves a checkpoint after every node anyway)."""

    def execute(self, node: Node, context: Context, plan: Plan, logs_root: Path) -> Outcome:
        """SUCCESS: nothing to do."""
        return Outcome(status="success", notes=f"checkpoint {node.id}")


class EscalateHandler:
    """An escalation: FAIL with the node's reason; the runner ends the run there."""

    def execute(self, node: Node, context: Context, plan: Plan, logs_root: Path) -> Outcome:
        """FAIL with the node's reason."""
        reason = node.reason or node.name or node.action or f"escalated at {node.id}"
        return Outcome(status="fail", failure_reason=reason)


class ConditionalHandler:
    """A decision: SUCCESS; the edges' conditions do the routing (§4.7)."""

    def execute(self, node: Node, context: Context, plan: Plan, logs_root: Path) -> Outcome:
        """SUCCESS: the runner routes on the edges' conditions."""
        return Outcome(status="success", notes=f"Conditional node evaluated: {node.id}")


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("true", "1", "yes")


class CodergenHandler:
    """An LLM stage (§4.5): the prompt to ``backend``, prompt/response/status in the stage folder.

    The prompt is the node's ``action`` (its ``prompt``), else its label,
    else its id; ``$goal`` is expanded when the reader left it. With no
    backend the stage is simulated: ``[Simulated] Response for stage: <id>``
    and SUCCESS. A backend returns text (SUCCESS) or an :class:`Outcome`. A
    ``status.json`` the backend or its agent wrote in the stage folder while
    it ran wins over both (Appendix C); the runner clears the previous
    visit's one before each attempt.
    """

    def __init__(self, backend: CodergenBackend | None = None) -> None:
        self.backend = backend

    def execute(self, node: Node, context: Context, plan: Plan, logs_root: Path) -> Outcome:
        """Run the stage's prompt through the backend (or simulate it)."""
        prompt = node.action or node.prompt or node.name or node.id
        goal = context.get_string("graph.goal", plan.goal or "")
        prompt = prompt.replace("$goal", goal)
        folder = stage_dir(logs_root, node.id)
        write_text(folder / "prompt.md", prompt)
        if self.backend is None:
            response = f"[Simulated] Response for stage: {node.id}"
        else:
            result = self.backend.run(node, prompt, context)
            written = read_status(folder)
            if isinstance(result, Outcome):
                outcome = written or result
                write_json(folder / "status.json", outcome.status_file())
                return outcome
            response = str(result)
            if written is not None:
                write_text(folder / "response.md", response)
                return written
        write_text(folder / "response.md", response)
        outcome = Outcome(
            status="success",
            notes=f"Stage completed: {node.id}",
            context_updates={"last_stage": node.id, "last_response": response[:_LAST_RESPONSE]},
        )
        write_json(folder / "status.json", outcome.status_file())
        return outcome


def _declared(plan: Plan, node_id: str) -> Iterator[Edge]:
    return (e for e in plan.graph.edges if e.from_ == node_id)


def human_choices(plan: Plan, node_id: str) -> list[tuple[Option, str]]:
    """A human gate's choices: (option, target) per outgoing edge, in declaration order.

    A choice's key is the label's accelerator (``[Y] Yes``), else its first character.

    Example:
        >>> from waygraph.formats.dot import parse_dot
        >>> plan = parse_dot('''digraph g { start [shape=Mdiamond]; ask [shape=hexagon]
        ...   done [shape=Msquare]; start -> ask; ask -> done [label="[S] Ship"]
        ...   ask -> fix [label="Fix"]; fix -> done }''')
        >>> [(o.key, o.label, to) for o, to in human_choices(plan, "ask")]
        [('S', '[S] Ship', 'done'), ('F', 'Fix', 'fix')]
    """
    found: list[tuple[Option, str]] = []
    for edge in _declared(plan, node_id):
        label = choice_label(edge)
        key = (accelerator(label) or label.strip()[:1] or edge.to[:1]).upper()
        found.append((Option(key=key, label=label), edge.to))
    return found


class WaitForHumanHandler:
    """A human gate (§4.6): the outgoing edges as choices, asked of ``interviewer``.

    The outcome's ``preferred_label`` and ``suggested_next_ids`` route to the
    chosen edge; the context gets ``human.gate.selected`` (the key) and
    ``human.gate.label``. An answer that picks no choice takes the first;
    SKIPPED is a FAIL; TIMEOUT takes the choice ``human.default_choice``
    names (a target id or label), else RETRY.
    """

    def __init__(
        self, interviewer: Interviewer | None = None, on_event: EventSink | None = None
    ) -> None:
        self.interviewer: Interviewer = interviewer or AutoApproveInterviewer()
        self._emit = on_event or (lambda event: None)

    def execute(self, node: Node, context: Context, plan: Plan, logs_root: Path) -> Outcome:
        """Ask the interviewer which outgoing edge to take."""
        choices = human_choices(plan, node.id)
        if not choices:
            return Outcome(status="fail", failure_reason="No outgoing edges for human gate")
        question = Question(
            text=node.name or node.prompt or node.action or "Select an option:",
            type=QuestionType.MULTIPLE_CHOICE,
            options=tuple(option for option, _ in choices),
            timeout_seconds=node.timeout,
            stage=node.id,
        )
        self._emit(InterviewStarted(question=question.text, stage=node.id))
        started = time.monotonic()
        answer = self.interviewer.ask(question)
        waited = time.monotonic() - started
        # Any answer-shaped object will do (the store's interviewer has its own class).
        value = str(getattr(answer, "value", "") or "")
        selected: tuple[Option, str] | None = None
        if value.lower() == AnswerValue.TIMEOUT:
            self._emit(InterviewTimeout(question=question.text, stage=node.id, duration=waited))
            default = (node.attrs or {}).get("human.default_choice")
            selected = _pick(choices, default) if default else None
            if selected is None:
                return Outcome(status="retry", failure_reason="human gate timeout, no default")
        elif value.lower() == AnswerValue.SKIPPED:
            self._emit(
                InterviewCompleted(question=question.text, answer="skipped", duration=waited)
            )
            return Outcome(status="fail", failure_reason="human skipped interaction")
        if selected is None:
            option_label = getattr(getattr(answer, "selected_option", None), "label", "")
            selected = _pick(choices, str(option_label or "")) or _pick(choices, value)
            selected = selected or _pick(choices, str(getattr(answer, "text", "") or ""))
            selected = selected or choices[0]
        option, target = selected
        self._emit(InterviewCompleted(question=question.text, answer=option.label, duration=waited))
        return Outcome(
            status="success",
            preferred_label=option.label,
            suggested_next_ids=(target,),
            context_updates={"human.gate.selected": option.key, "human.gate.label": option.label},
        )


def _pick(choices: list[tuple[Option, str]], said: str) -> tuple[Option, str] | None:
    """The choice ``said`` names: a label, its words, its key, or the target's id."""
    if not said.strip():
        return None
    option = match_option([o for o, _ in choices], said)
    if option is not None:
        return next(c for c in choices if c[0] == option)
    return next((c for c in choices if c[1] == said.strip()), None)


class ToolHandler:
    """A tool node (§4.10): runs its ``tool_command`` in ``workspace``, only when allowed.

    Commands run as ``waygraph plan``'s shell tool runs them: under the
    kernel's confinement (:mod:`waygraph.sandbox.landlock`) to the workspace, with a
    minimal environment, no network and the node's ``timeout`` (else
    :data:`TOOL_TIMEOUT`). Where the kernel cannot confine, the command is
    refused unless ``unconfined``. The context gets ``tool.output``,
    ``tool.exit_code`` and ``tool.last_line`` (the last non-blank line); a
    non-zero exit is a FAIL.
    """

    def __init__(
        self,
        *,
        allow_commands: bool = False,
        workspace: Path | None = None,
        unconfined: bool = False,
    ) -> None:
        self.allow_commands = allow_commands
        self.workspace = workspace
        self.unconfined = unconfined

    def execute(self, node: Node, context: Context, plan: Plan, logs_root: Path) -> Outcome:
        """Run the node's ``tool_command`` when allowed; FAIL otherwise."""
        command = node.command or (node.attrs or {}).get("tool_command", "")
        if not command.strip():
            return Outcome(status="fail", failure_reason="No tool_command specified")
        if not self.allow_commands:
            return Outcome(status="fail", failure_reason=NEEDS_ALLOW_COMMANDS)
        sandboxed = not self.unconfined
        if sandboxed and landlock.abi_version() < 1:
            return Outcome(
                status="fail",
                failure_reason="this kernel cannot confine commands to the workspace "
                "(Landlock needs Linux 5.13 or newer)",
            )
        workspace = (self.workspace or Path.cwd()).resolve()
        output, code = run_shell(
            command, workspace, node.timeout or TOOL_TIMEOUT, sandboxed=sandboxed
        )
        write_text(stage_dir(logs_root, node.id) / "response.md", output)
        lines = [line.strip() for line in output.splitlines() if line.strip()]
        # tool.last_line: what the public ports' pipelines route on ("pass"/"fail").
        updates = {"tool.output": output, "tool.exit_code": code}
        updates["tool.last_line"] = lines[-1] if lines else ""
        if code != 0:
            tail = " ".join(output.split())[-400:]
            return Outcome(
                status="fail",
                failure_reason=f"exit code {code}: {tail}",
                context_updates=updates,
            )
        return Outcome(
            status="success",
            context_updates=updates,
            notes=f"Tool completed: {command}",
        )


def default_handlers(
    *,
    backend: CodergenBackend | None = None,
    interviewer: Interviewer | None = None,
    allow_commands: bool = False,
    workspace: Path | None = None,
    unconfined: bool = False,
    on_event: EventSink | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> HandlerRegistry:
    """A registry with every built-in handler (codergen the default).

    ``backend`` runs codergen stages (None: simulated), ``interviewer``
    answers human gates (default: :class:`AutoApproveInterviewer`), tool
    nodes run commands only with ``allow_commands``; ``on_event`` and
    ``sleep`` go to the handlers that report events or wait.

    Example:
        >>> sorted(default_handlers().types())[:4]
        ['checkpoint', 'codergen', 'conditional', 'escalate']
    """
    from waygraph.pipelines.stages import FanInHandler, ManagerLoopHandler, ParallelHandler

    codergen = CodergenHandler(backend)
    registry = HandlerRegistry(default=codergen)
    registry.register("start", StartHandler())
    registry.register("exit", ExitHandler())
    registry.register("checkpoint", CheckpointHandler())
    registry.register("escalate", EscalateHandler())
    registry.register("codergen", codergen)
    registry.register("conditional", ConditionalHandler())
    registry.register("wait.human", WaitForHumanHandler(interviewer, on_event))
    registry.register(
        "tool",
        ToolHandler(allow_commands=allow_commands, workspace=workspace, unconfined=unconfined),
    )
    registry.register("parallel", ParallelHandler(registry, on_event=on_event, sleep=sleep))
    registry.register("parallel.fan_in", FanInHandler(backend))
    registry.register("stack.manager_loop", ManagerLoopHandler(registry, sleep=sleep))
    return registry
