"""The typer application and what every command shares.

Commands live in sibling modules (``check_cmds``: check; ``library_cmds``: show, draw, convert,
schema; ``run_cmds``: match, demo; ``play_cmds``; ``session_cmds``) and
register themselves on :data:`app`. Shared here: the ``--library`` and
``--json`` options, error printing, library loading, plan lookup and output
writing.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from enum import StrEnum
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from waygraph.cli._help import WaygraphGroup
from waygraph.errors import ConfigError, PlanNotFoundError, WaygraphError
from waygraph.suggest import suggestions

if TYPE_CHECKING:
    from waygraph.library import Library
    from waygraph.model import Plan

__all__ = [
    "JsonOption",
    "LibraryOption",
    "MaxTokensOption",
    "app",
    "console",
    "display_path",
    "err_console",
    "find_plan",
    "friendly_errors",
    "load",
    "plain",
    "plan_file",
    "print_json",
    "printable",
    "stdout_is_terminal",
    "write_output",
]

app = typer.Typer(
    name="waygraph",
    help="Keep LLM agents on course through multi-step work with verified plans.",
    no_args_is_help=True,
    # --install-completion / --show-completion: bash, zsh, fish, PowerShell.
    add_completion=True,
    pretty_exceptions_enable=False,
    cls=WaygraphGroup,
)

console = Console()
err_console = Console(stderr=True)


def plain(text: object) -> str:
    """``text`` made safe to put inside rich markup: brackets are shown, not read.

    Every piece of text that comes from a plan, a model, a tool or code goes
    through here before it reaches a rich console, so ``[waygraph]`` and
    ``pip install 'waygraph[llm]'`` print as written.

    Example::

        >>> plain("pip install 'waygraph[llm]'")
        "pip install 'waygraph\\\\[llm]'"
    """
    return escape(printable(str(text)))


#: A lone surrogate: Python text can hold one (JSON's "\\ud800" makes it), but
#: no encoder writes it, so printing it raised UnicodeEncodeError mid-output.
_SURROGATE = re.compile("[\ud800-\udfff]")


def printable(text: str) -> str:
    """``text`` with each lone surrogate written as its ``\\uXXXX`` escape.

    Any text a file holds can then be printed; inside a JSON string the
    escape is JSON's own, so ``--json`` output reads back to the same text.

    Example:
        >>> printable("p\\ud800x")
        'p\\\\ud800x'
    """
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _print_version(value: bool) -> None:
    if value:
        from waygraph import __version__

        console.print(f"waygraph {__version__}", markup=False, highlight=False)
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print waygraph's version and exit.",
        ),
    ] = False,
) -> None:
    """Keep LLM agents on course through multi-step work with verified plans."""


#: The one ``--library`` option shared by every command that reads plans.
# The model options shared by every command that talks to a model (demo,
# eval, plan): one spelling, one help text, one environment variable each.
LlmOption = Annotated[
    str | None,
    typer.Option(
        "--llm",
        help="Base URL of an OpenAI-compatible API, e.g. http://localhost:11434/v1 (Ollama).",
        envvar="OPENAI_BASE_URL",
    ),
]
ApiKeyOption = Annotated[
    str | None,
    typer.Option("--api-key", help="API key (default: $OPENAI_API_KEY; local servers need none)."),
]


class StructuredOutput(StrEnum):
    """``--structured-output``: how JSON replies are asked of the model (see OpenAILLM)."""

    AUTO = "auto"
    ON = "on"
    OFF = "off"


StructuredOutputOption = Annotated[
    StructuredOutput,
    typer.Option(
        "--structured-output",
        help="auto: ask for json_schema, then json_object, then plain text, as far as the "
        "server takes them (remembered for the run); on: json_schema only; off: plain text.",
    ),
]


class ToolProtocol(StrEnum):
    """``--tool-protocol``: how tools reach the model (see :mod:`waygraph.chat`)."""

    NATIVE = "native"
    TEXT = "text"
    AUTO = "auto"


ToolProtocolOption = Annotated[
    ToolProtocol,
    typer.Option(
        "--tool-protocol",
        help="How tools reach the model: native tool calls, a JSON object in the reply's text "
        "(for models and servers without tool calls), or auto: native until the server "
        "answers a tool call as text.",
    ),
]
MaxTokensOption = Annotated[
    int,
    typer.Option(
        "--max-tokens",
        min=0,
        metavar="N",
        help="Tokens one model reply may have (0: the server's default, which on some local "
        "servers is the whole context); bounds a rambling reply that would overflow a small "
        "local context.",
    ),
]
ContextTokensOption = Annotated[
    int | None,
    typer.Option(
        "--context-tokens",
        min=1,
        metavar="N",
        help="The model's context size in tokens; requests are kept within it by shortening "
        "old tool outputs. Default: what the server's /models says, else no limit.",
        show_default=False,
    ),
]
LibraryOption = Annotated[
    Path | None,
    typer.Option(
        "--library",
        "-l",
        help="Plan library: a file (.json/.yaml/.dot) or a folder of them. Default: shipped plans.",
        envvar="WAYGRAPH_LIBRARY",
    ),
]

#: The permission for command gates, one spelling on every command that guides a model.
AllowCommandsOption = Annotated[
    bool,
    typer.Option(
        "--allow-commands",
        help="Let plans' command gates run (e.g. `pytest -q` before a plan may finish). "
        "Off: such checks stay unknown.",
    ),
]

#: The ``--json`` switch of every command that can print machine-readable output.
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]

F = TypeVar("F", bound=Callable[..., Any])


def friendly_errors(func: F) -> F:
    """Print a WaygraphError as one clear line and exit 2, never a traceback."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except WaygraphError as exc:
            err_console.print(f"[bold red]error:[/] {plain(exc)}", highlight=False, soft_wrap=True)
            raise typer.Exit(2) from None

    return wrapper  # type: ignore[return-value]


