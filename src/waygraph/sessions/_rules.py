"""The session-plan rules as pure functions: a plan dict in, a new plan dict out.

No I/O and no clock: callers pass ``now`` (an ISO 8601 string) and ids. Every
transition deep-copies its input, so the plan a caller holds never changes
under it. :mod:`waygraph.sessions._planner` does the file work around these.

Example:
    >>> plan = new_plan("s1", "Fix the login bug", now="2025-01-01T00:00:00+00:00",
    ...                 plan_id="plan_abc")
    >>> plan = apply_reply(plan, "[Step] Reproduce it\\n[Step] Fix it", 1, now="...")
    >>> [(s["description"], s["status"]) for s in plan["steps"]]
    [('Reproduce it', 'running'), ('Fix it', 'pending')]
    >>> asked = apply_reply(plan, "Which browser fails?", 0, now="...", asks_user=True)
    >>> asked["status"], asked["awaiting"], asked["question"]
    ('running', 'user', 'Which browser fails?')
"""

from __future__ import annotations

import copy
import re
from typing import Any

from waygraph.model import FINISHED

__all__ = [
    "AWAITING_USER",
    "FINISHED",
    "PLAN_STATUSES",
    "RESULT_CHARS",
    "STEP_STATUSES",
    "STEP_TIMEOUT_ITERATIONS",
    "TRANSITION_MIN_ITERATIONS",
    "apply_reply",
    "current_step",
    "detect_language",
    "detect_step_completion",
    "extract_step_declarations",
    "fail",
    "goal_from_reply",
    "is_continue_intent",
    "is_correction",
    "new_plan",
    "pause",
    "reopen",
    "resume",
    "steps_done",
]

PlanData = dict[str, Any]

PLAN_STATUSES = ("pending", "running", "paused", "completed", "failed")
STEP_STATUSES = ("pending", "running", "completed", "failed")
#: A transition word completes a step only once the step has run this many iterations.
TRANSITION_MIN_ITERATIONS = 2
#: A step that has run this many iterations is completed on that reply.
STEP_TIMEOUT_ITERATIONS = 10
#: Step results keep about this many characters of the step's last reply.
RESULT_CHARS = 200
#: plan["awaiting"] while the model's question waits for the user's answer.
AWAITING_USER = "user"

# A [Step] line may sit in a bulleted or numbered list and may carry its own
# number ("[Step 2] ..."), because models format plans that way unprompted.
_STEP_LINE = re.compile(
    r"^[ \t]*(?:[-*•][ \t]*|\d+[.)][ \t]*)?"  # optional bullet or "1."
    r"\[[ \t]*step(?:[ \t]*\d+)?[ \t]*\][ \t]*[:：]?[ \t]*(.*)$",
    re.IGNORECASE | re.MULTILINE,
)
_PROGRESS = re.compile(r"\[\s*progress\s*\]\s*[:：]?\s*(\d+)\s*/\s*(\d+)", re.IGNORECASE)
_FAILED = re.compile(r"\[\s*failed\s*\]\s*[:：]?[ \t]*([^\n]*)", re.IGNORECASE)
_DONE_MARKER = re.compile(r"[\[【]\s*(?:done|step\s+done|completed|完成)\s*[\]】]", re.IGNORECASE)
_TRANSITION_EN = re.compile(r"\b(?:now|next|then|let\s+me|moving\s+on|proceed)\b", re.IGNORECASE)
# Chinese has no word boundaries; "现在让我" is covered by "现在".
_TRANSITION_ZH = re.compile(r"现在|接下来|然后|继续|开始")

CONTINUE_INTENTS = frozenset({"continue", "goon", "resume", "keepgoing", "继续", "继续执行"})
# Document 001 counts any message containing 继续执行 as continue.
_CONTINUE_ZH = "继续执行"
# ...except where it is negated right before ("不要继续执行", "别再继续执行"),
# which the document's substring test would read as the opposite.
_NEGATED_CONTINUE = re.compile(r"(?:不|别|勿|无需|停止|暂停)[^，。,.!！?？；;]{0,2}继续执行")
_EDGE_PUNCTUATION = ".,!?;:~…'\"“”‘’。，！？；：～、"
_CORRECTION_EN = re.compile(
    r"\b(?:not|isn'?t|wasn'?t|aren'?t|hasn'?t\s+been|haven'?t\s+been)\s+"
    r"(?:yet\s+|really\s+|quite\s+|fully\s+)?(?:done|finished|complete|completed)\b",
    re.IGNORECASE,
)
_CORRECTION_ZH = re.compile(r"还没有?(?:完成|做完|结束|好)|没有?(?:完成|做完)|未完成")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN_WORD = re.compile(r"[A-Za-z]+")


