"""waygraph.callbacks: a callback gets the arguments its signature asks for."""

from __future__ import annotations

import asyncio
from typing import Any

from waygraph.callbacks import bind, call

VALUES = {"step": "s1", "result": "ok", "state": "st", "depth": 0}
ORDER = ("step", "result")


def run(func: Any) -> Any:
    return asyncio.run(call(func, ORDER, VALUES))


def test_the_documents_positional_form():
    assert run(lambda s, r: (s, r)) == ("s1", "ok")

    class Callbacks:
        async def on_step_complete(self, step, result):
            return step, result

    assert run(Callbacks().on_step_complete) == ("s1", "ok")


def test_names_win_over_positions_and_extras_need_a_name_or_kwargs():
    assert run(lambda result, step: (step, result)) == ("s1", "ok")
    assert run(lambda *, step, depth: (step, depth)) == ("s1", 0)
    assert run(lambda step, **rest: (step, sorted(rest))) == ("s1", ["depth", "result", "state"])
    # A named value first, then an unnamed positional one: passed by its own name.
    assert run(lambda step, outcome: (step, outcome)) == ("s1", "ok")


def test_star_args_positional_only_and_defaults():
    assert run(lambda *args: args) == ("s1", "ok")
    assert run(lambda step, /, result: (step, result)) == ("s1", "ok")
    # A parameter with a default is the callback's own: never filled by position.
    assert run(lambda s, verbose=False: (s, verbose)) == ("s1", False)


def test_callables_without_a_signature_or_a_hash():
    class Unhashable:
        __hash__ = None  # type: ignore[assignment]

        def __call__(self, step, result):
            return step, result

    assert run(Unhashable()) == ("s1", "ok")
    args, kwargs = bind(dict, ORDER, {"step": 1})  # no readable signature: all by name
    assert (args, kwargs) == ((), {"step": 1})
