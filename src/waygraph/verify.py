"""Verification: checking a tool result against a node's ``verify`` predicate.

An :class:`Observation` is one tool result. A node's ``tool`` is only a hint:
whichever tool ran, its result is what gets verified. Each verify type has a
verifier in a registry; register your own with :func:`register`.

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
  (:func:`waygraph.evidence.never_ran`).
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

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from regex import error as regex_error

from waygraph import patterns, people
from waygraph.evidence import never_ran, printed_exit_status
from waygraph.model import BUILTIN_VERIFY_TYPES, Verify, register_verify_type

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
]

#: Output longer than this is verified on its first and last halves of this
#: size: tool dumps can be megabytes, and a regex from a plan must not run for
#: minutes on them.
MAX_VERIFIED_CHARS = 200_000

Outcome = Literal["success", "fail", "unknown"]
Source = Literal["tool", "model", "host", "human"]
#: Where evidence comes from: a tool's real result, words the model wrote, a
#: check the host (or waygraph) ran itself, or a person's own words.
SOURCES: tuple[str, ...] = ("tool", "model", "host", "human")

#: The one line the guidance gives when an exit code is missing.
EXIT_CODE_HINT = 'run the command again followed by `; echo "exit=$?"` so its exit status shows'


@dataclass(frozen=True, slots=True)
class Observation:
    """One piece of evidence, as the engine sees it.

    ``id`` makes a result count once even if the host reports it twice.
    ``data`` is structured event data for ``compare``/``truthy`` checks.
    ``source`` says who produced it: ``"tool"`` (a tool's real result),
    ``"model"`` (words the model wrote; never evidence), ``"host"`` (a check
    the host or waygraph ran) or ``"human"`` (a person's answer). ``call`` is
    a one-line digest of the command or arguments, when the host gives them;
    ``command`` the whole command (:func:`waygraph.evidence.command_of`).
    """

    output: str = ""
    tool_name: str | None = None
    exit_code: int | None = None
    id: str | None = None
    turn: int = 0
    data: Mapping[str, Any] | None = None
    source: str = "tool"
    call: str | None = None
    command: str | None = None

    @property
    def text(self) -> str:
        """The output checks see: all of it, or its start and end when very long."""
        out = self.output or ""
        if len(out) > 2 * MAX_VERIFIED_CHARS:
            return out[:MAX_VERIFIED_CHARS] + "\n" + out[-MAX_VERIFIED_CHARS:]
        return out


@dataclass(frozen=True, slots=True)
class Verdict:
    """A verification's result: the outcome and, when it is not plain, why.

    ``reason`` says why a check failed or could not decide (for unknown it is
    the one line asking for the missing evidence); ``evidence`` is what a
    command gate saw (its output and exit code, ``source="host"``).

    Example:
        >>> Verdict("unknown", EXIT_CODE_HINT).passed is None
        True
    """

    outcome: Outcome
    reason: str | None = None
    evidence: Observation | None = None

    @property
    def passed(self) -> bool | None:
        """True, False, or None for unknown."""
        if self.outcome == "unknown":
            return None
        return self.outcome == "success"


SUCCESS = Verdict("success")
FAIL = Verdict("fail")

#: Runs a command gate: (command, timeout in seconds) -> host evidence.
CommandRunner = Callable[[str, float], Observation]


@dataclass(frozen=True, slots=True)
class VerifyContext:
    """What verifiers may look at besides the observation.

    ``workspace``: where relative paths resolve (None: the current directory).
    ``confine``: absolute paths outside the workspace fail instead of being
    looked at. ``tools_run_elsewhere``: the tools run on another machine, so
    local file checks cannot decide. ``run_command``: runs command gates; None
    means the user did not allow commands.
    """

    workspace: Path | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    confine: bool = False
    tools_run_elsewhere: bool = False
    run_command: CommandRunner | None = None


#: A verifier answers True, False, None (unknown) or a full :class:`Verdict`.
Verifier = Callable[[Verify, Observation, VerifyContext], "bool | Verdict | None"]

_registry: dict[str, Verifier] = {}


def register(name: str, verifier: Verifier | None = None) -> Any:
    """Register a verifier for verify type ``name`` (usable as a decorator).

    Plan files may then use ``{"type": name, ...}``. The verifier returns True,
    False, None when the evidence cannot decide, or a :class:`Verdict`.

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


def evaluate(
    verify: Verify | None, observation: Observation, context: VerifyContext | None = None
) -> Verdict:
    """The three-valued verdict of ``observation`` against ``verify``.

    Without a check, a known non-zero exit status fails and anything else
    passes.

    Example:
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
        if why is not None and _reads_output(verify):
            return Verdict("fail", why)
    return _evaluate(verify, observation, context or _NO_CONTEXT)


def _evaluate(verify: Verify, observation: Observation, context: VerifyContext) -> Verdict:
    if observation.source == "human":
        if verify.type not in _HUMAN_TYPES:
            return Verdict("unknown", "a person's message is evidence only for a manual check")
    elif verify.command_matches is not None:
        bound = _command_bound(verify.command_matches, observation.command)
        if bound is not None:
            return bound
    fn = _registry.get(verify.type)
    if fn is None:
        # The model refuses unknown types at load, so this means a verifier
        # was registered by name only in another process: fail safe.
        return Verdict("fail", f"no verifier is registered for {verify.type!r} here")
    return _as_verdict(fn(verify, observation, context))


#: The checks a person's words can decide (``manual``, and the logic around it).
_HUMAN_TYPES = frozenset({"manual", "all", "any", "not"})
#: The checks that read a command's output: no evidence when it never ran.
_OUTPUT_TYPES = frozenset({"any_output", "output_contains", "output_not_contains", "regex"})


def _reads_output(verify: Verify) -> bool:
    """Whether the check (not a command gate's own) reads the result's output."""
    if verify.type in _OUTPUT_TYPES:
        return True
    return any(_reads_output(child) for child in verify.checks or ())


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


def check(
    verify: Verify | None, observation: Observation, context: VerifyContext | None = None
) -> bool | None:
    """True when ``observation`` satisfies ``verify``, False when not, None when unknown."""
    return evaluate(verify, observation, context).passed


def _as_verdict(result: bool | Verdict | None) -> Verdict:
    if isinstance(result, Verdict):
        return result
    if result is None:
        return Verdict("unknown", "the check could not decide from this result")
    return SUCCESS if result else FAIL


_NO_CONTEXT = VerifyContext()


def exit_status(observation: Observation) -> int | None:
    """The exit code: the real one, else the ``exit=N`` marker on the last line, else None.

    Example:
        >>> exit_status(Observation(output="FAILED: expected exit code 0, got 2")) is None
        True
        >>> exit_status(Observation(output="5 passed\\nexit=0"))
        0
    """
    if observation.exit_code is not None:
        return observation.exit_code
    return printed_exit_status(observation.text[-2000:])


# ---------------------------------------------------------------- built-ins


def _contains(v: Verify, o: Observation, c: VerifyContext) -> bool:
    return str(v.value or "").lower() in o.text.lower()


def _not_contains(v: Verify, o: Observation, c: VerifyContext) -> bool:
    return not _contains(v, o, c)


def _regex(v: Verify, o: Observation, c: VerifyContext) -> Verdict:
    try:
        found = patterns.search(str(v.value or ""), v.flags, o.text)
    except patterns.PatternTimeout as exc:
        # Neither a match nor a miss: "not regex" must not pass on a timeout.
        return Verdict("unknown", f"{exc}; the plan's pattern needs simplifying")
    except regex_error as exc:
        return Verdict("fail", f"the pattern /{v.value}/ does not compile: {exc}")
    return SUCCESS if found else FAIL


def _exit_code(v: Verify, o: Observation, c: VerifyContext) -> Verdict:
    code = exit_status(o)
    if code is None:
        return Verdict("unknown", EXIT_CODE_HINT)
    try:
        expected = int(v.value)
    except (TypeError, ValueError):
        return Verdict("fail", f"exit_code needs an integer value, not {v.value!r}")
    return SUCCESS if code == expected else Verdict("fail", f"exit code {code}, not {expected}")


def _exit_code_zero(v: Verify, o: Observation, c: VerifyContext) -> Verdict:
    code = exit_status(o)
    if code is None:
        return Verdict("unknown", EXIT_CODE_HINT)
    return SUCCESS if code == 0 else Verdict("fail", f"exit code {code}")


def _file_exists(v: Verify, o: Observation, c: VerifyContext) -> Verdict:
    raw = str(v.value or "").strip()
    if not raw:
        return Verdict("fail", "file_exists has no path to look for")
    if c.tools_run_elsewhere:
        return Verdict(
            "unknown",
            f"the tools run on another machine, so waygraph cannot look for {raw!r}; "
            "show it with a tool (for example `ls -l PATH`)",
        )
    root = (c.workspace or Path.cwd()).resolve()
    path = Path(raw).expanduser()
    target = (path if path.is_absolute() else root / path).resolve()
    if c.confine and target != root and root not in target.parents:
        return Verdict("fail", f"{raw!r} is outside the workspace {str(root)!r}")
    try:
        found = target.exists()
    except OSError as exc:
        return Verdict("unknown", f"cannot look at {raw!r}: {exc.strerror or exc}")
    return SUCCESS if found else Verdict("fail", f"{str(target)!r} does not exist")


def _command(v: Verify, o: Observation, c: VerifyContext) -> Verdict:
    command = str(v.run or "").strip()
    if not command:
        return Verdict("fail", "the command gate has no `run` command")
    if c.run_command is None:
        return Verdict(
            "unknown",
            f"the check `{command}` is a command gate and command gates are disabled; "
            "the user can allow them (allow_commands=True, --allow-commands)",
        )
    evidence = c.run_command(command, float(v.timeout or DEFAULT_GATE_TIMEOUT))
    unavailable = (evidence.data or {}).get("unavailable")
    if evidence.exit_code is None and unavailable:
        # The gate never ran (waygraph.gates had no free slot): no evidence either way.
        return Verdict("unknown", str(unavailable), evidence)
    verdict = evaluate(v.expect or _EXIT_ZERO, evidence, c)
    reason = verdict.reason
    if verdict.outcome == "fail" and not reason:
        reason = f"`{command}` did not pass: {describe(v.expect or _EXIT_ZERO)}"
    return Verdict(verdict.outcome, reason, evidence)


#: Seconds a command gate may run when its plan gives no timeout.
DEFAULT_GATE_TIMEOUT = 60.0
_EXIT_ZERO = Verify(type="exit_code_zero")


def _any_output(v: Verify, o: Observation, c: VerifyContext) -> bool:
    return bool(o.text.strip())


def _manual(v: Verify, o: Observation, c: VerifyContext) -> Verdict:
    if o.source != "human":
        return Verdict("unknown", people.manual_request(v.value))
    answer = o.text.strip()
    if people.is_refusal(answer):
        return Verdict("fail", f"the person refused: {answer[:80]!r}")
    if v.value:
        if str(v.value).lower() in answer.lower():
            return SUCCESS
        return Verdict("unknown", f"the person's answer does not contain {str(v.value)!r}")
    return SUCCESS if answer else Verdict("unknown", "the person's answer is empty")


def _all(v: Verify, o: Observation, c: VerifyContext) -> Verdict:
    unknown: Verdict | None = None
    evidence = None
    for child in v.checks or ():
        verdict = _evaluate(child, o, c)
        evidence = verdict.evidence or evidence
        if verdict.outcome == "fail":
            return Verdict("fail", verdict.reason, evidence)
        if verdict.outcome == "unknown" and unknown is None:
            unknown = verdict
    if unknown is not None:
        return Verdict("unknown", unknown.reason, evidence)
    return Verdict("success", None, evidence)


def _any(v: Verify, o: Observation, c: VerifyContext) -> Verdict:
    unknown: Verdict | None = None
    last_fail: Verdict | None = None
    for child in v.checks or ():
        verdict = _evaluate(child, o, c)
        if verdict.outcome == "success":
            return verdict
        if verdict.outcome == "unknown":
            unknown = unknown or verdict
        else:
            last_fail = verdict
    if unknown is not None:
        return unknown
    return last_fail or FAIL


def _not(v: Verify, o: Observation, c: VerifyContext) -> Verdict:
    children = v.checks or ()
    if len(children) != 1:
        return Verdict("fail", "not needs exactly one check")
    verdict = _evaluate(children[0], o, c)
    if verdict.outcome == "unknown":
        return verdict
    return Verdict("fail" if verdict.outcome == "success" else "success", None, verdict.evidence)


def _data_of(o: Observation) -> Mapping[str, Any]:
    if o.data is not None:
        return o.data
    return {"output": o.output, "exit_code": o.exit_code, "tool_name": o.tool_name}


def _compare(v: Verify, o: Observation, c: VerifyContext) -> bool:
    from waygraph.predicates import evaluate_data

    return evaluate_data(v, _data_of(o))


_BUILTINS: dict[str, Verifier] = {
    "output_contains": _contains,
    "output_not_contains": _not_contains,
    "regex": _regex,
    "exit_code": _exit_code,
    "exit_code_zero": _exit_code_zero,
    "file_exists": _file_exists,
    "command": _command,
    "any_output": _any_output,
    "manual": _manual,
    "all": _all,
    "any": _any,
    "not": _not,
    "compare": _compare,
    "truthy": _compare,
}
for _name, _fn in _BUILTINS.items():
    _registry[_name] = _fn
assert set(_registry) == set(BUILTIN_VERIFY_TYPES)


def judge_for(
    observation: Observation, context: VerifyContext | None = None
) -> Callable[[Verify | None], Verdict]:
    """The engine's judge for one observation: the verdict of any predicate.

    A command gate asked twice in one turn (a route checked again) runs once.

    Example:
        >>> judge = judge_for(Observation(output="ok", exit_code=0))
        >>> judge(Verify(type="exit_code_zero")).outcome
        'success'
    """
    seen: dict[int, tuple[Verify, Verdict]] = {}

    def judge(verify: Verify | None) -> Verdict:
        if verify is None or verify.type != "command":
            return evaluate(verify, observation, context)
        hit = seen.get(id(verify))
        if hit is None or hit[0] is not verify:
            hit = (verify, evaluate(verify, observation, context))
            seen[id(verify)] = hit
        return hit[1]

    return judge


# ---------------------------------------------------------------- describing


def _negated(verify: Verify | None) -> str | None:
    """A negated check in plain words where there are some ("output must not match ..."
    rather than "not (output must match ...)"); None otherwise."""
    if verify is None or verify.command_matches is not None:
        return None
    t, val = verify.type, verify.value
    if t == "regex":
        return f"output must not match /{val}/{verify.flags or ''}"
    if t in ("output_contains", "output_not_contains"):
        must = "must not" if t == "output_contains" else "must"
        return f"output {must} contain {val!r}"
    if t == "exit_code_zero":
        return "the command must fail (a non-zero exit code)"
    if t == "file_exists":
        return f"file {val!r} must not exist"
    return "no output" if t == "any_output" else None


def describe(verify: Verify | None) -> str:
    """What a check looks for, in words for the model.

    Example:
        >>> describe(Verify(type="output_not_contains", value="error"))
        "output must not contain 'error'"
    """
    if verify is None:
        return "any result passes unless its exit code is non-zero (no verification)"
    text = _describe(verify)
    if verify.command_matches is not None:
        text += f", from {_commands(verify.command_matches)}"
    return text


def _describe(verify: Verify) -> str:
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
    if t == "command":
        expect = describe(verify.expect) if verify.expect else "exit code 0"
        return f"waygraph runs `{verify.run}` and checks: {expect}"
    if t == "any_output":
        # Document 003's words ("Verify: any non-empty output").
        return "any non-empty output"
    if t == "manual":
        return f"a person confirms with {val!r}" if val else "a person confirms"
    if t in ("all", "any"):
        joiner = " and " if t == "all" else " or "
        return joiner.join(describe(c) for c in verify.checks or ()) or "nothing"
    if t == "not":
        inner = (verify.checks or (None,))[0]
        return _negated(inner) or f"not ({describe(inner)})"
    if t == "compare":
        return f"{verify.field} {verify.op} {val!r}"
    if t == "truthy":
        return f"{verify.field} is set"
    return f"custom check {t!r}"
