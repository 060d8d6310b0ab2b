"""Who does a codergen stage's work: the :class:`CodergenBackend` interface (§4.5) and
waygraph's own agent, :class:`AgentBackend`.

A backend gets the node, its rendered prompt and the run's context and
returns the response text (the stage succeeded) or an
:class:`~waygraph.pipelines.outcome.Outcome`. :class:`AgentBackend` is
waygraph's tool-calling agent loop against any OpenAI-compatible endpoint:
the model works through ``shell``, ``read_file`` and ``write_file`` tools
confined to one workspace folder as ``waygraph plan``'s are (commands under
the kernel's Landlock confinement, no network; paths outside refused), and
its final answer is the response. The node's ``llm_model`` (set in the DOT
file or by the model stylesheet) overrides the backend's model.

Example:
    >>> class Echo:
    ...     def run(self, node, prompt, context):
    ...         return f"did: {prompt}"
    >>> isinstance(Echo(), CodergenBackend)
    True
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from waygraph.chat import DEFAULT_MAX_TOKENS, ChatClient, tool_message
from waygraph.eval.loop import inside, run_shell, write_file
from waygraph.pipelines.outcome import Outcome
from waygraph.sandbox import landlock
from waygraph.sandbox.safe_files import read_regular_file

if TYPE_CHECKING:
    from waygraph.model import Node
    from waygraph.pipelines.context import Context

__all__ = ["AGENT_SYSTEM_PROMPT", "AGENT_TOOLS", "AgentBackend", "CodergenBackend"]

AGENT_SYSTEM_PROMPT = (
    "You are a careful software agent working on one stage of a pipeline. You work only "
    "through your tools, one call at a time, inside the project folder (the current "
    "directory): `shell` runs one command, `read_file` reads a file, `write_file` writes a "
    "whole file. When the stage's work is done, answer with a short summary of what you did "
    "and call no tool."
)


def _tool(name: str, description: str, **params: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {k: {"type": "string", "description": v} for k, v in params.items()},
                "required": list(params),
            },
        },
    }


#: The tools the agent is offered (OpenAI function-calling schemas).
AGENT_TOOLS: tuple[dict[str, Any], ...] = (
    _tool("shell", "Run one shell command in the project folder.", command="The command."),
    _tool("read_file", "Read a text file of the project.", path="Path relative to the project."),
    _tool(
        "write_file",
        "Write (create or replace) a text file of the project.",
        path="Path relative to the project.",
        content="The whole new content.",
    ),
)
_READ_LIMIT = 1_000_000


@runtime_checkable
class CodergenBackend(Protocol):
    """Runs a codergen stage's prompt (§4.5)."""

    def run(self, node: Node, prompt: str, context: Context) -> str | Outcome:
        """The response text, or the stage's outcome."""
        ...


