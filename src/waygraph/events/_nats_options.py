"""A NATS bus's URL and options: the servers, the options its query string may set, their checks.

``nats://a:4222,nats://b:4222?stream_prefix=T1&ack_wait=10`` names two servers
and two options; an option given to :class:`~waygraph.events.NatsBus` as an
argument wins over the URL's. Anything else in the query, a server that is
not ``nats://`` or ``tls://``, or a value out of range is a
:class:`~waygraph.errors.ConfigError` naming it.

Example:
    >>> servers, query = split_url("nats://a:4222,nats://b:4222?ack_wait=10")
    >>> servers, option(UNSET, query, "ack_wait", 30.0, float)
    (['nats://a:4222', 'nats://b:4222'], 10.0)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl

from waygraph.errors import ConfigError

__all__ = ["DEFAULT_NATS_URL", "UNSET", "check_names", "option", "split_url"]

#: The server a NatsBus connects to when given no URL.
DEFAULT_NATS_URL = "nats://127.0.0.1:4222"
#: An option not given as an argument (the URL's value or the default applies).
UNSET: Any = object()
#: The options a NATS URL's query string may set.
URL_OPTIONS = frozenset(
    {"stream_prefix", "subject_prefix", "ack_wait", "max_deliver", "duplicate_window", "max_age"}
)

_NAME = re.compile(r"[A-Za-z0-9_-]+")
_SUBJECT_PREFIX = re.compile(r"[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*")


def split_url(url: str) -> tuple[list[str], dict[str, str]]:
    """The servers ``url`` names and its query's options; ConfigError for anything unknown."""
    servers, _, query_text = (url or DEFAULT_NATS_URL).partition("?")
    try:
        query = dict(parse_qsl(query_text, keep_blank_values=True, strict_parsing=False))
    except ValueError as exc:
        raise ConfigError(f"bad query in NATS URL {url!r}: {exc}") from None
    unknown = sorted(set(query) - URL_OPTIONS)
    if unknown:
        raise ConfigError(
            f"unknown option(s) {', '.join(unknown)} in NATS URL {url!r}; "
            f"known: {', '.join(sorted(URL_OPTIONS))}"
        )
    names = [s.strip() for s in servers.split(",") if s.strip()]
    if not names or not all(s.startswith(("nats://", "tls://")) for s in names):
        raise ConfigError(
            f"not a NATS URL: {url!r}; expected nats://HOST:PORT (e.g. {DEFAULT_NATS_URL})"
        )
    return names, query


def option(
    given: Any, query: dict[str, str], name: str, default: Any, cast: Callable[[str], Any]
) -> Any:
    """``given`` if given, else the URL's ``name`` (read by ``cast``), else ``default``."""
    if given is not UNSET:
        return given
    if name in query:
        try:
            return cast(query[name])
        except ValueError:
            raise ConfigError(
                f"NATS URL option {name}={query[name]!r} is not a valid {cast.__name__}"
            ) from None
    return default


def check_names(stream_prefix: str, subject_prefix: str) -> None:
    """ConfigError unless the prefixes can name JetStream streams and NATS subjects."""
    if not _NAME.fullmatch(stream_prefix):
        raise ConfigError(
            f"stream_prefix {stream_prefix!r} may hold only letters, digits, '_' and '-'"
        )
    if not _SUBJECT_PREFIX.fullmatch(subject_prefix):
        raise ConfigError(
            f"subject_prefix {subject_prefix!r} must be dot-separated tokens of "
            "letters, digits, '_' and '-'"
        )
