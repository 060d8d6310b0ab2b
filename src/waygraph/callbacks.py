"""Call a user's callback the way it was written: one helper for every callback site.

waygraph's callbacks receive more than the design documents show (the goal,
the run state, the depth of a sub-plan). A callback written against a
document, ``async def on_step_complete(self, step, result)``, must still
work, and so must one that takes everything by name with ``**kwargs``.
:func:`bind` decides, from the callback's signature:

- a parameter named like a value gets that value (by keyword, or by
  position when it is positional-only);
- an unnamed positional parameter gets the next of the document's positional
  values (``positional``, in the document's order) not given by name yet;
- ``*args`` takes the rest of them, ``**kwargs`` every value not given yet;
- anything else is not passed.

Example:
    >>> def on_step_complete(s, r):
    ...     return s, r
    >>> args, kwargs = bind(on_step_complete, ("step", "result"),
    ...                     {"step": "s1", "result": "ok", "depth": 0})
    >>> on_step_complete(*args, **kwargs)
    ('s1', 'ok')
    >>> bind(lambda step, **rest: None, ("step",), {"step": 1, "depth": 0})
    ((), {'step': 1, 'depth': 0})
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any

__all__ = ["bind", "call"]

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


@lru_cache(maxsize=512)
def _parameters(func: Callable[..., Any]) -> tuple[inspect.Parameter, ...] | None:
    try:
        return tuple(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return None  # no signature to read (some builtins): pass everything by name


def _signature(func: Callable[..., Any]) -> tuple[inspect.Parameter, ...] | None:
    try:
        return _parameters(func)
    except TypeError:  # unhashable callable: not cached
        return _parameters.__wrapped__(func)


def bind(
    func: Callable[..., Any], positional: Sequence[str], values: Mapping[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The (args, kwargs) to call ``func`` with (see the module doc)."""
    params = _signature(func)
    if params is None:
        return (), dict(values)
    named = {p.name for p in params if p.kind is not inspect.Parameter.VAR_POSITIONAL}
    spare = [name for name in positional if name in values and name not in named]
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    used: set[str] = set()
    for param in params:
        if param.kind is inspect.Parameter.VAR_POSITIONAL:
            args += [values[name] for name in spare]
            used.update(spare)
            spare = []
        elif param.kind is inspect.Parameter.VAR_KEYWORD:
            kwargs.update({k: v for k, v in values.items() if k not in used and k not in kwargs})
        elif param.name in values:
            if param.kind is inspect.Parameter.POSITIONAL_ONLY:
                args.append(values[param.name])
            else:
                kwargs[param.name] = values[param.name]
            used.add(param.name)
        elif param.kind in _POSITIONAL and spare and param.default is inspect.Parameter.empty:
            name = spare.pop(0)
            if param.kind is inspect.Parameter.POSITIONAL_ONLY or kwargs:
                # Nothing positional may follow a keyword: pass it by its own name.
                kwargs[param.name] = values[name]
            else:
                args.append(values[name])
            used.add(name)
    return tuple(args), kwargs


async def call(
    func: Callable[..., Any], positional: Sequence[str], values: Mapping[str, Any]
) -> Any:
    """Call ``func`` bound by :func:`bind` and await its result when it is awaitable."""
    args, kwargs = bind(func, positional, values)
    result = func(*args, **kwargs)
    if inspect.isawaitable(result):
        result = await result
    return result
