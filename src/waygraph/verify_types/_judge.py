"""The rules every verify type shares, applied around its spec.

Who may pass a step: words the model wrote are never evidence; a person's
words only for types whose spec accepts ``human``; tool and host evidence
only for types that accept it, bound to a command when the check says
``command_matches``; and the output of a command that never ran its program
fails every check that reads output. Then the spec judges.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from regex import error as regex_error

from waygraph.sandbox import patterns
from waygraph.verify_types._spec import VerifyRegistry, default_label
from waygraph.verify_types._verdicts import (
    FAIL,
    NO_CONTEXT,
    SOURCES,
    SUCCESS,
    Observation,
    Verdict,
    VerifyContext,
    exit_status,
)
from waygraph.verify_types.evidence import never_ran

if TYPE_CHECKING:
    from waygraph.model import Verify

#: Every verify type plan files may use: the built-ins (added when the
#: package loads) and any a program registers.
VERIFY_TYPES = VerifyRegistry()
# Judging is on every turn's path: read the registry's own dict, not a method.
_SPECS = VERIFY_TYPES.specs

#: Why a person's words do not decide a check that wants a tool's result.
HUMAN_ONLY_FOR_PEOPLE = "a person's message is evidence only for a manual check"


def evaluate(
    verify: Verify | None, observation: Observation, context: VerifyContext | None = None
) -> Verdict:
    """The three-valued verdict of ``observation`` against ``verify``.

    Without a check, a known non-zero exit status fails and anything else
    passes.

    Example:
        >>> from waygraph.model import Verify
        >>> evaluate(Verify(type="exit_code_zero"), Observation(output="x", exit_code=0))
        Verdict(outcome='success', reason=None, evidence=None)
        >>> evaluate(None, Observation(output="boom", exit_code=1)).outcome
        'fail'
    """
    if verify is None:
        code = exit_status(observation)
        return SUCCESS if not code else Verdict("fail", f"exit code {code}")
    if observation.source == "model":
        # Defence in depth: drivers never judge model text, but a custom
        # caller might; a claim is not evidence.
        return Verdict("unknown", "words the model wrote are a claim, not evidence")
    if observation.source != "human":
        why = never_ran(observation.output, observation.exit_code)
        if why is not None and reads_output(verify):
            return Verdict("fail", why)
    return judge(verify, observation, context or NO_CONTEXT)


def judge(verify: Verify, observation: Observation, context: VerifyContext) -> Verdict:
    """The verdict of one check inside a tree (all/any/not judge their children with it)."""
    spec = _SPECS.get(verify.type)
    source = observation.source
    if source == "human":
        if spec is None or "human" not in spec.sources:
            return Verdict("unknown", HUMAN_ONLY_FOR_PEOPLE)
    else:
        if verify.command_matches is not None:
            bound = _command_bound(verify.command_matches, observation.command)
            if bound is not None:
                return bound
        # A source waygraph does not name counts as a tool's result.
        machine = source if source in SOURCES else "tool"
        if spec is not None and spec.ask is not None and machine not in spec.sources:
            return Verdict("unknown", spec.ask(verify))
    if spec is None:
        # The model refuses unknown types at load, so this means the type was
        # registered by name only, or in another process: fail safe.
        return Verdict("fail", f"no verifier is registered for {verify.type!r} here")
    return as_verdict(spec.judge(verify, observation, context))


def as_verdict(result: bool | Verdict | None) -> Verdict:
    """A judge's answer as a :class:`Verdict` (None means unknown)."""
    if isinstance(result, Verdict):
        return result
    if result is None:
        return Verdict("unknown", "the check could not decide from this result")
    return SUCCESS if result else FAIL


def reads_output(verify: Verify) -> bool:
    """Whether the check (not a command gate's own) reads the result's output."""
    spec = VERIFY_TYPES.get(verify.type)
    if spec is not None and spec.reads_output:
        return True
    return any(reads_output(child) for child in verify.checks or ())