# ---------------------------------------------------------------- reading text


def is_continue_intent(text: str | None) -> bool:
    """True when the message asks to resume: "continue", "go on", "继续", "请继续执行任务", ...

    Document 001's rule, ``isContinueIntent``: the whole message (trimmed, any
    case) is 继续, continue or go on, or it contains 继续执行 anywhere. waygraph
    adds "resume" and "keep going", ignores inner whitespace and surrounding
    punctuation, and does not read a negated "不要继续执行" as continue. A
    sentence that merely contains "continue" does not count.

    Example:
        >>> is_continue_intent("  Go   On! "), is_continue_intent("请继续执行任务")
        (True, True)
        >>> is_continue_intent("continue the essay"), is_continue_intent("先不要继续执行")
        (False, False)
    """
    if not text:
        return False
    key = re.sub(r"\s+", "", text).casefold().strip(_EDGE_PUNCTUATION)
    if key in CONTINUE_INTENTS:
        return True
    return _CONTINUE_ZH in key and not _NEGATED_CONTINUE.search(key)


def is_correction(text: str | None) -> bool:
    """True when the user says the work is not finished ("not done yet", "还没完成").

    Example:
        >>> is_correction("That's not done yet"), is_correction("Looks done to me")
        (True, False)
    """
    if not text:
        return False
    normal = text.replace("’", "'")
    return bool(_CORRECTION_EN.search(normal) or _CORRECTION_ZH.search(normal))


def detect_language(text: str | None) -> str | None:
    """The script the text is mostly written in: ``"zh"`` or ``"en"``, else None.

    A Chinese character carries about as much as an English word, so the text
    is Chinese when it has at least as many Chinese characters as Latin words
    ("把博客迁移到 Hugo" is Chinese, "Translate 你好 into English" is not).

    Example:
        >>> detect_language("继续"), detect_language("go on"), detect_language("42")
        ('zh', 'en', None)
    """
    if not text:
        return None
    han = len(_HAN.findall(text))
    words = len(_LATIN_WORD.findall(text))
    if han and han >= words:
        return "zh"
    if words:
        return "en"
    return None


def goal_from_reply(text: str) -> str:
    """A goal for a plan whose user message was never seen: the reply's first
    line of prose, else its first declared step.

    Example:
        >>> goal_from_reply("[Step] Read logs\\nI'll start by reading the logs.")
        "I'll start by reading the logs."
    """
    for line in _prose(text).splitlines():
        if line.strip():
            return _trim(line.strip())
    steps = extract_step_declarations(text)
    return steps[0] if steps else "(no goal given)"


def extract_step_declarations(text: str) -> list[str]:
    """The step descriptions a reply declares with ``[Step] description`` lines.

    Document 001's ``extractStepDeclaration``. A line may sit in a list and
    carry its own number.

    Example:
        >>> extract_step_declarations("[Step] 下载2024年财报PDF\\n- [Step 2] 提取关键财务指标")
        ['下载2024年财报PDF', '提取关键财务指标']
    """
    return [m.group(1).strip() for m in _STEP_LINE.finditer(text) if m.group(1).strip()]


def _prose(text: str) -> str:
    # Step declarations are plans, not reports: "[Step] Then run the tests"
    # must not read as a transition out of the current step.
    return _STEP_LINE.sub("", text)


