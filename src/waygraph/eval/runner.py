"""Run every selected task in every mode, ``repeat`` times, in parallel up to a limit.

Each run gets a fresh workspace in a temporary folder, which is removed
afterwards; the task's checker decides success. A run that fails with an
error (the model server is down, a reply cannot be parsed) is recorded as a
failure with its ``error``, never raised, so one bad run cannot lose the rest.

Example:
    >>> from waygraph.eval.scripted import ScriptedModel
    >>> from waygraph.testing import ScriptedChatServer
    >>> with ScriptedChatServer([ScriptedModel("diligent")] * 20) as server:
    ...     records = run_eval(EvalConfig(server.base_url, "scripted",
    ...                                   tasks=select_tasks("log-root-cause")))
    >>> [(r.task, r.mode, r.success) for r in records]
    [('log-root-cause', 'baseline', True), ('log-root-cause', 'guided', True)]
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, Field

from waygraph.chat import DEFAULT_MAX_TOKENS
from waygraph.errors import ConfigError
from waygraph.eval.modes import MODES, ModelSettings, ModeOutcome, run_mode
from waygraph.eval.suite import EvalTask, select_tasks
from waygraph.library import Library, load_library

__all__ = [
    "EvalConfig",
    "Record",
    "load_records",
    "parse_modes",
    "run_eval",
    "sort_records",
    "write_records",
]

#: Modes run when none are named.
DEFAULT_MODES = ("baseline", "guided")


class Record(BaseModel):
    """One run of one task in one mode: a row of ``results.json``."""

    task: str
    mode: str
    repeat: int = Field(ge=1)
    success: bool
    tool_calls: int = 0
    tokens: int = 0
    #: The prompt and completion parts of ``tokens`` (0 where the server did not say).
    prompt_tokens: int = 0
    completion_tokens: int = 0
    wall_time: float = 0.0
    verification_failures: int | None = None
    escalated: bool = False
    model_calls: int = 0
    plan: str | None = None
    plan_status: str | None = None
    #: The mode declared the work done (see ``ModeOutcome.completed``).
    completed: bool = False
    #: Declared done while the checker says it is not.
    false_completion: bool = False
    problems: list[str] = Field(default_factory=list)
    error: str | None = None
    # Document 004's success criteria, recorded by the planned mode only (None
    # elsewhere, and in results written before they were); see docs/eval.md.
    #: The first plan the model wrote passed validation (no repair round); None: no plan reply.
    plan_valid: bool | None = None
    #: Steps of the generated plan (after approval callbacks), and how many were atomic.
    plan_steps: int | None = None
    atomic_steps: int | None = None
    #: Steps of the generated plan whose declared dependencies are sufficient.
    dependency_sufficient_steps: int | None = None
    #: Plan revisions applied during the run.
    revisions: int | None = None


@dataclass
class EvalConfig:
    """What to run: the model, modes, tasks, repeats, parallel jobs."""

    base_url: str
    model: str
    api_key: str = "not-needed"
    modes: Sequence[str] = DEFAULT_MODES
    tasks: Sequence[EvalTask] = field(default_factory=select_tasks)
    repeat: int = 1
    jobs: int = 2
    timeout: float = 120.0
    command_timeout: float = 60.0
    #: Tokens a model reply may have (None: the server's default).
    max_tokens: int | None = DEFAULT_MAX_TOKENS
    library: str | Path | None = None
    #: How tools reach the model: ``native``, ``text`` or ``auto`` (:mod:`waygraph.chat`).
    tool_protocol: str = "auto"
    #: The model's context size in tokens (None: what the server says, else no limit).
    context_tokens: int | None = None


def parse_modes(text: str | None) -> tuple[str, ...]:
    """``"baseline,guided"`` -> ``("baseline", "guided")``, checked and deduplicated.

    Example:
        >>> parse_modes("guided, baseline,guided")
        ('guided', 'baseline')
    """
    if not text:
        return DEFAULT_MODES
    modes: list[str] = []
    for part in text.split(","):
        name = part.strip().lower()
        if not name:
            continue
        if name not in MODES:
            raise ConfigError(f"--mode: unknown mode {name!r}; modes: {', '.join(MODES)}")
        if name not in modes:
            modes.append(name)
    if not modes:
        raise ConfigError(f"--mode names no mode; modes: {', '.join(MODES)}")
    return tuple(modes)


def _one_run(
    task: EvalTask, mode: str, repeat: int, settings: ModelSettings, library: Library
) -> Record:
    started = time.perf_counter()
    outcome, error = ModeOutcome(), None
    with tempfile.TemporaryDirectory(prefix=f"waygraph-eval-{task.id}-") as tmp:
        workspace = task.setup(Path(tmp))
        try:
            outcome = run_mode(mode, task, workspace, settings, library=library)
        except Exception as exc:  # one broken run is a failed run, not a crashed eval
            error = f"{type(exc).__name__}: {exc}"
        # A run the model server broke off keeps the counts of what it did.
        error = error or outcome.error
        verdict = task.check(workspace)
    return Record(
        task=task.id,
        mode=mode,
        repeat=repeat,
        success=verdict.success,
        tool_calls=outcome.tool_calls,
        tokens=outcome.tokens,
        prompt_tokens=outcome.prompt_tokens,
        completion_tokens=outcome.completion_tokens,
        wall_time=round(time.perf_counter() - started, 3),
        verification_failures=outcome.verification_failures,
        escalated=outcome.escalated,
        model_calls=outcome.model_calls,
        plan=outcome.plan,
        plan_status=outcome.plan_status,
        completed=outcome.completed,
        false_completion=outcome.completed and not verdict.success,
        problems=list(verdict.problems),
        error=error,
        **outcome.criteria,
    )


def run_eval(
    config: EvalConfig, *, on_record: Callable[[Record], None] | None = None
) -> list[Record]:
    """Run the eval; records come back sorted by task (suite order), mode, repeat.

    ``on_record`` is called from the calling thread as each run finishes
    (progress bars).
    """
    if config.repeat < 1:
        raise ConfigError(f"--repeat must be at least 1, not {config.repeat}")
    if config.jobs < 1:
        raise ConfigError(f"--jobs must be at least 1, not {config.jobs}")
    modes = parse_modes(",".join(config.modes))
    library = load_library(config.library)
    settings = ModelSettings(
        base_url=config.base_url,
        model=config.model,
        api_key=config.api_key,
        timeout=config.timeout,
        command_timeout=config.command_timeout,
        max_tokens=config.max_tokens,
        tool_protocol=config.tool_protocol,
        context_tokens=config.context_tokens,
    )
    jobs = [
        (task, mode, repeat)
        for repeat in range(1, config.repeat + 1)
        for task in config.tasks
        for mode in modes
    ]
    records: list[Record] = []
    pool = ThreadPoolExecutor(max_workers=config.jobs, thread_name_prefix="waygraph-eval")
    try:
        futures = [pool.submit(_one_run, t, m, r, settings, library) for t, m, r in jobs]
        for future in as_completed(futures):
            record = future.result()
            records.append(record)
            if on_record is not None:
                on_record(record)
    except BaseException:
        # Ctrl-C (or a failing callback): runs not yet started are cancelled
        # rather than awaited; the caller keeps what on_record was given.
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    return sort_records(records, config.tasks, modes)


def sort_records(
    records: Sequence[Record], tasks: Sequence[EvalTask], modes: Sequence[str]
) -> list[Record]:
    """``records`` by task (suite order), mode (as given), then repeat."""
    order = {t.id: i for i, t in enumerate(tasks)}
    return sorted(records, key=lambda r: (order[r.task], list(modes).index(r.mode), r.repeat))


def write_records(records: Sequence[Record], path: Path) -> None:
    """Write ``results.json``: a JSON list of records (replaced whole, never half written)."""
    data = [r.model_dump(mode="json") for r in records]
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    partial.replace(path)


def load_records(path: Path) -> list[Record]:
    """Read a ``results.json`` back (:class:`ConfigError` naming the file when it is bad)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, list):
            raise ValueError("expected a JSON list of records")
        return [Record.model_validate(item) for item in data]
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: not a results.json file: {exc}") from None
