"""The config file the installed Agent-Zero extensions read.

It lives at ``usr/waygraph/config.json`` in the Agent-Zero folder: ``usr/``
is where Agent-Zero keeps user data (chats, settings, user extensions) in 1.x
and recent 0.9.x (earlier 0.9 releases kept chats in ``tmp/``, which is
scratch space in later ones, so install creates ``usr/`` there). Paths in it
are relative to the Agent-Zero folder unless absolute, so a tree installed from
the host keeps working when it is mounted into a container at ``/a0``::

    {
      "format": 1,
      "layout": "1.x",
      "library": "usr/waygraph/library",   // null: the plans shipped with waygraph
      "store": null,                        // null: sqlite at usr/waygraph/waygraph.db
      "workspace": null,                    // null: Agent-Zero's work dir (its settings)
      "compat": false,                      // the HTN selector's side effects too
      "extras_key": "waygraph_plan",        // the loop_data.extras_temporary key
      "reply_tools": ["response"],          // tools whose text is the model's own words
      "exit_codes": true,                   // real exit codes of terminal commands
      "allow_commands": false,              // plans' command gates may run
      "confine": false,                     // file checks stay inside the workspace
      "tools_run_elsewhere": false,         // tools run on another machine
      "matching": "phrase"                  // "semantic" or "both": plans start by meaning
    }

``matching`` other than ``"phrase"`` needs ``pip install 'waygraph[semantic]'``
in Agent-Zero's Python (docs/matching.md); plan embeddings are kept in
``usr/waygraph/waygraph-embeddings/`` beside the default store.

Example:
    >>> from pathlib import Path
    >>> config = AgentZeroConfig(layout="1.x")
    >>> config.store_url(Path("/a0"))
    'sqlite:////a0/usr/waygraph/waygraph.db'
    >>> AgentZeroConfig.from_data(config.to_data()) == config
    True
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from waygraph.errors import ConfigError
from waygraph.match.selector import MATCHING_MODES

__all__ = [
    "COMPAT_EXTRAS_KEY",
    "CONFIG_PATH",
    "DATA_DIR",
    "DEFAULT_EXTRAS_KEY",
    "STORE_PATH",
    "AgentZeroConfig",
]

#: waygraph's folder inside the Agent-Zero tree (relative, POSIX separators).
DATA_DIR = "usr/waygraph"
CONFIG_PATH = f"{DATA_DIR}/config.json"
STORE_PATH = f"{DATA_DIR}/waygraph.db"
LIBRARY_DIR = f"{DATA_DIR}/library"
DEFAULT_EXTRAS_KEY = "waygraph_plan"
#: The key the HTN plan selector wrote, which ``--compat`` setups read.
COMPAT_EXTRAS_KEY = "htn_active_plan"
FORMAT = 1


@dataclass(frozen=True, slots=True)
class AgentZeroConfig:
    """What the installed extensions need to know; see the module docstring."""

    layout: str
    library: str | None = None
    store: str | None = None
    workspace: str | None = None
    compat: bool = False
    extras_key: str = DEFAULT_EXTRAS_KEY
    #: Tools whose "result" is text the model wrote to the user: claims, not evidence.
    reply_tools: tuple[str, ...] = ("response",)
    #: Append a status marker to terminal commands to learn their real exit code.
    exit_codes: bool = True
    allow_commands: bool = False
    confine: bool = False
    tools_run_elsewhere: bool = False
    #: How a user message starts a plan: "phrase", "semantic" or "both".
    matching: str = "phrase"

    def to_data(self) -> dict[str, Any]:
        """The settings as the JSON object the config file holds (with its format tag)."""
        data = asdict(self)
        data["reply_tools"] = list(self.reply_tools)
        return {"format": FORMAT, **data}

    def to_json(self) -> str:
        """The config file's text."""
        return json.dumps(self.to_data(), indent=2) + "\n"

    @classmethod
    def from_data(cls, data: Any, *, file: str = "config") -> AgentZeroConfig:
        """Validate ``data`` (a parsed config); errors name the file and the field."""
        if not isinstance(data, dict):
            raise ConfigError(f"{file}: expected a JSON object, got {type(data).__name__}")
        if data.get("format", FORMAT) != FORMAT:
            raise ConfigError(
                f"{file}: format {data.get('format')!r} is not supported by this waygraph "
                f"(expected {FORMAT}); run `waygraph install agent-zero` again"
            )
        unknown = sorted(set(data) - {"format", *cls.__dataclass_fields__})
        if unknown:
            raise ConfigError(f"{file}: unknown field(s) {', '.join(unknown)}")
        layout = data.get("layout")
        if layout not in ("0.9", "1.x"):
            raise ConfigError(f"{file}: field 'layout' must be '0.9' or '1.x' (got {layout!r})")
        for name in ("library", "store", "workspace"):
            value = data.get(name)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ConfigError(
                    f"{file}: field {name!r} must be a non-empty string or null (got {value!r})"
                )
        defaults: dict[str, Any] = {f.name: f.default for f in fields(cls)}
        flags = {}
        for name in ("compat", "exit_codes", "allow_commands", "confine", "tools_run_elsewhere"):
            value = data.get(name, defaults[name])
            if not isinstance(value, bool):
                raise ConfigError(f"{file}: field {name!r} must be true or false (got {value!r})")
            flags[name] = value
        replies = data.get("reply_tools", list(defaults["reply_tools"]))
        if not isinstance(replies, list) or not all(isinstance(t, str) and t for t in replies):
            raise ConfigError(f"{file}: field 'reply_tools' must be a list of tool names")
        matching = data.get("matching", "phrase")
        if matching not in MATCHING_MODES:
            raise ConfigError(
                f"{file}: field 'matching' must be one of "
                f"{', '.join(repr(m) for m in MATCHING_MODES)} (got {matching!r})"
            )
        key = data.get("extras_key", DEFAULT_EXTRAS_KEY)
        if not isinstance(key, str) or not key.strip():
            raise ConfigError(f"{file}: field 'extras_key' must be a non-empty string")
        return cls(
            layout=layout,
            library=data.get("library"),
            store=data.get("store"),
            workspace=data.get("workspace"),
            extras_key=key,
            reply_tools=tuple(replies),
            matching=matching,
            **flags,
        )

    @classmethod
    def read(cls, path: Path) -> AgentZeroConfig:
        """Load and validate the config file at ``path``."""
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ConfigError(
                f"{path}: no waygraph config; run `waygraph install agent-zero` again"
            ) from None
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ConfigError(f"{path}: not valid JSON ({exc})") from None
        return cls.from_data(data, file=str(path))

    def library_path(self, root: Path) -> Path | None:
        """The plan library to load, or None for the plans shipped with waygraph."""
        return None if self.library is None else root / self.library

    def store_url(self, root: Path) -> str:
        """The store URL; a missing ``store`` means SQLite under ``usr/waygraph/``."""
        if self.store is not None:
            return self.store
        return f"sqlite:///{(root / STORE_PATH).as_posix()}"

    def workspace_path(self, root: Path) -> Path | None:
        """The configured workspace, else Agent-Zero's work dir, else None (the cwd)."""
        if self.workspace is not None:
            return root / self.workspace
        return agent_zero_workdir(root)


def agent_zero_workdir(root: Path) -> Path | None:
    """The work dir Agent-Zero's settings name (``workdir_path``), found in this tree.

    Settings written inside the Docker image say ``/a0/...``; a tree used
    from the host finds the same folder under ``root``. Without settings, the
    default ``usr/workdir`` when it exists.
    """
    for settings in (root / "usr" / "settings.json", root / "tmp" / "settings.json"):
        try:
            value = json.loads(settings.read_text(encoding="utf-8")).get("workdir_path")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(value, str) and value.strip():
            path = Path(value)
            if path.is_dir():
                return path
            if value.startswith("/a0/") and (root / value[4:]).is_dir():
                return root / value[4:]
    default = root / "usr" / "workdir"
    return default if default.is_dir() else None