def _trim(text: str, limit: int = RESULT_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _tail(text: str, limit: int = RESULT_CHARS) -> str:
    # A question sits at the end of its reply: keep the end, not the start.
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else "…" + flat[-(limit - 1) :].lstrip()


def _normal(description: str) -> str:
    return " ".join(description.casefold().split())


# ---------------------------------------------------------------- reading plans


def current_step(plan: PlanData) -> dict[str, Any] | None:
    """The running step the plan points at, or None (no steps, or all done)."""
    index = plan.get("current_step_index", 0)
    steps: list[dict[str, Any]] = plan.get("steps", [])
    if 0 <= index < len(steps) and steps[index].get("status") == "running":
        return steps[index]
    return None


def steps_done(plan: PlanData) -> int:
    """How many steps are completed."""
    return sum(1 for s in plan.get("steps", []) if s.get("status") == "completed")


# ---------------------------------------------------------------- transitions


def new_plan(session_id: str, goal: str, *, now: str, plan_id: str) -> PlanData:
    """A running plan with no steps yet; steps come from the replies."""
    return {
        "id": plan_id,
        "session_id": session_id,
        "goal": goal,
        "status": "running",
        "created_at": now,
        "updated_at": now,
        "steps": [],
        "current_step_index": 0,
        "iteration_count": 0,
        # The iteration budget is per stretch of running: resuming gives a
        # fresh max_iterations while iteration_count keeps the lifetime total.
        "resumed_at_iteration": 0,
        "failure_reason": None,
        # "user" while the model's question waits for an answer; ``question``
        # keeps the end of that reply so the answer can be put in context.
        "awaiting": None,
        "question": None,
    }


def apply_reply(
    plan: PlanData, text: str, tool_calls: int, *, now: str, asks_user: bool = False
) -> PlanData:
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
    """
    plan = copy.deepcopy(plan)
    plan["status"] = "running"  # a "pending" plan written by another tool starts here
    plan["iteration_count"] += 1
    plan["updated_at"] = now
    # Whatever the model says next, it is no longer waiting on an earlier question.
    _clear_question(plan)
    prose = _prose(text)
    _add_steps(plan, extract_step_declarations(text))
    if current_step(plan) is None:
        _start_next(plan, now)
    if not plan["steps"]:
        _add_implicit_step(plan, now)
    step = current_step(plan)
    if step is not None:
        step["iterations"] = step.get("iterations", 0) + 1
        progress = _PROGRESS.findall(text)
        if progress:
            done, total = (int(n) for n in progress[-1])
            if total > 0:
                step["progress"] = {"current": min(done, total), "total": total}
    failed = _FAILED.search(text)
    if failed:
        return fail(plan, failed.group(1).strip(), now=now)
    if tool_calls <= 0 and asks_user:
        # A question is not the end: the plan waits for the answer. "Now" or
        # "next" in a question is what the model would do after the answer,
        # so only an explicit marker completes the step here.
        if step is not None and _DONE_MARKER.search(prose):
            _complete(plan, step, prose or text, "marker", now)
        plan["awaiting"] = AWAITING_USER
        plan["question"] = _tail(prose) or _tail(text) or None
        return plan
    if tool_calls <= 0:
        if step is not None:
            _complete(plan, step, prose or text, "final", now)
        plan["status"] = "completed"
        return plan
    if step is not None:
        how = detect_step_completion(text, step.get("iterations", 0))
        if how is not None:
            _complete(plan, step, prose or text, how, now)
    return plan


def detect_step_completion(text: str, iterations_in_step: int) -> str | None:
    """Whether a reply completes the current step, and by which rule.

    Document 001's ``detectStepCompletion``: a transition word ("现在",
    "接下来", "now", "next", ...) once the step has run two iterations, or the
    step's tenth iteration; waygraph adds an explicit ``[done]`` marker, which
    completes a step on any iteration. Words inside ``[Step]`` lines are plans,
    not reports, and do not count. Returns ``"marker"``, ``"transition"``,
    ``"timeout"`` or None (not complete).

    Example:
        >>> detect_step_completion("现在让我提取关键指标", 2), detect_step_completion("现在开始", 1)
        ('transition', None)
    """
    prose = _prose(text)
    if _DONE_MARKER.search(prose):
        return "marker"
    if iterations_in_step >= TRANSITION_MIN_ITERATIONS and (
        _TRANSITION_EN.search(prose) or _TRANSITION_ZH.search(prose)
    ):
        return "transition"
    if iterations_in_step >= STEP_TIMEOUT_ITERATIONS:
        return "timeout"
    return None


def _new_step(plan: PlanData, description: str) -> dict[str, Any]:
    return {
        # Steps are never removed, so the count gives unique ids.
        "id": f"step_{len(plan['steps']) + 1}",
        "description": description,
        "status": "pending",
        "result": None,
        "started_at": None,
        "completed_at": None,
        "iterations": 0,
        "completed_by": None,
    }


def _add_steps(plan: PlanData, descriptions: list[str]) -> None:
    if not descriptions:
        return
    step = current_step(plan)
    if step is not None and step.get("implicit"):
        # The work done so far under "the whole task" was the first declared
        # step's work: the implicit step becomes that step.
        step["description"] = descriptions[0]
        del step["implicit"]
        descriptions = descriptions[1:]
    # Models restate their whole plan often; a step is declared once.
    known = {_normal(s["description"]) for s in plan["steps"]}
    for description in descriptions:
        key = _normal(description)
        if key in known:
            continue
        known.add(key)
        plan["steps"].append(_new_step(plan, description))


def _add_implicit_step(plan: PlanData, now: str) -> None:
    step = _new_step(plan, plan["goal"])
    step["implicit"] = True
    plan["steps"].append(step)
    _start_next(plan, now)


def _start_next(plan: PlanData, now: str) -> None:
    for index, step in enumerate(plan["steps"]):
        if step["status"] == "pending":
            step["status"] = "running"
            step["started_at"] = now
            step["iterations"] = 0
            plan["current_step_index"] = index
            return
    plan["current_step_index"] = len(plan["steps"])


def _complete(plan: PlanData, step: dict[str, Any], text: str, how: str, now: str) -> None:
    step["status"] = "completed"
    step["result"] = _trim(text)
    step["completed_at"] = now
    step["completed_by"] = how
    _start_next(plan, now)


def _clear_question(plan: PlanData) -> None:
    plan["awaiting"] = None
    plan["question"] = None


def fail(plan: PlanData, reason: str, *, now: str) -> PlanData:
    """Fail the plan and its running step, keeping everything else as it was."""
    plan = copy.deepcopy(plan)
    _clear_question(plan)  # a failed plan waits for nobody
    step = current_step(plan)
    if step is not None:
        step["status"] = "failed"
        step["result"] = _trim(reason) if reason else None
        step["completed_at"] = now
        step["completed_by"] = "failed"
    plan["status"] = "failed"
    plan["failure_reason"] = reason or None
    plan["updated_at"] = now
    return plan


def pause(plan: PlanData, *, now: str) -> PlanData:
    """Pause a running plan (the host's loop stopped); other states are kept."""
    plan = copy.deepcopy(plan)
    if plan["status"] in ("running", "pending"):
        plan["status"] = "paused"
        plan["updated_at"] = now
    return plan


def resume(plan: PlanData, *, now: str) -> PlanData:
    """Set a paused plan (a completed one, for a correction; one waiting on the
    user, for the answer) running with a fresh budget, waiting on nobody."""
    plan = copy.deepcopy(plan)
    plan["status"] = "running"
    _clear_question(plan)
    plan["resumed_at_iteration"] = plan["iteration_count"]
    plan["updated_at"] = now
    return plan


def reopen(plan: PlanData, *, now: str) -> PlanData | None:
    """Reopen the step completed most recently; None when no step is completed.

    The reopened step runs again with a fresh iteration count; the step that
    was running goes back to pending. A paused or completed plan runs again.
    """
    completed = [
        (s.get("completed_at") or "", i)
        for i, s in enumerate(plan["steps"])
        if s["status"] == "completed"
    ]
    if not completed:
        return None
    plan = copy.deepcopy(plan)
    _, index = max(completed)
    running = current_step(plan)
    if running is not None:
        running["status"] = "pending"
        running["started_at"] = None
        running["iterations"] = 0
    step = plan["steps"][index]
    step.update(status="running", result=None, completed_at=None, completed_by=None, iterations=0)
    plan["current_step_index"] = index
    if plan["status"] != "running":
        plan = resume(plan, now=now)
    plan["updated_at"] = now
    return plan
