"""Tools: plain Python functions or async functions the plan's steps call.

A tool's parameter schema comes from its signature (types checked and coerced
by pydantic); its description from the docstring. A parameter annotated
:class:`StepContext` is not shown to the model: it receives the running
step's context (earlier results, the execution model with token counting, a
way to report new information).

Example:
    >>> def add(a: int, b: int = 0) -> int:
    ...     '''Add two numbers.'''
    ...     return a + b
    >>> tool = Tool(add)
    >>> tool.name, tool.description, tool.parameters_schema["required"]
    ('add', 'Add two numbers.', ['a'])
    >>> tool.check_parameters({"a": "x", "c": 1})
    ["parameter 'a': Input should be a valid integer, unable to parse string as an integer \
(got 'x')", "unknown parameter 'c'; add takes: a, b"]
"""

from __future__ import annotations

import asyncio
import inspect
import typing
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NotRequired, Required

from pydantic import ConfigDict, TypeAdapter, ValidationError
from typing_extensions import TypedDict

from waygraph.errors import ToolDefinitionError
from waygraph.planning._llm import LLM, LLMResponse, Message
from waygraph.planning._models import DECOMPOSE, PlanStep, TokenUsage
from waygraph.planning._references import find_references

__all__ = ["StepContext", "Tool", "ToolRegistry"]


@dataclass
class StepContext:
    """What a tool can ask about the step it runs for.

    Declare a parameter annotated ``StepContext`` to receive it. ``results``
    maps the ids of finished steps to their outputs. :meth:`complete` calls
    the execution model and counts its tokens for the step and the run.

    Example:
        >>> async def summarize(text: str, ctx: StepContext) -> str:
        ...     reply = await ctx.complete([{"role": "user", "content": "Summarize: " + text}])
        ...     if "deprecated" in reply.text:
        ...         ctx.report_new_information("the API is deprecated")
        ...     return reply.text
    """

    step: PlanStep
    goal: str
    results: Mapping[str, Any]
    llm: LLM | None = None
    depth: int = 0
    token_usage: TokenUsage = field(default_factory=TokenUsage)
    new_information: list[str] = field(default_factory=list)

    async def complete(
        self, messages: Sequence[Message], *, json_schema: Mapping[str, Any] | None = None
    ) -> LLMResponse:
        """Call the execution model; the tokens count toward the step and the run."""
        if self.llm is None:
            raise RuntimeError("this step has no execution model to call")
        reply = await self.llm.complete(messages, json_schema=json_schema)
        self.report_tokens(reply.usage)
        return reply

    def report_tokens(self, usage: TokenUsage | int) -> None:
        """Count tokens a tool spent some other way (an int counts as completion tokens)."""
        if isinstance(usage, int):
            usage = TokenUsage(completion_tokens=usage)
        self.token_usage = self.token_usage + usage

    def report_new_information(self, message: str) -> None:
        """Tell the agent the plan may need revising (a revision trigger)."""
        self.new_information.append(message)


def _is_context(annotation: Any) -> bool:
    return annotation is StepContext or annotation == "StepContext"


