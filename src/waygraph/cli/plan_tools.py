"""The tools ``waygraph plan`` gives the model: a workspace's shell and files, and yours.

``shell``, ``write_file`` and ``read_file`` are confined to one folder (the
confinement of :mod:`waygraph.eval.loop`); ``--tools MODULE[:ATTR]`` adds
functions from a Python module.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from waygraph.cli.user_code import load_user_module
from waygraph.errors import CommandFailed, ConfigError
from waygraph.eval.loop import COMMAND_TIMEOUT, inside, run_shell
from waygraph.eval.loop import write_file as write_in_workspace
from waygraph.sandbox import landlock
from waygraph.sandbox.safe_files import read_regular_file

__all__ = [
    "READ_LIMIT",
    "WORKSPACE_TOOLS",
    "CommandFailed",
    "load_tools",
    "workspace_context",
    "workspace_tools",
]

#: Largest file ``read_file`` returns whole (a model cannot use more in one step anyway).
READ_LIMIT = 1_000_000
#: Names of the workspace tools (a ``--tools`` function may not reuse them).
WORKSPACE_TOOLS = ("shell", "write_file", "read_file")


#: Why the shell tool refuses to run where the kernel cannot confine it.
NO_CONFINEMENT = (
    "not run: this kernel cannot confine commands to the workspace (Landlock needs Linux "
    "5.13 or newer with Landlock enabled); run waygraph plan with --unconfined to run "
    "commands without kernel confinement"
)


def workspace_tools(
    workspace: Path,
    *,
    timeout: float = COMMAND_TIMEOUT,
    stop: threading.Event | None = None,
    unconfined: bool = False,
    allow_network: bool = False,
) -> list[Callable[..., str]]:
    """The ``shell``, ``write_file`` and ``read_file`` tools, confined to ``workspace``.

    ``shell`` runs each command under the kernel's confinement
    (:mod:`waygraph.sandbox.landlock`): it may write only in the workspace and a
    private temporary folder, and read only those, the system and the Python
    installation, whatever paths, links or globs the command uses. Where the
    kernel has no Landlock the tool refuses to run commands, saying why,
    unless ``unconfined`` (then only the plain checks below apply). Commands
    run with a minimal environment and ``timeout``, and (confined) cannot open
    internet or UNIX sockets unless ``allow_network``. ``read_file`` and
    ``write_file`` resolve real paths (symbolic links included) and refuse
    any outside the workspace. A refused or failing call raises, so the step
    fails (and is retried, falls back or triggers a revision). Setting
    ``stop`` kills the commands running then and refuses new ones.

    Example:
        >>> import tempfile
        >>> shell, write_file, read_file = workspace_tools(Path(tempfile.mkdtemp()))
        >>> write_file("notes/a.txt", "hi")
        'wrote notes/a.txt (1 lines, 2 bytes)'
        >>> read_file("notes/a.txt"), shell("cat notes/a.txt")
        ('hi', 'hi')
    """
    root = workspace.resolve()

    def shell(
        command: Annotated[str, Field(description="One shell command, e.g. `ls -la`.")],
    ) -> str:
        """Run one shell command in the workspace folder and return its output (stdout and
        stderr together); a non-zero exit code fails the step. Paths must stay inside the
        workspace."""
        if stop is not None and stop.is_set():
            raise CommandFailed("not run: the run was interrupted")
        if not unconfined and landlock.abi_version() < 1:
            raise CommandFailed(NO_CONFINEMENT)
        output, code = run_shell(
            command, root, timeout, stop=stop, sandboxed=not unconfined, network=allow_network
        )
        if code != 0:
            raise CommandFailed(f"exit code {code}: {_tail(output)}")
        return output

    def write_file(
        path: Annotated[str, Field(description="Path relative to the workspace.")],
        content: Annotated[str, Field(description="The whole new content of the file.")],
    ) -> str:
        """Write (create or replace) a text file in the workspace folder; missing folders
        are created."""
        message, code = write_in_workspace(path, content, root)
        if code != 0:
            raise OSError(message)
        return message

    def read_file(
        path: Annotated[str, Field(description="Path relative to the workspace.")],
    ) -> str:
        """Read a text file in the workspace folder and return its content."""
        target = inside(path, root)
        if target is None:
            raise PermissionError(f"refused: {path!r} leaves the workspace")
        if not target.is_file():
            raise FileNotFoundError(f"no file {path!r} in the workspace")
        if target.stat().st_size > READ_LIMIT:
            raise ValueError(f"{path!r} is larger than {READ_LIMIT} bytes; read a part with shell")
        # The model can swap in a FIFO or a link after the checks above: read
        # only a regular file, without following or blocking (issue 33).
        return read_regular_file(target, limit=READ_LIMIT).decode("utf-8", errors="replace")

    return [shell, write_file, read_file]


def _tail(output: str, limit: int = 400) -> str:
    """The end of a command's output (where the error usually is), on one line."""
    text = " ".join(output.split())
    return text if len(text) <= limit else "..." + text[-limit:]


def load_tools(target: str) -> list[Callable[..., Any]]:
    """The functions ``--tools MODULE[:ATTR]`` names.

    ``ATTR`` names a list (or tuple) of functions, or one function; without
    it, every public function (name not starting with ``_``) the module
    itself defines. Errors are :class:`ConfigError` naming the module.

    Example:
        >>> [f.__name__ for f in load_tools("json:dumps")]
        ['dumps']
    """
    module, attr = load_user_module(target)
    where = getattr(module, "__file__", None) or module.__name__
    if attr is None:
        found: list[Callable[..., Any]] = [
            value
            for name, value in vars(module).items()
            if not name.startswith("_")
            and inspect.isfunction(value)
            and value.__module__ == module.__name__
        ]
        if not found:
            raise ConfigError(
                f"{where}: defines no public functions to use as tools; define some, "
                "or name a list of them as MODULE:ATTR"
            )
        return found
    if not hasattr(module, attr):
        raise ConfigError(f"{where}: has no attribute {attr!r} (expected a list of functions)")
    value = getattr(module, attr)
    items = list(value) if isinstance(value, list | tuple) else [value]
    not_callable = [repr(item)[:40] for item in items if not callable(item)]
    if not items or not_callable:
        raise ConfigError(
            f"{where}:{attr} must be a list of functions; "
            + (f"not callable: {', '.join(not_callable)}" if not_callable else "it is empty")
        )
    return items


def workspace_context(root: Path) -> str:
    """What the planning model is told about the workspace: where paths start, what is there."""
    try:
        names = sorted(
            p.name + ("/" if p.is_dir() else "")
            for p in root.iterdir()
            if not p.name.startswith(".")
        )
    except OSError:
        names = []
    shown = ", ".join(names[:40]) + (f" and {len(names) - 40} more" if len(names) > 40 else "")
    holds = f"It holds: {shown}." if names else "It is empty."
    return (
        "The shell, write_file and read_file tools work inside one folder, the workspace; "
        f"give paths relative to it. {holds}"
    )
