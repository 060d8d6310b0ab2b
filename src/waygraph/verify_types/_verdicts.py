"""The vocabulary of judging: a piece of evidence, a verdict, and what a judge may look at.

These types sit below the plan model (they import nothing of it), so the
model can ask the verify-type registry which names exist without a cycle.
:mod:`waygraph.verify` re-exports them; that is where users import them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from waygraph.verify_types.evidence import printed_exit_status

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
    ``command`` the whole command (:func:`waygraph.verify_types.evidence.command_of`).

    Example:
        >>> Observation(output="5 passed", exit_code=0).source
        'tool'
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

    Example:
        >>> VerifyContext().run_command is None
        True
    """

    workspace: Path | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    confine: bool = False
    tools_run_elsewhere: bool = False
    run_command: CommandRunner | None = None


NO_CONTEXT = VerifyContext()


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
