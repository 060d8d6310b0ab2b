"""Durable records and events, chosen by URL.

=========================  ==================================================
``memory://``              dicts in this process; the test double
``file://DIR``             one JSON file per record under DIR (``file:///abs``
                           or ``file://relative``)
``sqlite:///PATH``         one SQLite file, the default (``sqlite:///rel.db``,
                           ``sqlite:////abs.db``, ``sqlite:///:memory:``);
                           ``?synchronous=full`` for power-loss durability,
                           ``?timeout=SECONDS`` to wait for other writers,
                           ``?mode=ro`` to open it read-only
``postgresql://...``       PostgreSQL (also ``postgres://``); ``?schema=NAME``
a plain path               SQLite at that path
=========================  ==================================================

Every backend keeps the same contract (``tests/store_contract.py``); see
``docs/stores.md``. ``SQLiteStore`` and ``MemoryStore`` are importable from
here; ``FileStore`` and ``PostgresStore`` too, imported on first use (the
first needs POSIX ``fcntl``, the second the ``postgres`` extra).

Example:
    >>> from waygraph.store import open_store
    >>> store = open_store("memory://")
    >>> store.commit("run_1", {"status": "running"}, 0, [{"type": "plan_activated"}],
    ...              session="s1", status="running", make_current=True)
    1
    >>> rec = store.get(store.current("s1"))
    >>> rec.version, rec.status, [e.seq for e in store.events("run_1")]
    (1, 'running', [1])
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

from waygraph._extras import require
from waygraph.errors import ConfigError
from waygraph.store._then import commit_then_list
from waygraph.store.base import Store, StoredEvent, StoredRecord, Write, redact_url
from waygraph.store.memory import MemoryStore
from waygraph.store.rows import RowPage
from waygraph.store.sqlite import SQLiteStore

if TYPE_CHECKING:
    from waygraph.store.files import FileStore

__all__ = [
    "SCHEMES",
    "MemoryStore",
    "RowPage",
    "SQLiteStore",
    "Store",
    "StoredEvent",
    "StoredRecord",
    "Write",
    "commit_then_list",
    "default_store_url",
    "open_store",
]

#: The URL forms :func:`open_store` accepts, as shown in error messages.
SCHEMES = ("memory://", "file://DIR", "sqlite:///PATH", "postgresql://USER@HOST/DB")

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]+):")
_SQLITE_OPTIONS = ("synchronous", "timeout", "mode")


def default_store_url() -> str:
    """``$WAYGRAPH_STORE``, else SQLite under the user's data folder.

    Example:
        >>> default_store_url().startswith(("sqlite:///", "memory://", "file://", "postgres"))
        True
    """
    env = os.environ.get("WAYGRAPH_STORE")
    if env:
        return env
    base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return f"sqlite:///{base / 'waygraph' / 'waygraph.db'}"


def _bad(url: str, why: str) -> ConfigError:
    return ConfigError(f"store URL {url!r}: {why}; use one of {', '.join(SCHEMES)}")


def _options(url: str, query: str, allowed: tuple[str, ...]) -> dict[str, str]:
    options = dict(parse_qsl(query, keep_blank_values=True))
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        known = ", ".join(allowed) if allowed else "none"
        raise ConfigError(
            f"store URL {url!r}: unknown option(s) {', '.join(unknown)} (known: {known})"
        )
    return options


def _open_sqlite(url: str, rest: str) -> SQLiteStore:
    path, _, query = rest.partition("?")
    if not path.startswith("/") or len(path) < 2:
        raise _bad(url, "a SQLite URL is sqlite:///PATH (three slashes, then the path)")
    options = _options(url, query, _SQLITE_OPTIONS)
    kwargs: dict[str, Any] = {}
    if "synchronous" in options:
        kwargs["synchronous"] = options["synchronous"]
    if "timeout" in options:
        try:
            kwargs["timeout"] = float(options["timeout"])
        except ValueError:
            raise ConfigError(
                f"store URL {url!r}: timeout must be a number of seconds "
                f"(got {options['timeout']!r})"
            ) from None
    mode = options.get("mode", "rw")
    if mode not in ("ro", "rw"):
        raise ConfigError(f"store URL {url!r}: mode must be ro or rw (got {mode!r})")
    return SQLiteStore(path[1:], url=url, read_only=mode == "ro", **kwargs)


def _open_files(url: str, rest: str) -> FileStore:
    path, _, query = rest.partition("?")
    _options(url, query, ())
    if not path:
        raise _bad(url, "a file store URL names its folder: file:///abs/dir or file://rel/dir")
    if path.startswith("//"):  # file:////abs from f"file:///{abs_path}"
        path = path[1:]
    from waygraph.store.files import FileStore

    return FileStore(path, url=url)


def open_store(url: str | os.PathLike[str] | Store) -> Store:
    """Open the store a URL names; a Store passes through unchanged.

    ``sqlite:///`` follows the SQLAlchemy convention: what follows the third
    slash is the path, so ``sqlite:///runs.db`` is relative to the working
    directory and ``sqlite:////var/lib/wg.db`` (or ``f"sqlite:///{abs_path}"``)
    is absolute. ``file://`` follows file URLs: ``file:///abs/dir`` is
    absolute, ``file://rel/dir`` relative. A string with no scheme, or a
    ``pathlib.Path``, is a SQLite file path. Paths are taken literally (no
    %-decoding); ``~`` is expanded.

    Raises :class:`~waygraph.errors.ConfigError` for a URL it cannot use and
    :class:`~waygraph.errors.StoreError` when the store cannot be opened.

    Example:
        >>> open_store("memory://").url
        'memory://'
        >>> open_store("ftp://x")
        Traceback (most recent call last):
        ...
        waygraph.errors.ConfigError: store URL 'ftp://x': unknown scheme 'ftp'; use one of \
memory://, file://DIR, sqlite:///PATH, postgresql://USER@HOST/DB
    """
    if isinstance(url, Store):
        return url
    if isinstance(url, os.PathLike):
        return SQLiteStore(url)
    if not isinstance(url, str):
        raise ConfigError(
            f"a store is named by a URL string, a path or a Store (got {type(url).__name__}); "
            f"use one of {', '.join(SCHEMES)}"
        )
    if not url.strip():
        raise _bad(url, "it is empty")
    match = _SCHEME.match(url)
    if match is None:  # no scheme (one-letter "C:" counts as a drive): a path
        return SQLiteStore(url)
    scheme = match.group(1).lower()
    rest = url[match.end() :]
    if scheme == "memory":
        if rest not in ("", "//"):
            raise _bad(url, "memory:// takes no path or options")
        return MemoryStore(url)
    if scheme in ("file", "sqlite") and not rest.startswith("//"):
        raise _bad(url, f"{scheme} URLs start with {scheme}://")
    if scheme == "file":
        return _open_files(url, rest[2:])
    if scheme == "sqlite":
        return _open_sqlite(url, rest[2:])
    if scheme in ("postgresql", "postgres"):
        require("postgres", purpose=f"store URL {redact_url(url)!r}")
        from waygraph.store.postgres import PostgresStore

        return PostgresStore(url)
    raise _bad(redact_url(url), f"unknown scheme {scheme!r}")


def __getattr__(name: str) -> Any:
    # FileStore needs fcntl and PostgresStore needs psycopg: load them only
    # when asked for, so `import waygraph.store` works everywhere.
    if name == "FileStore":
        from waygraph.store.files import FileStore

        return FileStore
    if name == "PostgresStore":
        from waygraph.store.postgres import PostgresStore

        return PostgresStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
