"""``python -m waygraph.testing.chat_server``: a scripted OpenAI-compatible server from a shell.

Serves :class:`~waygraph.testing.ScriptedChatServer` until Ctrl-C, so
``waygraph plan``, ``waygraph eval`` and ``examples/openai_loop.py`` can be
tried without a model or a network (docs/offline.md walks through it)::

    python -m waygraph.testing.chat_server --script plan.yaml --port 8400
    waygraph plan "write the notes" --llm http://127.0.0.1:8400/v1 --model scripted

``--script FILE`` (JSON or YAML) is a list of replies, sent one per chat
request in order, or a mapping ``{model, loop, replies}``. A reply is a
string (the assistant's message), or a mapping with ``content`` and/or
``tool_calls`` (``[{name, arguments, id}]``), optionally ``usage``, or
``status`` plus ``error`` for an HTTP error reply. ``--eval KIND`` serves
one of the eval harness's scripted models instead (diligent, sloppy, mixed,
liars), for any number of requests.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from waygraph.testing.chat_server import Reply, ScriptedChatServer

__all__ = ["ScriptFile", "load_script", "main"]


class _ToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    id: str | None = None


class _Reply(BaseModel):
    model_config = ConfigDict(extra="forbid")
    content: str | None = None
    tool_calls: list[_ToolCall] = Field(default_factory=list)
    usage: dict[str, int] | None = None
    status: int | None = Field(default=None, ge=400, le=599)
    error: str | None = None


class ScriptFile(BaseModel):
    """A script file: the replies in order, the model name, whether to start over."""

    model_config = ConfigDict(extra="forbid")
    model: str = "scripted"
    loop: bool = False
    replies: list[str | _Reply] = Field(min_length=1)

    def script(self) -> list[Reply]:
        """The replies as :class:`~waygraph.testing.ScriptedChatServer` takes them."""
        return [
            r if isinstance(r, str) else r.model_dump(exclude_none=True, exclude_defaults=True)
            for r in self.replies
        ]


def load_script(path: Path) -> ScriptFile:
    """Read a script file; a ValueError names the file and the reply that is wrong.

    Example:
        >>> import tempfile
        >>> f = Path(tempfile.mkdtemp()) / "s.yaml"
        >>> _ = f.write_text("- hello\\n- tool_calls: [{name: shell, arguments: {command: ls}}]\\n")
        >>> load_script(f).script()[1]
        {'tool_calls': [{'name': 'shell', 'arguments': {'command': 'ls'}}]}
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the script: {exc.strerror or exc}") from None
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise ValueError(f"{path}: not valid {path.suffix.lstrip('.') or 'YAML'}: {exc}") from None
    if isinstance(data, list):
        data = {"replies": data}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a script is a list of replies or a mapping with 'replies'")
    try:
        return ScriptFile.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        # A reply written as a mapping is wrong as a mapping, not as a string.
        error = next((e for e in errors if "_Reply" in e["loc"]), errors[0])
        loc = [str(part) for part in error["loc"]]
        if loc[:1] == ["replies"] and len(loc) > 1:
            # pydantic names the union branch ("str", "_Reply"); a person wants the reply.
            where = f"reply {int(loc[1]) + 1}"
            rest = [p for p in loc[2:] if p not in ("str", "_Reply")]
            where += f", field {'.'.join(rest)}" if rest else ""
        else:
            where = f"field {'.'.join(loc)}"
        raise ValueError(f"{path}: {where}: {error['msg']}") from None


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, serve until Ctrl-C; 2 for a bad script or a taken port."""
    parser = argparse.ArgumentParser(
        prog="python -m waygraph.testing.chat_server",
        description="Serve scripted OpenAI-compatible chat replies (see docs/offline.md).",
    )
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--script", type=Path, metavar="FILE", help="Replies, JSON or YAML.")
    what.add_argument(
        "--eval",
        choices=["diligent", "sloppy", "mixed", "liars"],
        help="Serve an eval scripted model (for `waygraph eval --llm`).",
    )
    parser.add_argument("--host", default="127.0.0.1", help="Address to listen on.")
    parser.add_argument("--port", type=int, default=0, help="Port (default: any free one).")
    parser.add_argument("--model", help="Model name /models reports (default: scripted).")
    parser.add_argument("--loop", action="store_true", help="Start the script over at its end.")
    args = parser.parse_args(argv)

    if args.script is not None:
        try:
            script = load_script(args.script)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        replies, loop, model = script.script(), script.loop or args.loop, script.model
        described = f"{len(replies)} scripted replies{' (looping)' if loop else ''}"
    else:
        from waygraph.eval.scripted import ScriptedModel

        replies, loop, model = [ScriptedModel(args.eval)], True, f"scripted-{args.eval}"
        described = f"the {args.eval} eval model"
    server = ScriptedChatServer(
        replies, model=args.model or model, host=args.host, port=args.port, loop=loop
    )
    try:
        server.start()
    except OSError as exc:
        print(
            f"error: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}; "
            "pick another --port (0: any free one)",
            file=sys.stderr,
        )
        return 2
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print(f"serving {described} at {server.base_url} (Ctrl-C to stop)", flush=True)
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
