"""The session-plan rules, pure: a :class:`SessionPlanRun` in, a new one out.

Document 001's plans, which the model declares itself (``[Step] ...``), as
transitions over the frozen value of :mod:`waygraph.engine.session_plan_run`:
:func:`new_plan`, :func:`apply_reply` (one model reply: declared steps,
progress, completion, failure, a question to the user), :func:`pause`,
:func:`resume`, :func:`reopen` and :func:`fail`; :func:`at_limit` pauses a
plan at the host's iteration limit (fails it when nobody will say
"continue"). The planner's hooks are one rule each: :func:`hear` (a user
message: the answer to the model's question, a correction, "continue"),
:func:`take_reply` (a model reply: start a plan, record it, pause at the
budget) and :func:`at_limit`. No I/O and no clock: callers pass ``now`` (an ISO 8601 string)
and ids; the plan given is never changed. The words the rules read
(continue intents, corrections, markers) are in
:mod:`waygraph.engine.session_plan_text`. ``waygraph.sessions.SessionPlanner``
does the file work around these.

Example:
    >>> plan = new_plan("s1", "Fix the login bug", now="2025-01-01T00:00:00+00:00",
    ...                 plan_id="plan_abc")
    >>> plan = apply_reply(plan, "[Step] Reproduce it\\n[Step] Fix it", 1, now="...")
    >>> [(s.description, s.status) for s in plan.steps]
    [('Reproduce it', 'running'), ('Fix it', 'pending')]
    >>> asked = apply_reply(plan, "Which browser fails?", 0, now="...", asks_user=True)
    >>> asked.status, asked.awaiting, asked.question
    ('running', 'user', 'Which browser fails?')
    >>> plan.awaiting is None  # the value given is unchanged
    True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, NamedTuple

from waygraph.engine.session_plan_run import (
    AWAITING_USER,
    FINISHED,
    PLAN_STATUSES,
    STEP_STATUSES,
    SessionPlanRun,
    SessionStep,
    StepProgress,
    evolve,
    without,
)
from waygraph.engine.session_plan_text import (
    detect_step_completion,
    extract_step_declarations,
    failure_report,
    has_done_marker,
    is_continue_intent,
    is_correction,
    progress_report,
    prose,
    same_step,
    tail,
    trim,
)

__all__ = [
    "AWAITING_USER",
    "FINISHED",
    "LIMIT_REASON",
    "PLAN_STATUSES",
    "STEP_STATUSES",
    "Heard",
    "SessionPlanRun",
    "SessionStep",
    "StepProgress",
    "apply_reply",
    "at_limit",
    "fail",
    "hear",
    "new_plan",
    "pause",
    "reopen",
    "resume",
    "take_reply",
]

#: The failure reason of an unattended plan stopped at the iteration limit.
LIMIT_REASON = "iteration limit reached"


def new_plan(session_id: str, goal: str, *, now: str, plan_id: str) -> SessionPlanRun:
    """A running plan with no steps yet; steps come from the replies.

    Example:
        >>> new_plan("s", "Ship it", now="t0", plan_id="plan_1").status
        'running'
    """
    return SessionPlanRun(
        id=plan_id, session_id=session_id, goal=goal, created_at=now, updated_at=now
    )


def apply_reply(
    plan: SessionPlanRun, text: str, tool_calls: int, *, now: str, asks_user: bool = False
) -> SessionPlanRun:
    """Record one model reply (one iteration) in a running plan.

    Order: declared steps are added; a plan without a running step starts its
    next pending one (or an implicit step for the whole goal); the reply
    counts as an iteration of that step; ``[Progress]`` updates it;
    ``[Failed]`` fails it and the plan; a reply without tool calls that asks
    the user (``asks_user``) leaves the plan running and waiting on the user
    (``awaiting`` is ``"user"``, ``question`` the end of the reply), its step
    completed only by an explicit marker; any other reply without tool calls
    completes the step and the plan; otherwise the step completes on a
    marker, a transition word (from its second iteration), or its tenth
    iteration.

    Example:
        >>> plan = new_plan("s", "Ship it", now="t0", plan_id="plan_1")
        >>> plan = apply_reply(plan, "[Step] Build\\n[Progress] 1/3", 1, now="t1")
        >>> plan.current_step.progress, plan.current_step.iterations
        (StepProgress(current=1, total=3), 1)
    """
    # A "pending" plan written by another tool starts here; whatever the
    # model says next, it is no longer waiting on an earlier question.
    plan = evolve(
        plan,
        status="running",
        iteration_count=plan.iteration_count + 1,
        updated_at=now,
        awaiting=None,
        question=None,
    )
    words = prose(text)
    plan = _add_steps(plan, extract_step_declarations(text))
    if plan.current_step is None:
        plan = _start_next(plan, now)
    if not plan.steps:
        plan = _start_next(_add(plan, _new_step(plan, plan.goal, implicit=True)), now)
    index = plan.current_step_index
    step = plan.current_step
    if step is not None:
        step = evolve(step, iterations=step.iterations + 1)
        reported = progress_report(text)
        if reported is not None and reported[1] > 0:
            done, total = reported
            step = evolve(step, progress=StepProgress(min(done, total), total))
        plan = _put(plan, index, step)
    reason = failure_report(text)
    if reason is not None:
        return fail(plan, reason, now=now)
    if tool_calls <= 0 and asks_user:
        # A question is not the end: the plan waits for the answer. "Now" or
        # "next" in a question is what the model would do after the answer,
        # so only an explicit marker completes the step here.
        if step is not None and has_done_marker(words):
            plan = _complete(plan, index, words or text, "marker", now)
        return evolve(plan, awaiting=AWAITING_USER, question=tail(words) or tail(text) or None)
    if tool_calls <= 0:
        if step is not None:
            plan = _complete(plan, index, words or text, "final", now)
        return evolve(plan, status="completed")
    if step is not None:
        how = detect_step_completion(text, step.iterations)
        if how is not None:
            plan = _complete(plan, index, words or text, how, now)
    return plan


def fail(plan: SessionPlanRun, reason: str, *, now: str) -> SessionPlanRun:
    """Fail the plan and its running step, keeping everything else as it was.

    Example:
        >>> plan = apply_reply(new_plan("s", "g", now="t0", plan_id="p"), "[Step] A", 1, now="t1")
        >>> failed = fail(plan, "no network", now="t2")
        >>> failed.status, failed.steps[0].status, failed.failure_reason
        ('failed', 'failed', 'no network')
    """
    # A failed plan waits for nobody.
    plan = evolve(plan, awaiting=None, question=None)
    step = plan.current_step
    if step is not None:
        step = evolve(
            step,
            status="failed",
            result=trim(reason) if reason else None,
            completed_at=now,
            completed_by="failed",
        )
        plan = _put(plan, plan.current_step_index, step)
    return evolve(plan, status="failed", failure_reason=reason or None, updated_at=now)


def pause(plan: SessionPlanRun, *, now: str) -> SessionPlanRun:
    """Pause a running plan (the host's loop stopped); other states are kept.

    Example:
        >>> pause(new_plan("s", "g", now="t0", plan_id="p"), now="t1").status
        'paused'
    """
    if plan.status in ("running", "pending"):
        return evolve(plan, status="paused", updated_at=now)
    return plan


def at_limit(plan: SessionPlanRun, *, now: str, unattended: bool) -> SessionPlanRun:
    """The host's loop stopped at its iteration limit: a running plan pauses.

    Nobody will say "continue" to an ``unattended`` plan, so it fails with
    :data:`LIMIT_REASON` instead of promising a resume. A plan waiting on
    the user's answer keeps waiting (the answer, not "continue", carries it
    on), unless unattended. A paused or finished plan is returned as given.

    Example:
        >>> plan = new_plan("s", "g", now="t0", plan_id="p")
        >>> at_limit(plan, now="t1", unattended=False).status, at_limit(
        ...     plan, now="t1", unattended=True).failure_reason
        ('paused', 'iteration limit reached')
    """
    if plan.status not in ("running", "pending"):
        return plan
    if unattended:
        return fail(plan, LIMIT_REASON, now=now)
    if plan.waiting_on_user:
        return plan
    return pause(plan, now=now)


def resume(plan: SessionPlanRun, *, now: str) -> SessionPlanRun:
    """Set a paused plan (a completed one, for a correction; one waiting on the
    user, for the answer) running with a fresh budget, waiting on nobody.

    Example:
        >>> plan = pause(new_plan("s", "g", now="t0", plan_id="p"), now="t1")
        >>> resume(plan, now="t2").status
        'running'
    """
    return evolve(
        plan,
        status="running",
        awaiting=None,
        question=None,
        resumed_at_iteration=plan.iteration_count,
        updated_at=now,
    )


def reopen(plan: SessionPlanRun, *, now: str) -> SessionPlanRun | None:
    """Reopen the step completed most recently; None when no step is completed.

    The reopened step runs again with a fresh iteration count; the step that
    was running goes back to pending. A paused or completed plan runs again.

    Example:
        >>> plan = new_plan("s", "g", now="t0", plan_id="p")
        >>> plan = apply_reply(plan, "[Step] A\\n[Step] B\\nA is built. [done]", 1, now="t1")
        >>> [s.status for s in reopen(plan, now="t2").steps]
        ['running', 'pending']
    """
    completed = [
        (s.completed_at or "", i) for i, s in enumerate(plan.steps) if s.status == "completed"
    ]
    if not completed:
        return None
    _, index = max(completed)
    running = plan.current_step
    if running is not None:
        back = evolve(running, status="pending", started_at=None, iterations=0)
        plan = _put(plan, plan.current_step_index, back)
    again = evolve(
        plan.steps[index],
        status="running",
        result=None,
        completed_at=None,
        completed_by=None,
        iterations=0,
    )
    plan = evolve(_put(plan, index, again), current_step_index=index)
    if plan.status != "running":
        plan = resume(plan, now=now)
    return evolve(plan, updated_at=now)


# ---------------------------------------------------------------- the hooks' rules


class Heard(NamedTuple):
    """What a user message did (:func:`hear`): the plan after it, and how the
    message goes on to the model.

    ``handed``: ``"answer"``, it answers the model's question (the plan goes
    on with a fresh budget; give it with the summary and the question);
    ``"resume"``, a paused (or, corrected, completed) plan runs again (give
    it with the progress summary); ``"reopened"``, a correction reopened a
    step of a running plan (the message passes unchanged); ``"finished"``,
    the plan is over (the next tool-calling reply starts a new one for this
    message); ``"unchanged"``, nothing happened (``plan`` is the one given).
    """

    plan: SessionPlanRun
    handed: Literal["answer", "resume", "reopened", "finished", "unchanged"]


def hear(plan: SessionPlanRun, text: str, *, now: str) -> Heard:
    """The user's message ``text`` on ``plan`` (see :class:`Heard`).

    Document 001's resume rule: a continue intent resumes a paused plan; any
    other message leaves it paused. On a plan waiting on the user, the
    message is the answer: the plan resumes (and a correction in it reopens
    the step completed last). Elsewhere a correction ("not done yet")
    reopens the step completed last, running a paused or completed plan again.

    Example:
        >>> plan = pause(new_plan("s", "g", now="t0", plan_id="p"), now="t1")
        >>> hear(plan, "continue", now="t2").handed, hear(plan, "hello", now="t2").handed
        ('resume', 'unchanged')
    """
    status = plan.status
    if plan.waiting_on_user and status in ("running", "pending"):
        # The user answering is someone at the keyboard again: the plan goes
        # on with a fresh budget, as after "continue".
        answered = resume(plan, now=now)
        if is_correction(text):
            answered = reopen(answered, now=now) or answered
        return Heard(answered, "answer")
    if is_correction(text) and status in ("running", "pending", "paused", "completed"):
        reopened = reopen(plan, now=now)
        if reopened is not None:
            return Heard(reopened, "resume" if status in ("paused", "completed") else "reopened")
    if status == "paused" and is_continue_intent(text):
        return Heard(resume(plan, now=now), "resume")
    return Heard(plan, "finished" if plan.finished else "unchanged")


def take_reply(
    plan: SessionPlanRun | None,
    text: str,
    tool_calls: int,
    *,
    now: str,
    asks_user: bool,
    max_iterations: int,
    unattended: bool,
    fresh: bool,
    start: Callable[[], SessionPlanRun],
) -> SessionPlanRun | None:
    """A model reply in a session with ``plan`` (None: none yet): the plan to
    write, or None when the reply changes nothing.

    The first reply that calls a tool starts a plan (``start`` makes it: the
    driver picks its id and goal), and so does one after a finished plan
    once the user wrote again (``fresh``); a reply without tool calls starts
    none. A paused plan waits for "continue" and a finished one for a new
    message: their replies are not recorded. The reply is recorded
    (:func:`apply_reply`), and a running plan that has now used
    ``max_iterations`` replies since it started or resumed stops there
    (:func:`at_limit`), unless it waits on the user's answer, which brings a
    fresh budget.

    Example:
        >>> begin = lambda: new_plan("s", "Ship it", now="t0", plan_id="p")
        >>> rules = dict(now="t1", asks_user=False, max_iterations=1, unattended=False,
        ...              fresh=False, start=begin)
        >>> take_reply(None, "Hi! How can I help?", 0, **rules) is None
        True
        >>> take_reply(None, "[Step] Build", 1, **rules).status
        'paused'
    """
    if plan is None or (plan.finished and fresh):
        if tool_calls <= 0:
            # Before any plan, a question ("How can I help?") is small talk:
            # the user's next message is the request, the goal.
            return None
        plan = start()
    elif plan.status not in ("running", "pending"):
        return None
    plan = apply_reply(plan, text, tool_calls, now=now, asks_user=asks_user)
    spent = plan.stretch_iterations >= max_iterations
    if plan.status == "running" and spent and not plan.waiting_on_user:
        plan = at_limit(plan, now=now, unattended=unattended)
    return plan


# ---------------------------------------------------------------- steps


def _new_step(plan: SessionPlanRun, description: str, implicit: bool = False) -> SessionStep:
    # Steps are never removed, so the count gives unique ids.
    return SessionStep(f"step_{len(plan.steps) + 1}", description, implicit=implicit)


def _add(plan: SessionPlanRun, step: SessionStep) -> SessionPlanRun:
    return evolve(plan, steps=(*plan.steps, step))


def _put(plan: SessionPlanRun, index: int, step: SessionStep) -> SessionPlanRun:
    steps = plan.steps
    return evolve(plan, steps=(*steps[:index], step, *steps[index + 1 :]))


def _add_steps(plan: SessionPlanRun, descriptions: list[str]) -> SessionPlanRun:
    if not descriptions:
        return plan
    step = plan.current_step
    if step is not None and step.implicit:
        # The work done so far under "the whole task" was the first declared
        # step's work: the implicit step becomes that step.
        named = without(step, "implicit", description=descriptions[0])
        plan = _put(plan, plan.current_step_index, named)
        descriptions = descriptions[1:]
    # Models restate their whole plan often; a step is declared once.
    known = {same_step(s.description) for s in plan.steps}
    for description in descriptions:
        key = same_step(description)
        if key in known:
            continue
        known.add(key)
        plan = _add(plan, _new_step(plan, description))
    return plan


def _start_next(plan: SessionPlanRun, now: str) -> SessionPlanRun:
    for index, step in enumerate(plan.steps):
        if step.status == "pending":
            started = evolve(step, status="running", started_at=now, iterations=0)
            return evolve(_put(plan, index, started), current_step_index=index)
    return evolve(plan, current_step_index=len(plan.steps))


def _complete(plan: SessionPlanRun, index: int, text: str, how: str, now: str) -> SessionPlanRun:
    done = evolve(
        plan.steps[index], status="completed", result=trim(text), completed_at=now, completed_by=how
    )
    return _start_next(_put(plan, index, done), now)