def load(library: Path | None, *, validate: bool = True) -> Library:
    """Load ``--library`` (the shipped plans when None)."""
    from waygraph.library import load_library

    return load_library(library, validate=validate)


def find_plan(library: Library, plan_id: str) -> Plan:
    """The plan ``plan_id``, or a :class:`PlanNotFoundError` suggesting similar ids.

    Example:
        >>> from waygraph.library import Library
        >>> from waygraph.model import Graph
        >>> lib = Library([Graph.builder().exit("done").edge("start", "done").plan("fix_bug")])
        >>> find_plan(lib, "fix_bugs")
        Traceback (most recent call last):
        ...
        waygraph.errors.PlanNotFoundError: no plan 'fix_bugs' in the library; did you mean fix_bug?
    """
    plan = library.get(plan_id)
    if plan is not None:
        return plan
    ids = library.ids()
    # The one "did you mean" helper: close ids, short guesses ("bugfx" for
    # "bugfix_workflow") and substrings alike.
    similar = suggestions(plan_id, ids, limit=5)
    if similar:
        hint = f"did you mean {', '.join(similar[:5])}?"
    elif ids:
        shown = ", ".join(ids[:10]) + (", ..." if len(ids) > 10 else "")
        hint = f"plans: {shown} (see `waygraph show`)"
    else:
        hint = "the library is empty"
    raise PlanNotFoundError(f"no plan {plan_id!r} in the library; {hint}")


def plan_file(name: str, library: Path | None) -> tuple[Library, Plan] | None:
    """The library of a plan file named where a plan id goes (``waygraph show
    plans/release.yaml``) and its one plan; None when ``name`` is no plan file, or
    ``library`` is given to look the id up in.

    Example:
        >>> plan_file("bugfix_workflow", None) is None
        True
    """
    from waygraph.formats import format_of
    from waygraph.library import load_library

    path = Path(name)
    if library is not None or not path.is_file() or not format_of(path):
        return None
    lib = load_library(path, validate=False)
    plans = list(lib)
    if len(plans) != 1:
        ids = ", ".join(p.id for p in plans)
        raise ConfigError(f"{path} holds {len(plans)} plans ({ids}); name one: -l {path} ID")
    return lib, plans[0]


def print_json(data: Any) -> None:
    """Print ``data`` as indented JSON on stdout (non-JSON values as strings).

    Example:
        >>> print_json({"plans": 2})
        {
          "plans": 2
        }
    """
    typer.echo(printable(json.dumps(data, indent=2, ensure_ascii=False, default=str)))


def write_output(content: str | bytes, output: Path | None, *, announce: bool = True) -> None:
    """Write ``content`` to ``output``, or to stdout when ``output`` is None.

    A written file is announced on stderr (``announce``), keeping stdout clean
    for pipes. Binary content is refused on a terminal, where it would only
    garble the screen.

    Example:
        >>> write_output("flowchart TD\\n", None)
        flowchart TD
    """
    if output is None:
        if isinstance(content, bytes):
            if stdout_is_terminal():
                raise ConfigError("binary output is not shown on a terminal; use -o FILE")
            sys.stdout.buffer.write(content)
            sys.stdout.buffer.flush()
        else:
            typer.echo(content, nl=not content.endswith("\n"))
        return
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            output.write_bytes(content)
        else:
            output.write_text(content, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write {output}: {exc.strerror or exc}") from None
    if announce:
        err_console.print(f"wrote {output}", markup=False, highlight=False, soft_wrap=True)


def display_path(path: str | Path | None, root: Path | None = None) -> str:
    """``path`` relative to ``root`` (a library folder) or the working directory when
    inside it, so tables stay narrow; otherwise as given.

    Example:
        >>> display_path(Path.cwd() / "plans" / "deploy.yaml")
        'plans/deploy.yaml'
    """
    if path is None:
        return ""
    p = Path(path)
    for base in (root, Path.cwd()):
        if base is None or not base.is_dir():
            continue
        try:
            return str(p.resolve().relative_to(base.resolve()))
        except ValueError:
            continue
    return str(path)


def stdout_is_terminal() -> bool:
    """Whether standard output is a terminal (live views and colour only then)."""
    return sys.stdout.isatty()
