"""How the guidance is worded for one host: its tool names, and full or compact text.

Plans name tools as Agent-Zero does (``tool: code_execution_tool``). A host
whose tools are called otherwise tells waygraph their names, and the
guidance then names the host's tool, never one the host lacks:

- a mapping from a plan's tool name to the host's
  (``{"code_execution_tool": "run_command"}``): the plan's tool is shown
  under the host's name; a plan tool the mapping does not name is shown
  only when it is one of the host's tools (one of the mapping's values);
- a list of the host's tool names (``["run_command", "write_file"]``): a
  plan tool in the list is shown as it is.

A plan tool the host does not have is not named: the ``Tool:`` line says
what the step needs instead, from :data:`TOOL_NEEDS` (``code_execution_tool``
→ "Tool: one that runs a shell command"), and is left out for a tool that
table does not know. Without ``tools`` the plan's own names are shown.

``guidance`` picks the style: ``"full"`` (the default) is the whole
workflow view; ``"compact"`` is the current step's action, its check and
what failed last, within :data:`COMPACT_TOKENS` tokens, for models with a
small context.

:class:`GuidanceStyle` is the one value that carries both; the Navigator
builds it from its ``tools=`` and ``guidance=`` arguments and
:func:`waygraph.render.context` takes it as a parameter (rendering stays
pure).

Example:
    >>> style = GuidanceStyle.of("compact", tools=["run_command"])
    >>> style.compact, style.tool_text("code_execution_tool")
    (True, 'one that runs a shell command')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass
from types import MappingProxyType
from typing import TypeAlias

from waygraph.errors import ConfigError

__all__ = [
    "COMPACT_TOKENS",
    "STYLES",
    "TOOL_NEEDS",
    "GuidanceStyle",
    "HostTools",
    "ToolsSpec",
]

#: The guidance styles: the whole workflow view, or the current step only.
STYLES: tuple[str, ...] = ("full", "compact")
#: The most tokens (about four characters each) compact guidance takes.
COMPACT_TOKENS = 120

#: What the host says about its tools: plan tool → host tool, or the host's names.
ToolsSpec: TypeAlias = Mapping[str, str] | Sequence[str] | Set[str] | None

#: What a step needs, in words, for Agent-Zero's tool names: the ``Tool:``
#: line a host without that tool gets ("Tool: one that runs a shell command").
TOOL_NEEDS: Mapping[str, str] = MappingProxyType(
    {
        "code_execution_tool": "one that runs a shell command",
        "response": "none: write it in your reply to the user",
        "input": "one that types into the running program",
        "search_engine": "one that searches the web",
        "knowledge_tool": "one that searches the web",
        "webpage_content_tool": "one that reads a web page",
        "browser_agent": "one that reads a web page",
        "document_query": "one that reads a document",
        "memory_load": "one that recalls a memory",
        "memory_save": "one that saves a memory",
        "call_subordinate": "one that hands work to another agent",
        "notify_user": "one that sends the user a message",
        "scheduler": "one that schedules a task",
    }
)


def _name(value: object, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"tools: every {what} must be a non-empty string, not {value!r}")
    return value.strip()


@dataclass(frozen=True)
class HostTools:
    """The host's tool names, and the host's name for each plan tool it renamed.

    Build one with :meth:`of`. ``renames`` pairs a plan's tool name with the
    host's; ``names`` are the tools the host has.

    Example:
        >>> tools = HostTools.of({"code_execution_tool": "run_command"})
        >>> tools.name_for("code_execution_tool"), tools.name_for("response")
        ('run_command', None)
    """

    renames: tuple[tuple[str, str], ...] = ()
    names: frozenset[str] = frozenset()

    @classmethod
    def of(cls, tools: ToolsSpec) -> HostTools | None:
        """The host tools ``tools`` describes (None for None); ConfigError when malformed.

        Example:
            >>> HostTools.of(["shell", "write_file"]).names == {"shell", "write_file"}
            True
        """
        if tools is None:
            return None
        if isinstance(tools, Mapping):
            renames = tuple(
                (_name(plan_tool, "plan tool name"), _name(host_tool, "host tool name"))
                for plan_tool, host_tool in tools.items()
            )
            return cls(renames=renames, names=frozenset(host for _, host in renames))
        if isinstance(tools, str | bytes) or not isinstance(tools, Sequence | Set):
            raise ConfigError(
                "tools must be a mapping from the plan's tool names to the host's, or a "
                f"list of the host's tool names, not {tools!r}"
            )
        return cls(names=frozenset(_name(t, "tool name") for t in tools))

    def name_for(self, plan_tool: str) -> str | None:
        """The host's name for ``plan_tool``, or None when the host lacks it.

        Example:
            >>> HostTools.of(["write_file"]).name_for("write_file")
            'write_file'
        """
        for plan_name, host_name in self.renames:
            if plan_name == plan_tool:
                return host_name
        return plan_tool if plan_tool in self.names else None

    def tool_text(self, plan_tool: str) -> str | None:
        """What the ``Tool:`` line says for ``plan_tool``: the host's name, the need, or None.

        Example:
            >>> HostTools.of(["shell"]).tool_text("code_execution_tool")
            'one that runs a shell command'
            >>> HostTools.of(["shell"]).tool_text("mystery_tool") is None
            True
        """
        return self.name_for(plan_tool) or TOOL_NEEDS.get(plan_tool)


@dataclass(frozen=True)
class GuidanceStyle:
    """How guidance is worded: ``style`` (``"full"`` or ``"compact"``) and the host's ``tools``.

    The default value is today's full text with the plan's own tool names.

    Example:
        >>> GuidanceStyle().tool_text("code_execution_tool")
        'code_execution_tool'
        >>> GuidanceStyle.of(tools={"code_execution_tool": "shell"}).tool_text(
        ...     "code_execution_tool")
        'shell'
    """

    style: str = "full"
    tools: HostTools | None = None

    @classmethod
    def of(cls, guidance: str = "full", tools: ToolsSpec = None) -> GuidanceStyle:
        """The style for a Navigator's ``guidance=`` and ``tools=`` arguments, checked.

        A style not in :data:`STYLES` or malformed ``tools`` raise
        :class:`~waygraph.errors.ConfigError` (a ValueError) naming the argument.

        Example:
            >>> GuidanceStyle.of("tiny")
            Traceback (most recent call last):
            ...
            waygraph.errors.ConfigError: guidance must be one of 'full', 'compact', not 'tiny'
        """
        if guidance not in STYLES:
            allowed = ", ".join(repr(s) for s in STYLES)
            raise ConfigError(f"guidance must be one of {allowed}, not {guidance!r}")
        return cls(style=guidance, tools=HostTools.of(tools))

    @property
    def compact(self) -> bool:
        """True for the compact style (the current step only).

        Example:
            >>> GuidanceStyle.of("compact").compact
            True
        """
        return self.style == "compact"

    def tool_text(self, plan_tool: str) -> str | None:
        """What the ``Tool:`` line says for ``plan_tool`` (None: leave the line out).

        Example:
            >>> GuidanceStyle.of(tools=["write_file"]).tool_text("mystery_tool") is None
            True
        """
        return plan_tool if self.tools is None else self.tools.tool_text(plan_tool)


#: The full style with the plan's own tool names: what ``render.context`` gives by default.
FULL = GuidanceStyle()
