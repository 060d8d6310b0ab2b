"""The one way waygraph imports an optional package (an extra).

Every import of a package that only an extra installs (``pip install
'waygraph[llm]'`` and friends, see ``[project.optional-dependencies]`` in
pyproject.toml) goes through :func:`require` first, so a missing package is
one line naming the extra to install (:class:`~waygraph.errors.MissingExtra`,
exit code 2 on the command line), never a traceback or a wrong hint.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from waygraph.errors import MissingExtra

__all__ = ["EXTRAS", "require"]

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
