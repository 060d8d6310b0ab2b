"""The checks waygraph makes itself: ``file_exists`` looks at the workspace and
``command`` runs a command (a gate).

``file_exists`` always looks: a relative path resolves against the
workspace (the current directory when none is configured), an absolute path
is checked as written unless ``confine`` keeps checks inside the workspace.
When tools run on another machine the verdict is unknown. ``command`` runs
only when the user allowed commands; elsewhere it is unknown.

Example:
    >>> from waygraph.model import Verify
    >>> COMMAND.describe(Verify(type="command", run="pytest -q"))
    'waygraph runs `pytest -q` and checks: exit code 0'
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from waygraph.verify_types._judge import as_verdict, describe, evaluate
from waygraph.verify_types._lint import text_value
from waygraph.verify_types._spec import Report, VerifySpec
from waygraph.verify_types._verdicts import SUCCESS, Observation, Verdict, VerifyContext
from waygraph.verify_types.exit import EXIT_CODE_ZERO

if TYPE_CHECKING:
    from waygraph.model import Verify

__all__ = ["COMMAND", "DEFAULT_GATE_TIMEOUT", "FILE_EXISTS"]

#: Seconds a command gate may run when its plan gives no timeout.
DEFAULT_GATE_TIMEOUT = 60.0


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


FILE_EXISTS = VerifySpec(
    "file_exists",
    judge=_file_exists,
    summary="the file `value` exists (relative paths: under the workspace)",
    passes_when="the file `value` exists: relative paths under the workspace (else the "
    "current folder), absolute paths as written unless `confine` is on; unknown when tools "
    "run elsewhere",
    describe=lambda v: f"file {v.value!r} must exist",
    negated=lambda v: f"file {v.value!r} must not exist",
    label=lambda v: f"file {v.value!r} exists",
    validate=text_value("the path, relative to the workspace", strip=True),
    example={"type": "file_exists", "value": "dist/app.whl"},
)


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
        # The gate never ran (waygraph.verify.gates had no free slot): no evidence either way.
        return Verdict("unknown", str(unavailable), evidence)
    if v.expect is not None:
        verdict = evaluate(v.expect, evidence, c)
    else:
        verdict = as_verdict(EXIT_CODE_ZERO.judge(v, evidence, c))
    reason = verdict.reason
    if verdict.outcome == "fail" and not reason:
        expect = describe(v.expect) if v.expect is not None else EXIT_CODE_ZERO.describe(v)
        reason = f"`{command}` did not pass: {expect}"
    return Verdict(verdict.outcome, reason, evidence)


def _describe_command(v: Verify) -> str:
    expect = describe(v.expect) if v.expect else "exit code 0"
    return f"waygraph runs `{v.run}` and checks: {expect}"


def _check_command(v: Verify, report: Report) -> None:
    run = v.run.strip() if isinstance(v.run, str) else ""
    if not run:
        report(
            "verify-needs-run",
            "a command gate needs `run`, the command waygraph runs in the "
            "workspace (for example `pytest -q`)",
            "run",
        )
        return
    report(
        "command-gate",
        f"this plan runs `{run}` on the user's machine when the check is "
        "reached; it runs only where the user allowed commands "
        "(allow_commands=True, --allow-commands), elsewhere the check is "
        "unknown and the run waits",
        "run",
    )


COMMAND = VerifySpec(
    "command",
    judge=_command,
    summary="waygraph runs `run` in the workspace and `expect` judges it (a gate)",
    passes_when="a gate: waygraph runs `run` in the workspace (only where commands are "
    "allowed; else unknown) within `timeout` seconds (default 60) and `expect` (default "
    "`exit_code_zero`) judges its output and exit code",
    describe=_describe_command,
    validate=_check_command,
    nested=("expect",),
    runs_once=True,
    example={
        "type": "command",
        "run": "pytest -q",
        "expect": {"type": "output_contains", "value": " passed"},
    },
)
