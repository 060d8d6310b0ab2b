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
      "workspace": null,                    // root for file_exists checks (null: none)
      "compat": false,                      // the HTN selector's side effects too
      "extras_key": "waygraph_plan"         // the loop_data.extras_temporary key
    }

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
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from waygraph.errors import ConfigError

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

    def to_data(self) -> dict[str, Any]:
        return {"format": FORMAT, **asdict(self)}

    def to_json(self) -> str:
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
        compat = data.get("compat", False)
        if not isinstance(compat, bool):
            raise ConfigError(f"{file}: field 'compat' must be true or false (got {compat!r})")
        key = data.get("extras_key", DEFAULT_EXTRAS_KEY)
        if not isinstance(key, str) or not key.strip():
            raise ConfigError(f"{file}: field 'extras_key' must be a non-empty string")
        return cls(
            layout=layout,
            library=data.get("library"),
            store=data.get("store"),
            workspace=data.get("workspace"),
            compat=compat,
            extras_key=key,
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
        return None if self.workspace is None else root / self.workspace
