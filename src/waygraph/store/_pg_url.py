"""PostgreSQL store URLs: the options waygraph reads itself, and the NOTIFY channel.

``?schema=NAME`` keeps the tables in that schema; ``?notify=`` says when a
commit sends its ``NOTIFY`` (``listeners``, the default: while a listener
registered by :meth:`~waygraph.store.postgres.PostgresStore.listen` lives;
``always``: on every commit); ``?timeout=SECONDS`` is every store call's
deadline (10 s by default, the conflict budget). Every other query option
goes to libpq.

Example:
    >>> split_schema("postgresql://u@h/db?schema=runs")
    ('postgresql://u@h/db', 'runs')
"""

from __future__ import annotations

import hashlib
import re
from urllib.parse import unquote, urlsplit, urlunsplit

from waygraph.errors import ConfigError
from waygraph.store.base import redact_url
from waygraph.store.retry import CONFLICT_TIMEOUT

__all__ = ["NOTIFY_MODES", "call_deadline", "notify_channel", "notify_mode", "split_schema"]

_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")

#: The query options waygraph reads itself; every other one goes to libpq.
_OWN_OPTIONS = ("schema", "notify", "timeout")

#: ``?notify=``: when a commit sends its NOTIFY.
NOTIFY_MODES = ("listeners", "always")


def _split_options(url: str) -> tuple[str, dict[str, str]]:
    """Remove waygraph's own options from a URL's query: (libpq URL, {name: last value}).

    The other options are passed on byte for byte: libpq decodes ``%XX``
    but not ``+``, so re-encoding them (``+`` for a space) would change
    ``options=-c%20...`` into a parameter libpq refuses.
    """
    parts = urlsplit(url)
    own: dict[str, str] = {}
    rest: list[str] = []
    for piece in parts.query.split("&") if parts.query else ():
        name, _, value = piece.partition("=")
        if unquote(name) in _OWN_OPTIONS:
            own[unquote(name)] = unquote(value)
        else:
            rest.append(piece)
    if not own:
        return url, {}
    return urlunsplit(parts._replace(query="&".join(rest))), own


def split_schema(url: str) -> tuple[str, str | None]:
    """Remove waygraph's options (``schema``, ``notify``, ``timeout``): (libpq URL, schema).

    Example:
        >>> split_schema("postgresql://u@h/db?schema=runs&sslmode=require&notify=always")
        ('postgresql://u@h/db?sslmode=require', 'runs')
    """
    conninfo, own = _split_options(url)
    schema = own.get("schema")
    if schema is not None and not _SCHEMA_NAME.fullmatch(schema):
        raise ConfigError(
            f"{redact_url(url)}: schema must be 1-63 lowercase letters, digits or _ "
            f"and not start with a digit (got {schema!r})"
        )
    return conninfo, schema


def notify_mode(url: str) -> str:
    """The URL's ``?notify=`` (``listeners`` without one).

    Example:
        >>> notify_mode("postgresql://h/db"), notify_mode("postgresql://h/db?notify=always")
        ('listeners', 'always')
    """
    mode = _split_options(url)[1].get("notify", "listeners")
    if mode not in NOTIFY_MODES:
        raise ConfigError(
            f"{redact_url(url)}: notify must be one of {', '.join(NOTIFY_MODES)} (got {mode!r})"
        )
    return mode


def call_deadline(url: str) -> float:
    """The URL's ``?timeout=SECONDS``: how long any store call may take (10 without one).

    Example:
        >>> call_deadline("postgresql://h/db"), call_deadline("postgresql://h/db?timeout=1.5")
        (10.0, 1.5)
    """
    text = _split_options(url)[1].get("timeout")
    if text is None:
        return CONFLICT_TIMEOUT
    try:
        seconds = float(text)
    except ValueError:
        seconds = float("nan")
    # Not below 0.1 s: a shorter deadline would cut healthy round trips.
    if not 0.1 <= seconds <= 86400:
        raise ConfigError(
            f"{redact_url(url)}: timeout must be a number of seconds from 0.1 to 86400 "
            f"(got {text!r})"
        )
    return seconds


def notify_channel(schema: str | None) -> str:
    """The LISTEN/NOTIFY channel of a store's schema (``waygraph`` without one).

    Example:
        >>> notify_channel("runs"), notify_channel(None)
        ('waygraph_runs', 'waygraph')
    """
    if schema is None:
        return "waygraph"
    name = f"waygraph_{schema}"
    # Channel names are identifiers: at most 63 bytes.
    if len(name) <= 63:
        return name
    return "waygraph_" + hashlib.sha256(schema.encode()).hexdigest()[:24]
