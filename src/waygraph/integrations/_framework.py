"""Checks an agent framework before an adapter hooks into it.

An adapter for a framework (OpenAI Agents SDK, LangGraph, Pydantic AI) is
only as good as the framework's hook points. When a release moves or renames
one, the adapter must say so when it is set up, not do nothing quietly:
:func:`require_framework` imports the framework through its extra (a missing
package is :class:`~waygraph.errors.MissingExtra`), compares its installed
version with the range the adapter was tested on, and checks that each hook
point the adapter uses still exists (:class:`~waygraph.errors.IntegrationVersionError`
otherwise, naming the adapter, the version found and the versions supported).
"""

from __future__ import annotations

import importlib
import re
from importlib import metadata
from types import ModuleType

from waygraph._extras import require
from waygraph.errors import IntegrationVersionError

__all__ = ["parse_version", "require_framework"]

_NUMBERS = re.compile(r"\d+")


def parse_version(text: str) -> tuple[int, ...]:
    """The release numbers of a version string; pre-release tags are ignored.

    Example:
        >>> parse_version("1.2.24"), parse_version("0.6.0rc1"), parse_version("2")
        ((1, 2, 24), (0, 6, 0), (2,))
    """
    release = re.split(r"[^0-9.]", text, maxsplit=1)[0]
    return tuple(int(n) for n in _NUMBERS.findall(release))


def _pad(version: tuple[int, ...]) -> tuple[int, ...]:
    return version + (0,) * (4 - len(version))


def require_framework(
    adapter: str,
    extra: str,
    package: str,
    *,
    minimum: str,
    below: str,
    hooks: tuple[str, ...] = (),
) -> ModuleType:
    """Import ``package``'s extra, check its version and its hook points; return its module.

    ``minimum`` (included) and ``below`` (excluded) bound the versions the
    adapter supports. Each of ``hooks`` is ``"module:attribute.path"`` that
    must import and resolve.

    Example:
        >>> require_framework("waygraph.integrations.x", "otel", "opentelemetry-api",
        ...                   minimum="1.0", below="99").__name__
        'opentelemetry.trace'
        >>> require_framework("waygraph.integrations.x", "otel", "opentelemetry-api",
        ...                   minimum="98", below="99")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        waygraph.errors.IntegrationVersionError: waygraph.integrations.x supports \
opentelemetry-api >=98,<99; found ...
    """
    module = require(extra, purpose=adapter)
    supported = f">={minimum},<{below}"
    try:
        found = metadata.version(package)
    except metadata.PackageNotFoundError:
        found = "an unknown version"
    else:
        version = _pad(parse_version(found))
        if not _pad(parse_version(minimum)) <= version < _pad(parse_version(below)):
            raise IntegrationVersionError(adapter, package, found, supported)
    for hook in hooks:
        module_name, _, path = hook.partition(":")
        try:
            target: object = importlib.import_module(module_name)
            for part in filter(None, path.split(".")):
                target = getattr(target, part)
        except (ImportError, AttributeError):
            raise IntegrationVersionError(
                adapter, package, found, supported, f"{hook} is gone"
            ) from None
    return module
