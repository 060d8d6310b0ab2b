"""Verification: checking a tool result against a node's ``verify`` predicate.

An :class:`Observation` is one tool result. A node's ``tool`` is only a hint:
whichever tool ran, its result is what gets verified. Each verify type has a
verifier in a registry; register your own with :func:`register`.

Documented choices:

- ``output_contains`` / ``output_not_contains`` compare lowercase, as the
  established Agent-Zero selector does.
- ``exit_code_zero`` uses the real exit code when the observation has one.
  Without it (many agent tools report only text) it first looks for an exit
  status the tool printed ("exit code 1", "returned non-zero exit status 2",
  "[exit status: 0]"), and otherwise passes unless the output looks like a
  failure (the words error, failed, fatal, traceback, exception, "command not
  found", "no such file or directory"); counts of nothing such as "0 failed"
  or "no errors" are not failures.
- ``file_exists`` looks under the workspace root; a path that escapes it
  fails. With no workspace configured it passes, as the established selector
  does (it cannot look).
- ``manual`` passes on the next result, or, when the plan gives a ``value``,
  only on a result containing that confirmation marker.

Example:
    >>> from waygraph.model import Verify
    >>> check(Verify(type="output_not_contains", value="ERROR"), Observation(output="all good"))
    True
    >>> check(Verify(type="exit_code_zero"), Observation(output="ok", exit_code=2))
    False
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from waygraph.model import BUILTIN_VERIFY_TYPES, Verify, register_verify_type

__all__ = [
    "Observation",
    "Verifier",
    "VerifyContext",
    "check",
    "describe",
    "register",
]

#: Output longer than this is verified on its first and last halves of this
#: size: tool dumps can be megabytes, and a regex from a plan must not run for
#: minutes on them.
MAX_VERIFIED_CHARS = 200_000

_FAILURE_WORDS = re.compile(
    r"\b(error|errors|failed|failure|fatal|traceback|exception)\b"
    r"|command not found|no such file or directory",
    re.IGNORECASE,
)
#: Counts of nothing ("0 failed", "no errors", "errors: 0") are success
#: reports: test runners and linters print them on every clean run.
_ZERO_COUNTS = re.compile(
    r"\b(?:0|no|zero)\s+(?:errors?|failed|failures?|exceptions?)\b"
    r"|\b(?:errors?|failed|failures?)\s*[:=]\s*0\b",
    re.IGNORECASE,
)
_PRINTED_STATUS = re.compile(
    r"(?:exit(?:ed)?(?: with)?(?: code| status)|non-zero exit status|return(?:ed)? code)"
    r"\s*[:=]?\s*(-?\d+)",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Observation:
    """One tool result, as the engine sees it.

    ``id`` makes a result count once even if the host reports it twice.
    ``data`` is structured event data for ``compare``/``truthy`` checks.
    """

    output: str = ""
    tool_name: str | None = None
    exit_code: int | None = None
    id: str | None = None
    turn: int = 0
    data: Mapping[str, Any] | None = None

    @property
    def text(self) -> str:
        out = self.output or ""
        if len(out) > 2 * MAX_VERIFIED_CHARS:
            return out[:MAX_VERIFIED_CHARS] + "\n" + out[-MAX_VERIFIED_CHARS:]
        return out


@dataclass(frozen=True, slots=True)
class VerifyContext:
    """What verifiers may look at besides the observation."""

    workspace: Path | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


Verifier = Callable[[Verify, Observation, VerifyContext], bool]

_registry: dict[str, Verifier] = {}


def register(name: str, verifier: Verifier | None = None) -> Any:
    """Register a verifier for verify type ``name`` (usable as a decorator).

    Plan files may then use ``{"type": name, ...}``.

    Example:
        >>> @register("output_is_json")
        ... def _is_json(verify, obs, ctx):
        ...     import json
        ...     try:
        ...         json.loads(obs.output)
        ...     except ValueError:
        ...         return False
        ...     return True
        >>> check(Verify(type="output_is_json"), Observation(output="[1]"))
        True
    """

    def add(fn: Verifier) -> Verifier:
        _registry[name] = fn
        register_verify_type(name)
        return fn

    return add(verifier) if verifier is not None else add


def check(
    verify: Verify | None, observation: Observation, context: VerifyContext | None = None
) -> bool:
    """True when ``observation`` satisfies ``verify`` (a missing verify passes)."""
    if verify is None:
        return True
    fn = _registry.get(verify.type)
    if fn is None:
        # The model refuses unknown types at load, so this means a verifier
        # was registered by name only in another process: fail safe.
        return False
    return bool(fn(verify, observation, context or _NO_CONTEXT))


_NO_CONTEXT = VerifyContext()


def exit_status(observation: Observation) -> int | None:
    """The exit code: the real one, else one the tool printed, else None."""
    if observation.exit_code is not None:
        return observation.exit_code
    found = _PRINTED_STATUS.findall(observation.text[-2000:])
    return int(found[-1]) if found else None


# ---------------------------------------------------------------- built-ins


def _contains(v: Verify, o: Observation, c: VerifyContext) -> bool:
    return str(v.value or "").lower() in o.text.lower()


def _not_contains(v: Verify, o: Observation, c: VerifyContext) -> bool:
    return not _contains(v, o, c)


@lru_cache(maxsize=512)
def _compiled(pattern: str, flags: str | None) -> re.Pattern[str]:
    bits = 0
    for letter in flags or "":
        bits |= {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE}.get(
            letter, 0
        )
    return re.compile(pattern, bits)


def _regex(v: Verify, o: Observation, c: VerifyContext) -> bool:
    try:
        return _compiled(str(v.value or ""), v.flags).search(o.text) is not None
    except re.error:
        return False


def _exit_code(v: Verify, o: Observation, c: VerifyContext) -> bool:
    code = exit_status(o)
    try:
        return code is not None and code == int(v.value)
    except (TypeError, ValueError):
        return False


def _exit_code_zero(v: Verify, o: Observation, c: VerifyContext) -> bool:
    code = exit_status(o)
    if code is not None:
        return code == 0
    return _FAILURE_WORDS.search(_ZERO_COUNTS.sub(" ", o.text)) is None


def _file_exists(v: Verify, o: Observation, c: VerifyContext) -> bool:
    if c.workspace is None:
        return True
    raw = str(v.value or "").strip()
    if not raw:
        return False
    root = c.workspace.resolve()
    target = (root / raw).resolve()
    if target != root and root not in target.parents:
        return False  # escapes the workspace: refuse rather than look
    return target.exists()


def _any_output(v: Verify, o: Observation, c: VerifyContext) -> bool:
    return bool(o.text.strip())


def _manual(v: Verify, o: Observation, c: VerifyContext) -> bool:
    if v.value:
        return str(v.value).lower() in o.text.lower()
    return True


def _all(v: Verify, o: Observation, c: VerifyContext) -> bool:
    return all(check(child, o, c) for child in v.checks or ())


def _any(v: Verify, o: Observation, c: VerifyContext) -> bool:
    return any(check(child, o, c) for child in v.checks or ())


def _not(v: Verify, o: Observation, c: VerifyContext) -> bool:
    children = v.checks or ()
    return len(children) == 1 and not check(children[0], o, c)


def _data_of(o: Observation) -> Mapping[str, Any]:
    if o.data is not None:
        return o.data
    return {"output": o.output, "exit_code": o.exit_code, "tool_name": o.tool_name}


def _compare(v: Verify, o: Observation, c: VerifyContext) -> bool:
    from waygraph.predicates import evaluate_data

    return evaluate_data(v, _data_of(o))


for _name, _fn in {
    "output_contains": _contains,
    "output_not_contains": _not_contains,
    "regex": _regex,
    "exit_code": _exit_code,
    "exit_code_zero": _exit_code_zero,
    "file_exists": _file_exists,
    "any_output": _any_output,
    "manual": _manual,
    "all": _all,
    "any": _any,
    "not": _not,
    "compare": _compare,
    "truthy": _compare,
}.items():
    _registry[_name] = _fn
assert set(_registry) == set(BUILTIN_VERIFY_TYPES)


# ---------------------------------------------------------------- describing


def describe(verify: Verify | None) -> str:
    """What a check looks for, in words for the model.

    Example:
        >>> describe(Verify(type="output_not_contains", value="error"))
        "output must not contain 'error'"
    """
    if verify is None:
        return "any result passes (no verification)"
    t, val = verify.type, verify.value
    if t == "output_contains":
        return f"output must contain {val!r}"
    if t == "output_not_contains":
        return f"output must not contain {val!r}"
    if t == "regex":
        return f"output must match /{val}/{verify.flags or ''}"
    if t == "exit_code":
        return f"exit code must be {val}"
    if t == "exit_code_zero":
        return "the command must succeed (exit code 0)"
    if t == "file_exists":
        return f"file {val!r} must exist"
    if t == "any_output":
        return "the tool must produce some output"
    if t == "manual":
        return f"confirm with {val!r}" if val else "report the result for confirmation"
    if t in ("all", "any"):
        joiner = " and " if t == "all" else " or "
        return joiner.join(describe(c) for c in verify.checks or ()) or "nothing"
    if t == "not":
        inner = (verify.checks or (None,))[0]
        return f"not ({describe(inner)})"
    if t == "compare":
        return f"{verify.field} {verify.op} {val!r}"
    if t == "truthy":
        return f"{verify.field} is set"
    return f"custom check {t!r}"
