"""The small tool-calling agent loop shared by ``examples/openai_loop.py`` and ``waygraph eval``.

The agent has two tools that work inside one workspace folder: ``shell`` runs a
command there, ``write_file`` writes a file there. Before every model call the
waygraph guidance (when a plan is guiding) goes in as the last system message;
after every tool call the result goes to waygraph, which verifies it against
the current step. Without hooks the same loop is the unguided baseline.

The tools are confined to the workspace as far as a plain subprocess allows:
commands run there with a minimal environment and a timeout, their output is
cut to :data:`MAX_OUTPUT` bytes as it is read (:mod:`waygraph.sandbox.runner`), and
commands or paths that name a place outside (``..``, absolute paths, ``~``)
are refused. That keeps an honest model inside the folder; it is **not** a
security sandbox against a hostile one (use a container for that).

Example:
    >>> from pathlib import Path
    >>> confine("cat ../secrets.txt", Path("/w"))
    "refused: '../secrets.txt' leaves the workspace"
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from waygraph.chat import DEFAULT_MAX_TOKENS, ChatClient, tool_message
from waygraph.errors import LLMError
from waygraph.hooks import Hooks
from waygraph.sandbox import runner

__all__ = [
    "COMMAND_TIMEOUT",
    "MAX_OUTPUT",
    "SHELL_TOOL",
    "SYSTEM_PROMPT",
    "TOOLS",
    "WRITE_FILE_TOOL",
    "AgentResult",
    "ToolCall",
    "call_tool",
    "confine",
    "run_agent",
    "run_shell",
    "write_file",
]

SYSTEM_PROMPT = (
    "You are a careful software agent. You work only through your tools, one call at a "
    "time, inside the project folder (the current directory): `shell` runs one command, "
    "`write_file` writes a whole file. When a [waygraph] plan is shown, do exactly its "
    "current step and nothing else. When the work is done, or the plan tells you to stop, "
    "answer the user without calling a tool."
)

SHELL_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "shell",
        "description": "Run one shell command in the project folder; returns its output "
        "and exit code.",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string", "description": "The command to run."}},
            "required": ["command"],
        },
    },
}

WRITE_FILE_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "write_file",
        "description": "Write (create or replace) a text file in the project folder.",
        "parameters": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path relative to the project."},
                "content": {"type": "string", "description": "The whole new file content."},
            },
            "required": ["path", "content"],
        },
    },
}

#: Every tool the loop offers, by name.
TOOLS: dict[str, dict[str, Any]] = {"shell": SHELL_TOOL, "write_file": WRITE_FILE_TOOL}

#: Bytes of tool output sent back to the model (the rest is dropped from the middle).
MAX_OUTPUT = 8000
#: Seconds a single command may run before it and its children are killed.
COMMAND_TIMEOUT = 60.0
#: Seconds between looks at a run_shell stop event while a command runs.
STOP_POLL = runner.STOP_POLL


@dataclass
class ToolCall:
    """One tool call the agent made: the tool, its raw JSON arguments, the result."""

    tool: str
    arguments: str
    output: str
    exit_code: int | None


@dataclass
class AgentResult:
    """How a run ended.

    ``answer``: the model's final text (None when the step budget ran out);
    ``steps``: every tool call; ``run``: waygraph's run record (None without a
    plan); ``tokens``: total tokens the server reported; ``model_calls``: the
    chat requests made; ``messages``: the conversation (without the guidance),
    to carry on with the user's next message (``run_agent(..., history=...)``);
    ``awaits_user``: the run stopped to wait for the user (the model asked
    something, or the plan's step is a person's to decide); ``error``: the
    model server failed and the run stopped there (the counts are kept).
    """

    answer: str | None
    steps: list[ToolCall] = field(default_factory=list)
    run: dict[str, Any] | None = None
    tokens: int = 0
    model_calls: int = 0
    messages: list[dict[str, Any]] = field(default_factory=list)
    awaits_user: bool = False
    #: The prompt and completion parts of ``tokens``.
    prompt_tokens: int = 0
    completion_tokens: int = 0
    #: How tools reached the model on the last call (``native`` or ``text``).
    tool_protocol: str = "native"
    #: Why the run stopped early: the model server failed (one line); None otherwise.
    error: str | None = None


def confine(command: str, workspace: Path) -> str | None:
    """Why ``command`` may not run in ``workspace`` (None when it may).

    Example:
        >>> confine("cat ../secrets.txt", Path("/w"))
        "refused: '../secrets.txt' leaves the workspace"
        >>> confine("pytest -q tests", Path("/w")) is None
        True
        >>> confine("grep -c '/$' routes.txt", Path("/w")) is None  # not a real place
        True
    """
    try:
        words = shlex.split(command)
    except ValueError as exc:
        return f"refused: cannot parse the command ({exc})"
    root = workspace.resolve()
    for word in words:
        for part in word.replace("=", " ").split():
            if part == "/dev/null":
                continue
            if part.startswith("~"):
                return f"refused: {part!r} leaves the workspace"
            if part.startswith("/") and not _names_a_place(part):
                # Not a path on this machine: an API route ("/users/1") or a regex ("/$").
                continue
            if part.startswith("/") or ".." in Path(part).parts:
                target = (root / part).resolve()
                if target != root and root not in target.parents:
                    return f"refused: {part!r} leaves the workspace"
    return None


def _names_a_place(part: str) -> bool:
    """True when the absolute path ``part`` starts at a folder or file that exists."""
    top = Path(part).parts[1:2]
    return not top or Path("/", top[0]).exists()


def run_shell(
    command: str,
    workspace: Path,
    timeout: float = COMMAND_TIMEOUT,
    *,
    stop: threading.Event | None = None,
    sandboxed: bool = False,
    network: bool = False,
) -> tuple[str, int]:
    """Run ``command`` in ``workspace``; return (output, exit code).

    Exit code 126: refused (it is empty, or it leaves the workspace); 124: timed out; 130:
    stopped because ``stop`` was set (the command and its children are killed).
    With ``sandboxed``, the kernel confines the command to the workspace and a
    private temporary folder (:mod:`waygraph.sandbox.landlock`), and without
    ``network`` it cannot open internet or UNIX sockets; the caller checks
    first that confinement is available.

    Example:
        >>> import tempfile
        >>> run_shell("echo hi", Path(tempfile.gettempdir()))
        ('hi\\n', 0)
    """
    if not command.strip():
        # Exit 0 from nothing would pass for a step's evidence (it did in the demo).
        return 'bad arguments: the command is empty; expected {"command": "..."}', 126
    # Under the kernel's confinement its rules decide (reading /usr is fine);
    # without it, a command that names a place outside is refused up front.
    refusal = None if sandboxed else confine(command, workspace)
    if refusal is not None:
        return refusal, 126
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(workspace),
        "LANG": "C.UTF-8",
        # Commits made by the agent must not pick up the host's git settings.
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    if not sandboxed:
        return _run(command, workspace, env, timeout, stop)
    from waygraph.sandbox import landlock

    with tempfile.TemporaryDirectory(prefix="waygraph-sandbox-") as tmp:
        # `python3` is the interpreter waygraph runs on (shims in the home
        # folder are out of reach), and temporary files go to the private folder.
        env["PATH"] = os.pathsep.join((os.path.dirname(sys.executable), env["PATH"]))
        env["TMPDIR"] = tmp
        argv = landlock.command_line(str(workspace.resolve()), tmp, command, network=network)
        return _run(argv, workspace, env, timeout, stop)


def _run(
    command: str | list[str],
    workspace: Path,
    env: dict[str, str],
    timeout: float,
    stop: threading.Event | None,
) -> tuple[str, int]:
    # The one runner: output bounded as it is read, and the command's whole tree
    # (detached children included) killed at the deadline, at stop and on exit.
    result = runner.run(
        command, cwd=workspace, env=env, timeout=timeout, stop=stop, keep=MAX_OUTPUT // 2
    )
    if result.stopped:
        return "stopped: the run was interrupted", runner.EXIT_STOPPED
    if result.timed_out:
        return f"timed out after {timeout:g}s", runner.EXIT_TIMEOUT
    return result.output, result.exit_code


def inside(path: str, workspace: Path) -> Path | None:
    """``path`` resolved inside ``workspace``, or None when it leaves it (or names the folder).

    Example:
        >>> inside("../x.txt", Path("/w")) is None, inside(".", Path("/w")) is None
        (True, True)
        >>> inside("a/b.txt", Path("/w"))
        PosixPath('/w/a/b.txt')
    """
    if not path or path.startswith("~") or Path(path).is_absolute():
        return None
    root = workspace.resolve()
    target = (root / path).resolve()
    return target if root in target.parents else None


def write_file(path: str, content: str, workspace: Path) -> tuple[str, int]:
    """Write ``content`` to ``path`` inside ``workspace``; return (message, exit code).

    Example:
        >>> import tempfile
        >>> write_file("../x.txt", "hi", Path(tempfile.gettempdir()))
        ("refused: '../x.txt' leaves the workspace", 126)
    """
    target = inside(path, workspace)
    if target is None:
        return f"refused: {path!r} leaves the workspace", 126
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    except OSError as exc:
        return f"cannot write {path}: {exc.strerror or exc}", 1
    lines = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
    return f"wrote {path} ({lines} lines, {len(content.encode())} bytes)", 0


def call_tool(
    name: str,
    arguments: str,
    workspace: Path,
    *,
    tools: Sequence[str] = tuple(TOOLS),
    timeout: float = COMMAND_TIMEOUT,
) -> tuple[str, int | None]:
    """Run the tool call ``name(arguments)`` (arguments as the model sent them: JSON text).

    Bad calls (an unknown tool, arguments that are not what the tool takes, an
    empty command, a command or path that leaves the workspace) are answered
    with a message the model can act on and no exit code (None: nothing ran,
    so nothing for a step to be judged on), never raised.
    """
    if name not in tools:
        return f"unknown tool {name!r}; the tools are: {', '.join(tools)}", None
    try:
        args = json.loads(arguments or "{}")
    except ValueError:
        args = None
    if not isinstance(args, dict):
        args = {}
    if name == "shell":
        command = args.get("command")
        if not isinstance(command, str) or not command.strip():
            return 'bad arguments: expected {"command": "..."}', None
        refusal = confine(command, workspace)
        if refusal is not None:
            return refusal, None  # refused before it ran: nothing to judge
        return run_shell(command, workspace, timeout)
    path, content = args.get("path"), args.get("content")
    if not isinstance(path, str) or not isinstance(content, str):
        return 'bad arguments: expected {"path": "...", "content": "..."}', None
    if inside(path, workspace) is None:
        return f"refused: {path!r} leaves the workspace", None
    return write_file(path, content, workspace)


def run_agent(
    task: str,
    *,
    client: Any,
    model: str,
    workspace: Path,
    hooks: Hooks | None = None,
    max_steps: int = 30,
    tools: Sequence[str] = tuple(TOOLS),
    system_prompt: str = SYSTEM_PROMPT,
    command_timeout: float = COMMAND_TIMEOUT,
    pushbacks: int = 2,
    history: Sequence[Mapping[str, Any]] | None = None,
    max_tokens: int | None = DEFAULT_MAX_TOKENS,
    tool_protocol: str = "auto",
    context_tokens: int | None = None,
) -> AgentResult:
    """Work on ``task`` with ``client`` until the model answers.

    ``client`` is a :class:`~waygraph.chat.ChatClient` or an ``openai.OpenAI``
    (then asked through a ChatClient with ``max_tokens``, ``tool_protocol``
    and ``context_tokens``; see :mod:`waygraph.chat`). ``max_steps`` bounds
    the model calls. With ``hooks``, the waygraph guidance goes in as the
    last system message before every model call and every tool result goes
    to waygraph with its exit code and arguments; without, this is a plain
    tool-calling loop. The model's own words are reported as what they are,
    claims (never evidence): an answer given while the plan is unfinished is
    recorded as ``claim_unverified`` and, up to ``pushbacks`` times, the
    model is sent back to work with the guidance naming the steps still
    unverified. An answer that asks the user something is no claim: the run
    waits for the user (``awaits_user``), and the loop ends there. The user's
    reply carries the conversation on: pass it as ``task`` with the previous
    result's ``messages`` as ``history``. A model server that fails ends the
    run with ``error`` set to one line saying so, and the counts of what the
    run did kept.
    """
    chat = (
        client
        if isinstance(client, ChatClient)
        else ChatClient(
            model=model,
            client=client,
            max_tokens=max_tokens,
            tool_protocol=tool_protocol,
            context_tokens=context_tokens,
        )
    )
    messages: list[dict[str, Any]] = (
        [dict(m) for m in history] if history else [{"role": "system", "content": system_prompt}]
    )
    messages.append({"role": "user", "content": task})
    if hooks is not None:
        hooks.on_user_message(task)
    schemas = [TOOLS[name] for name in tools]
    result = AgentResult(answer=None)
    for _ in range(max_steps):
        guidance = hooks.context_for_model() if hooks is not None else None
        # Guidance is per call, not history: only the current step is shown.
        extra = [{"role": "system", "content": guidance}] if guidance else []
        try:
            reply = chat.ask(messages + extra, schemas)
        except LLMError as exc:
            result.error = str(exc)
            break
        result.model_calls += 1
        result.tokens += reply.total_tokens
        result.prompt_tokens += reply.prompt_tokens
        result.completion_tokens += reply.completion_tokens
        result.tool_protocol = reply.protocol
        if hooks is not None and reply.content.strip():
            hooks.on_model_reply(reply.content, final=not reply.calls)
        messages.append(reply.message())
        if not reply.calls:
            result.answer = reply.content
            record = hooks.state() if hooks is not None else None
            if record is None or record.get("status") != "running":
                break
            if record.get("awaiting") == "user":
                # A question (or a person's step): only the user's reply goes on from here.
                result.awaits_user = True
                break
            if pushbacks <= 0:
                break
            # Done in words only: the plan is unfinished, so back to work once more.
            pushbacks -= 1
            continue
        for call in reply.calls:
            output, code = (
                call_tool(
                    call.name, call.arguments, workspace, tools=tools, timeout=command_timeout
                )
                if call.runnable
                else (call.problem or "", None)
            )
            result.steps.append(ToolCall(call.name, call.arguments, output, code))
            if code is None:
                # A malformed call ran nothing: asked again, and never evidence (a
                # verification it failed would cost the step an attempt for nothing).
                messages.append(tool_message(replace(call, args=None, problem=output), ""))
                continue
            messages.append(tool_message(call, f"exit code {code}\n{output}"))
            if hooks is not None:
                hooks.on_tool_result(
                    output,
                    tool_name=call.name,
                    exit_code=code,
                    call_id=call.id,
                    tool_args=call.args,
                )
    result.run = hooks.state() if hooks is not None else None
    result.messages = messages
    if chat is not client:
        chat.close()
    return result
