"""How waygraph imports what a caller may never use: optional packages, and names on first use.

Every import of a package that only an extra installs (``pip install
'waygraph[llm]'`` and friends, see ``[project.optional-dependencies]`` in
pyproject.toml) goes through :func:`require` first, so a missing package is
one line naming the extra to install (:class:`~waygraph.errors.MissingExtra`,
exit code 2 on the command line), never a traceback or a wrong hint.
A package whose public names are costly to import serves them through
:func:`lazy_names` (PEP 562), loading each on first use.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from waygraph.errors import MissingExtra

__all__ = ["EXTRAS", "lazy_names", "require"]

#: extra -> the top-level modules it installs (its ``import`` names).
EXTRAS: dict[str, tuple[str, ...]] = {
    "llm": ("openai",),
    "mcp": ("mcp",),
    "nats": ("nats",),
    "postgres": ("psycopg", "psycopg_pool"),
    "serve": ("fastapi", "uvicorn"),
    "openai-agents": ("agents",),
    "langgraph": ("langgraph", "langchain_core"),
    "pydantic-ai": ("pydantic_ai",),
    "otel": ("opentelemetry.trace",),
    "semantic": ("sentence_transformers",),
}


def require(extra: str, *modules: str, purpose: str | None = None) -> ModuleType:
    """Import ``modules`` (default: all of ``extra``'s) and return the first.

    Raises :class:`~waygraph.errors.MissingExtra` naming ``extra`` when one
    cannot be imported; ``purpose`` says what needed it (e.g. ``"waygraph plan"``).

    Example:
        >>> require("llm", "openai").__name__
        'openai'
        >>> require("llm", "no_such_module_xyz", purpose="the demo")
        Traceback (most recent call last):
        ...
        waygraph.errors.MissingExtra: the demo needs the no_such_module_xyz package, \
which is not installed: pip install 'waygraph[llm]'
    """
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r}; known: {', '.join(EXTRAS)}")
    names = modules or EXTRAS[extra]
    loaded: list[ModuleType] = []
    for name in names:
        try:
            loaded.append(importlib.import_module(name))
        except ImportError:
            raise MissingExtra(extra, name, purpose) from None
    return loaded[0]


def lazy_names(
    namespace: dict[str, Any], homes: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's ``__getattr__`` and ``__dir__`` that import ``homes``' names on first use.

    ``namespace`` is the package's ``globals()``; ``homes`` maps a name to the
    module that defines it. A name loaded once is kept in the namespace as a
    real attribute, so later lookups never reach ``__getattr__``.

    Example:
        >>> space = {"__name__": "pkg", "__all__": ["dumps"]}
        >>> getattr_, dir_ = lazy_names(space, {"dumps": "json"})
        >>> getattr_("dumps").__module__, "dumps" in space, dir_()
        ('json', True, ['__all__', '__name__', 'dumps'])
    """
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(namespace.get("__all__", ())))

    return __getattr__, __dir__