class AgentBackend:
    """waygraph's agent loop as a codergen backend, against ``llm_url`` (OpenAI-compatible).

    ``model`` is the default model (a node's ``llm_model`` wins);
    ``workspace`` the folder the tools work in (created when missing);
    ``max_steps`` bounds model calls per stage (then the stage FAILs);
    ``command_timeout`` bounds each command; a node's ``timeout`` bounds its
    whole stage (model calls and commands; past it the stage FAILs; ``clock``
    is injectable for tests). Where the kernel cannot confine
    commands the ``shell`` tool refuses them unless ``unconfined``. Requests
    go through :class:`~waygraph.chat.ChatClient` with ``max_tokens``,
    ``tool_protocol`` and ``context_tokens``. Model server errors propagate
    (:class:`~waygraph.errors.LLMError`, caused by the server's error), so
    the runner retries transient ones (§3.6). ``client`` replaces the
    ``openai.OpenAI`` client (tests).
    """

    def __init__(
        self,
        llm_url: str | None,
        model: str,
        workspace: Path,
        *,
        api_key: str | None = None,
        max_steps: int = 30,
        command_timeout: float = 120.0,
        unconfined: bool = False,
        system_prompt: str = AGENT_SYSTEM_PROMPT,
        client: Any = None,
        clock: Callable[[], float] = time.monotonic,
        max_tokens: int | None = DEFAULT_MAX_TOKENS,
        tool_protocol: str = "auto",
        context_tokens: int | None = None,
    ) -> None:
        self.model = model
        self.max_tokens = max_tokens
        self.tool_protocol = tool_protocol
        self.context_tokens = context_tokens
        self._clock = clock
        self.workspace = workspace
        self.max_steps = max_steps
        self.command_timeout = command_timeout
        self.unconfined = unconfined
        self.system_prompt = system_prompt
        self._client = client
        self._url = llm_url
        self._api_key = api_key

    def _openai(self) -> Any:
        if self._client is None:
            from waygraph._extras import require

            openai = require("llm", "openai", purpose="AgentBackend")
            # The runner owns retries (§3.6): the client's own would hide transient errors.
            self._client = openai.OpenAI(
                base_url=self._url, api_key=self._api_key or "none", max_retries=0
            )
        return self._client

    def run(self, node: Node, prompt: str, context: Context) -> str | Outcome:
        """Work on ``prompt`` until the model answers without a tool call."""
        self.workspace.mkdir(parents=True, exist_ok=True)
        model = (node.attrs or {}).get("llm_model") or self.model
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": self.system_prompt},
            {"role": "user", "content": prompt},
        ]
        chat = ChatClient(
            model=model,
            client=self._openai(),
            max_tokens=self.max_tokens,
            tool_protocol=self.tool_protocol,
            context_tokens=self.context_tokens,
        )
        deadline = self._clock() + node.timeout if node.timeout else None
        for _ in range(self.max_steps):
            left: float | None = None
            if deadline is not None:
                left = deadline - self._clock()
                if left <= 0:
                    return Outcome(
                        status="fail",
                        failure_reason=f"the stage ran past its timeout of {node.timeout:g}s",
                    )
            reply = chat.ask(messages, AGENT_TOOLS, timeout=left)
            if not reply.calls:
                return reply.content
            messages.append(reply.message())
            seconds = min(self.command_timeout, left if left is not None else self.command_timeout)
            for call in reply.calls:
                output = self._call(call.name, call.arguments, seconds) if call.runnable else ""
                messages.append(tool_message(call, output))
        return Outcome(
            status="fail",
            failure_reason=f"the agent did not finish in {self.max_steps} model calls",
        )

    def _call(self, name: str, arguments: str, seconds: float) -> str:
        """One tool call's result as the model reads it (bad calls answered, never raised)."""
        try:
            args = json.loads(arguments or "{}")
        except ValueError:
            args = None
        if not isinstance(args, dict):
            return 'bad arguments: expected a JSON object such as {"path": "..."}'
        if name == "shell":
            return self._shell(args, seconds)
        tools: dict[str, Callable[[dict[str, Any]], str]] = {
            "read_file": self._read,
            "write_file": self._write,
        }
        tool = tools.get(name)
        if tool is None:
            return f"unknown tool {name!r}; the tools are: shell, read_file, write_file"
        return tool(args)

    def _shell(self, args: dict[str, Any], seconds: float) -> str:
        command = args.get("command")
        if not isinstance(command, str) or not command.strip():
            return 'bad arguments: expected {"command": "..."}'
        sandboxed = not self.unconfined
        if sandboxed and landlock.abi_version() < 1:
            return "not run: this kernel cannot confine commands to the workspace"
        output, code = run_shell(command, self.workspace.resolve(), seconds, sandboxed=sandboxed)
        return f"exit code {code}\n{output}"

    def _read(self, args: dict[str, Any]) -> str:
        path = args.get("path")
        target = inside(path, self.workspace) if isinstance(path, str) else None
        if target is None:
            return f"refused: {path!r} leaves the workspace"
        if not target.is_file():
            return f"no file {path!r} in the workspace"
        try:
            data = read_regular_file(target, limit=_READ_LIMIT)
        except OSError as exc:
            return f"cannot read {path!r}: {exc}"
        return data.decode("utf-8", errors="replace")

    def _write(self, args: dict[str, Any]) -> str:
        path, content = args.get("path"), args.get("content")
        if not isinstance(path, str) or not isinstance(content, str):
            return 'bad arguments: expected {"path": "...", "content": "..."}'
        return write_file(path, content, self.workspace)[0]