#: A ``command_matches`` pattern longer than this is not shown to the model.
_SHOWN_PATTERN_CHARS = 60


def _commands(pattern: str) -> str:
    """The commands a pattern accepts, as the model is told them."""
    if len(pattern) <= _SHOWN_PATTERN_CHARS:
        return f"a command matching /{pattern}/"
    return "the step's own command (see its hint)"


def _command_bound(pattern: str, command: str | None) -> Verdict | None:
    """Unknown unless ``command`` matches ``pattern`` (None when it does)."""
    if command is None:
        return Verdict(
            "unknown",
            f"this step's evidence must come from {_commands(pattern)}, "
            "and no command was reported with the result",
        )
    try:
        found = patterns.search(pattern, None, command)
    except (patterns.PatternTimeout, regex_error) as exc:
        return Verdict("unknown", f"the plan's command_matches /{pattern}/ cannot be used: {exc}")
    if found:
        return None
    shown = command if len(command) <= 80 else command[:77] + "..."
    return Verdict(
        "unknown",
        f"`{shown}` is not the command this step needs; run {_commands(pattern)}",
    )


# ---------------------------------------------------------------- words and labels


def person_request(verify: Verify | None) -> str | None:
    """What the model must ask the user for a check in ``verify`` that only a person
    passes (its spec's ``ask``: for ``manual``, ask and then wait), else None.

    Example:
        >>> from waygraph.model import Verify
        >>> person_request(Verify(type="all", checks=(Verify(type="exit_code_zero"),
        ...                Verify(type="manual", value="SHIP"))))
        "a person must confirm this step: ask the user to reply 'SHIP' if they approve, ..."
    """
    for check in verify.walk() if verify is not None else ():
        spec = _SPECS.get(check.type)
        if spec is not None and spec.ask is not None and spec.sources == _PEOPLE:
            return spec.ask(check)
    return None


_PEOPLE = frozenset({"human"})


def describe(verify: Verify | None) -> str:
    """What a check looks for, in words for the model.

    Example:
        >>> from waygraph.model import Verify
        >>> describe(Verify(type="output_not_contains", value="error"))
        "output must not contain 'error'"
    """
    if verify is None:
        return "any result passes unless its exit code is non-zero (no verification)"
    spec = VERIFY_TYPES.get(verify.type)
    if verify.says is not None:
        text = verify.says
    else:
        text = spec.describe(verify) if spec is not None else f"custom check {verify.type!r}"
    if verify.command_matches is not None:
        text += f", from {_commands(verify.command_matches)}"
    return text


def negated(verify: Verify | None) -> str | None:
    """A negated check in plain words where its spec has some ("output must not match ..."
    rather than "not (output must match ...)"); None otherwise."""
    if verify is None or verify.command_matches is not None or verify.says is not None:
        return None
    spec = VERIFY_TYPES.get(verify.type)
    return spec.negated(verify) if spec is not None and spec.negated is not None else None


def label(verify: Verify | None) -> str:
    """A short text for a predicate, as drawn on nodes and edges.

    A check with ``command_matches`` says so: ``exit == 0 from command /pytest/``.

    Example:
        >>> from waygraph.model import Verify
        >>> label(Verify(type="all", checks=(Verify(type="exit_code_zero"),
        ...       Verify(type="output_not_contains", value="error"))))
        "exit == 0 and not contains 'error'"
    """
    if verify is None:
        return ""
    spec = VERIFY_TYPES.get(verify.type)
    text = spec.label(verify) if spec is not None else default_label(verify)
    if verify.command_matches is not None:
        # Grouped checks are bracketed so the command reads as applying to the whole group.
        text = f"({text})" if is_group(verify) else text
        text += f" from command /{verify.command_matches}/"
    return text


def is_group(verify: Verify) -> bool:
    """Whether a drawn label joins several checks (and so is bracketed inside another)."""
    spec = VERIFY_TYPES.get(verify.type)
    return spec is not None and spec.joins is not None and len(verify.checks or ()) > 1
