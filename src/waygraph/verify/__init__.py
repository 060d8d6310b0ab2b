"""Verification: checking a tool result against a node's ``verify`` predicate.

An :class:`Observation` is one tool result. A node's ``tool`` is only a hint:
whichever tool ran, its result is what gets verified. Each verify type is one
spec (:class:`waygraph.verify_types.VerifySpec`) in the registry
:data:`waygraph.verify_types.VERIFY_TYPES`, which judges, describes and
draws it; register your own judge with :func:`register`, or a whole spec
with ``VERIFY_TYPES.add``. This module is where users import from.

Documented choices:

- ``output_contains`` / ``output_not_contains`` compare lowercase, as the
  established Agent-Zero selector does.
- A verdict has three values: ``success``, ``fail`` and ``unknown`` (the
  evidence cannot decide). Unknown costs no attempt: the run waits on the
  node and the guidance asks for the missing evidence.
- ``exit_code_zero`` / ``exit_code`` use the real exit code when the
  observation has one, else the marker the guidance asks for (``exit=N``)
  when it is the output's last non-empty line, else the verdict is unknown.
  "exit code 1" or "returned code 2" printed anywhere else never count, and
  words such as "error" never decide an exit code.
- A node without ``verify`` fails on a known non-zero exit status and passes
  otherwise.
- ``command_matches`` (on any check) binds the evidence to the command that
  produced it: evidence from a command that does not match the pattern, or
  with no command reported, is unknown.
- Output checks (``any_output``, ``output_contains``, ``output_not_contains``,
  ``regex``) fail on the output of a command that never ran its program
  (:func:`waygraph.verify_types.evidence.never_ran`).
- ``file_exists`` always looks: a relative path resolves against the
  workspace (the current directory when none is configured), an absolute
  path is checked as written unless ``confine`` keeps checks inside the
  workspace. When tools run on another machine the verdict is unknown.
- ``command`` runs a command waygraph itself (a gate) and judges its output
  with ``expect``; only when the user allowed commands, else unknown.
- Model text (``source="model"``) is never evidence: its verdict is unknown.
- A person's words (``source="human"``) are evidence only for ``manual``
  checks, and ``manual`` passes on nothing else: the person's answer
  containing the ``value`` (any answer but a refusal when there is none).

Example:
    >>> from waygraph.model import Verify
    >>> check(Verify(type="output_not_contains", value="ERROR"), Observation(output="all good"))
    True
    >>> check(Verify(type="exit_code_zero"), Observation(output="ok", exit_code=2))
    False
    >>> evaluate(Verify(type="exit_code_zero"), Observation(output="all fine")).outcome
    'unknown'
    >>> evaluate(Verify(type="manual", value="CONFIRMED"), Observation(output="CONFIRMED")).outcome
    'unknown'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from waygraph.verify_types import VERIFY_TYPES, VerifySpec, describe, evaluate
from waygraph.verify_types._spec import Verifier
from waygraph.verify_types._verdicts import EXIT_CODE_HINT as EXIT_CODE_HINT
from waygraph.verify_types._verdicts import MAX_VERIFIED_CHARS as MAX_VERIFIED_CHARS
from waygraph.verify_types._verdicts import SOURCES, Observation, Outcome, Verdict, VerifyContext
from waygraph.verify_types._verdicts import CommandRunner as CommandRunner
from waygraph.verify_types._verdicts import Source as Source
from waygraph.verify_types._verdicts import exit_status as exit_status
from waygraph.verify_types.world import DEFAULT_GATE_TIMEOUT as DEFAULT_GATE_TIMEOUT

if TYPE_CHECKING:
    from waygraph.model import Verify

__all__ = [
    "SOURCES",
    "Observation",
    "Outcome",
    "Verdict",
    "Verifier",
    "VerifyContext",
    "check",
    "describe",
    "evaluate",
    "judge_for",
    "register",
    "unregister",
]


def register(name: str, verifier: Verifier | None = None) -> Any:
    """Register a verifier for verify type ``name`` (usable as a decorator).

    Plan files may then use ``{"type": name, ...}``. The verifier returns True,
    False, None when the evidence cannot decide, or a :class:`Verdict`. A new
    name gets a spec with default words and label (give a whole
    :class:`~waygraph.verify_types.VerifySpec` to ``VERIFY_TYPES.add`` for
    your own); a registered name keeps its spec and takes the new judge.
    Registrations last for the process (:func:`unregister` forgets one).

    Example:
        >>> @register("output_is_json")
        ... def _is_json(verify, obs, ctx):
        ...     import json
        ...     try:
        ...         json.loads(obs.output)
        ...     except ValueError:
        ...         return False
        ...     return True
        >>> from waygraph.model import Verify
        >>> check(Verify(type="output_is_json"), Observation(output="[1]"))
        True
        >>> unregister("output_is_json")
    """

    def add(fn: Verifier) -> Verifier:
        known = VERIFY_TYPES.get(name)
        spec = VerifySpec(name, judge=fn) if known is None else dataclasses.replace(known, judge=fn)
        VERIFY_TYPES.add(spec, builtin=known is not None and known in VERIFY_TYPES.builtin())
        return fn

    return add(verifier) if verifier is not None else add


def unregister(name: str) -> None:
    """Forget the verify type ``name`` that a program registered (built-ins stay).

    Example:
        >>> register("output_is_csv", lambda verify, obs, ctx: "," in obs.output)
        <function <lambda> at ...>
        >>> unregister("output_is_csv")
    """
    VERIFY_TYPES.remove(name)


def check(
    verify: Verify | None, observation: Observation, context: VerifyContext | None = None
) -> bool | None:
    """True when ``observation`` satisfies ``verify``, False when not, None when unknown.

    Example:
        >>> from waygraph.model import Verify
        >>> check(Verify(type="exit_code_zero"), Observation(output="ok", exit_code=2))
        False
    """
    return evaluate(verify, observation, context).passed


def judge_for(
    observation: Observation, context: VerifyContext | None = None
) -> Callable[[Verify | None], Verdict]:
    """The engine's judge for one observation: the verdict of any predicate.

    A check whose spec runs something (a command gate) asked twice in one
    turn (a route checked again) runs once.

    Example:
        >>> from waygraph.model import Verify
        >>> judge = judge_for(Observation(output="ok", exit_code=0))
        >>> judge(Verify(type="exit_code_zero")).outcome
        'success'
    """
    seen: dict[int, tuple[Verify, Verdict]] = {}
    specs = VERIFY_TYPES.specs

    def judge(verify: Verify | None) -> Verdict:
        if verify is None:
            return evaluate(verify, observation, context)
        spec = specs.get(verify.type)
        if spec is None or not spec.runs_once:
            return evaluate(verify, observation, context)
        hit = seen.get(id(verify))
        if hit is None or hit[0] is not verify:
            hit = (verify, evaluate(verify, observation, context))
            seen[id(verify)] = hit
        return hit[1]

    return judge