class Tool:
    """A function a step can call, with its parameter schema and flags.

    ``side_effects=True`` marks a tool whose identical calls must all run
    (they are never answered from an earlier call's result).

    Example:
        >>> async def write_file(path: str, text: str) -> str:
        ...     '''Write text to a file.'''
        ...     return path
        >>> Tool(write_file, side_effects=True).is_async
        True
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        side_effects: bool = False,
    ) -> None:
        if not callable(fn):
            raise ToolDefinitionError(f"a tool must be callable, not {type(fn).__name__}")
        self.fn = fn
        self.name = name or getattr(fn, "__name__", "") or type(fn).__name__
        if self.name == DECOMPOSE:
            raise ToolDefinitionError(
                f"the tool name {DECOMPOSE!r} is reserved for hierarchical planning; "
                "register the function under another name: Tool(fn, name='...')"
            )
        doc = inspect.getdoc(fn) or ""
        self.description = description or doc.split("\n\n")[0].replace("\n", " ").strip()
        self.side_effects = side_effects
        # An object with an async __call__ is an async tool too.
        self.is_async = inspect.iscoroutinefunction(fn) or (
            not inspect.isroutine(fn) and inspect.iscoroutinefunction(type(fn).__call__)
        )
        self._analyse_signature()

    def _analyse_signature(self) -> None:
        try:
            signature = inspect.signature(self.fn)
        except (TypeError, ValueError) as exc:
            raise ToolDefinitionError(f"tool {self.name!r}: cannot read its signature") from exc
        try:
            hints = typing.get_type_hints(self.fn, include_extras=True)
        except Exception:
            # Unresolvable annotations: fall back to the raw ones (strings are treated as Any).
            hints = {}
        self.context_parameter: str | None = None
        self.accepts_extra = False
        self.required: list[str] = []
        self.parameter_names: list[str] = []
        self._adapters: dict[str, TypeAdapter[Any]] = {}
        fields: dict[str, Any] = {}
        for param in signature.parameters.values():
            annotation = hints.get(param.name, param.annotation)
            if _is_context(annotation):
                self.context_parameter = param.name
                continue
            if param.kind is param.VAR_POSITIONAL:
                raise ToolDefinitionError(
                    f"tool {self.name!r} takes *{param.name}; plan steps pass arguments by "
                    "name, so give every parameter a name"
                )
            if param.kind is param.POSITIONAL_ONLY:
                raise ToolDefinitionError(
                    f"tool {self.name!r}: parameter {param.name!r} is positional-only; "
                    "plan steps pass arguments by name"
                )
            if param.kind is param.VAR_KEYWORD:
                self.accepts_extra = True
                continue
            if annotation is inspect.Parameter.empty or isinstance(annotation, str):
                annotation = Any
            self.parameter_names.append(param.name)
            self._adapters[param.name] = TypeAdapter(annotation)
            if param.default is inspect.Parameter.empty:
                self.required.append(param.name)
                fields[param.name] = Required[annotation]
            else:
                fields[param.name] = NotRequired[annotation]
        shape = TypedDict(f"{self.name}_parameters", fields)  # type: ignore[misc]
        # Unknown names are reported by check_parameters; the call passes extras through.
        shape.__pydantic_config__ = ConfigDict(arbitrary_types_allowed=True)  # type: ignore[attr-defined]
        self._shape: TypeAdapter[Any] = TypeAdapter(shape)

    @property
    def parameters_schema(self) -> dict[str, Any]:
        """The JSON Schema of the parameters (shown to the planning model)."""
        try:
            schema = self._shape.json_schema()
        except Exception:
            # A type pydantic cannot describe (an arbitrary class): name the fields only.
            schema = {
                "type": "object",
                "properties": {n: {} for n in self.parameter_names},
                "required": list(self.required),
            }
        schema.pop("title", None)
        schema.setdefault("required", [])
        if self.accepts_extra:
            schema["additionalProperties"] = True
        return schema

    def check_parameters(
        self, parameters: Mapping[str, Any], known_steps: Collection[str] = ()
    ) -> list[str]:
        """Problems with calling this tool with ``parameters``, before any step ran.

        Values holding a ``$step`` reference are only checked for presence:
        their type is known once the referenced step has run.
        """
        return self._checked(parameters, known_steps, {})

    def _checked(
        self,
        parameters: Mapping[str, Any],
        known_steps: Collection[str] | None,
        into: dict[str, Any],
    ) -> list[str]:
        """The problems of ``parameters``; each value that fits goes into ``into``, coerced.

        Values holding a reference (``${id}``, or ``$id`` of one of
        ``known_steps``) are only checked for presence; ``None``: references
        were resolved, every value is checked.
        """
        problems: list[str] = []
        for name in self.required:
            if name not in parameters:
                problems.append(f"missing required parameter {name!r} of {self.name}")
        for name, value in parameters.items():
            adapter = self._adapters.get(name)
            if adapter is None:
                if not self.accepts_extra:
                    takes = ", ".join(self.parameter_names) or "no parameters"
                    problems.append(f"unknown parameter {name!r}; {self.name} takes: {takes}")
                into[name] = value
                continue
            if known_steps is not None and find_references(value, known_steps):
                continue
            try:
                into[name] = adapter.validate_python(value)
            except ValidationError as exc:
                problems.append(f"parameter {name!r}: {_first_error(exc)} (got {value!r})")
        return problems

    def bind(self, parameters: Mapping[str, Any]) -> dict[str, Any]:
        """Validate and coerce resolved parameters into keyword arguments.

        Every value is checked once, as it is (references were resolved
        before: text that still looks like one is text). Raises
        ``ValueError`` naming the parameter when a value does not fit.
        """
        kwargs: dict[str, Any] = {}
        problems = self._checked(parameters, None, kwargs)
        if problems:
            raise ValueError(f"{self.name}: " + "; ".join(problems))
        return kwargs

    async def call(self, parameters: Mapping[str, Any], context: StepContext | None = None) -> Any:
        """Call the tool: async functions are awaited, others run in a worker thread."""
        kwargs = self.bind(parameters)
        if self.context_parameter is not None:
            kwargs[self.context_parameter] = context
        if self.is_async:
            return await self.fn(**kwargs)
        # A worker thread keeps the event loop (and the other steps) running.
        result = await asyncio.to_thread(self.fn, **kwargs)
        if inspect.isawaitable(result):
            result = await result
        return result

    def signature_text(self) -> str:
        """``name(a: integer, b?: integer)`` for prompts."""
        props = self.parameters_schema.get("properties", {})
        parts = []
        for name in self.parameter_names:
            prop = props.get(name, {})
            kind = prop.get("type") or prop.get("$ref", "any").rsplit("/", 1)[-1]
            mark = "" if name in self.required else "?"
            parts.append(f"{name}{mark}: {kind}")
        if self.accepts_extra:
            parts.append("...")
        return f"{self.name}({', '.join(parts)})"

    def __repr__(self) -> str:
        flag = ", side_effects=True" if self.side_effects else ""
        return f"Tool({self.signature_text()}{flag})"


def _first_error(exc: ValidationError) -> str:
    errors = exc.errors()
    return errors[0]["msg"] if errors else str(exc)


class ToolRegistry(Mapping[str, Tool]):
    """Tools by name. Accepts functions and :class:`Tool` objects.

    Example:
        >>> def ping() -> str:
        ...     return "pong"
        >>> registry = ToolRegistry([ping], side_effect_tools={"ping"})
        >>> registry["ping"].side_effects
        True
    """

    def __init__(
        self,
        tools: Iterable[Callable[..., Any] | Tool] = (),
        *,
        side_effect_tools: Collection[str] = (),
    ) -> None:
        self._tools: dict[str, Tool] = {}
        for item in tools:
            self.register(item)
        unknown = set(side_effect_tools) - set(self._tools)
        if unknown:
            raise ToolDefinitionError(
                f"side_effect_tools names unknown tools: {', '.join(sorted(unknown))}; "
                f"registered: {', '.join(self._tools) or 'none'}"
            )
        for name in side_effect_tools:
            self._tools[name].side_effects = True

    def register(self, tool: Callable[..., Any] | Tool) -> Tool:
        """Add a tool (a function is wrapped in :class:`Tool`); names must be unique."""
        if not isinstance(tool, Tool):
            tool = Tool(tool)
        if tool.name in self._tools:
            raise ToolDefinitionError(
                f"two tools are named {tool.name!r}; give one another name: Tool(fn, name=...)"
            )
        self._tools[tool.name] = tool
        return tool

    def __getitem__(self, name: str) -> Tool:
        return self._tools[name]

    def __iter__(self) -> typing.Iterator[str]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)
