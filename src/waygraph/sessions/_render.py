"""Text for people and models: summaries, the system-prompt block, limit messages.

English and Chinese. The look follows :mod:`waygraph.render`: a ``[waygraph]``
header line, then short labelled lines.

Example:
    >>> plan = {"goal": "Ship it", "status": "paused", "iteration_count": 3,
    ...         "current_step_index": 1, "steps": [
    ...     {"description": "Build", "status": "completed"},
    ...     {"description": "Upload", "status": "running", "progress": {"current": 1, "total": 3}},
    ... ]}
    >>> print(render_summary(plan))
    [waygraph] Session plan (paused)
    Goal: Ship it
    Progress: 1/2 steps done, 3 iterations used
    Current step 2/2: Upload (progress 1/3)
      ✓ 1. Build
      ⏳ 2. Upload (1/3)
"""

from __future__ import annotations

from typing import Any

from waygraph.sessions._rules import current_step, steps_done

__all__ = [
    "context_block",
    "finished_message",
    "limit_message",
    "render_summary",
    "resume_prefix",
    "step_instructions",
]

HEADER = "[waygraph]"
MARKS = {"completed": "✓", "running": "⏳", "pending": "⏸", "failed": "✗"}
#: Steps shown around the current one in the system-prompt block.
CONTEXT_STEPS_BEFORE = 3
CONTEXT_STEPS_AFTER = 6

_TEXT = {
    "en": {
        "status": {
            "pending": "pending",
            "running": "running",
            "paused": "paused",
            "completed": "completed",
            "failed": "failed",
        },
        "summary_head": "{h} Session plan ({status})",
        "goal": "Goal: {goal}",
        "progress": "Progress: {done}/{total} steps done, {iterations} iterations used",
        "current": "Current step {k}/{n}: {desc}",
        "current_implicit": "Current step: the whole task (no steps declared yet)",
        "no_current": "Current step: none (every declared step is done)",
        "step_progress": " (progress {current}/{total})",
        "failure": "Failed: {reason}",
        "resume": "Resume from the current step; do not redo completed steps.",
        "context_head": "{h} Session plan: {goal}",
        "done_line": "Done: {done}/{total} steps",
        "earlier": "  … {count} earlier step(s)",
        "later": "  … {count} more step(s)",
        "all_done": (
            'Every declared step is done. Declare the next one with a "[Step] description" '
            "line, or reply without tool calls if the task is finished."
        ),
        "instructions": (
            'Plan your work as steps: write each on its own line as "[Step] description" '
            "(add steps whenever you discover them). Report progress inside a step with "
            '"[Progress] k/n". Write "[done]" when the current step is finished, or '
            '"[Failed] reason" if it cannot be done. When the whole task is finished, '
            "reply without tool calls."
        ),
        "paused": (
            "{h} Session plan paused at the iteration limit: {goal} ({done}/{total} steps "
            "done). Make no more tool calls now; tell the user: {message}"
        ),
        "limit": "Task in progress ({done}/{total} steps done). Say 'continue' to resume.",
        "limit_no_plan": "Task in progress. Say 'continue' to resume.",
        "completed": "Task completed ({done}/{total} steps done).",
        "failed": "Task failed ({done}/{total} steps done): {reason}",
        "no_reason": "no reason given",
    },
    "zh": {
        "status": {
            "pending": "待开始",
            "running": "进行中",
            "paused": "已暂停",
            "completed": "已完成",
            "failed": "已失败",
        },
        "summary_head": "{h} 会话计划（{status}）",
        "goal": "目标：{goal}",
        "progress": "进度：已完成 {done}/{total} 步，已用 {iterations} 次迭代",
        "current": "当前步骤 {k}/{n}：{desc}",
        "current_implicit": "当前步骤：整个任务（尚未声明步骤）",
        "no_current": "当前步骤：无（已声明的步骤都已完成）",
        "step_progress": "（进度 {current}/{total}）",
        "failure": "失败原因：{reason}",
        "resume": "请从当前步骤继续，不要重做已完成的步骤。",
        "context_head": "{h} 会话计划：{goal}",
        "done_line": "已完成：{done}/{total} 步",
        "earlier": "  … 之前还有 {count} 步",
        "later": "  … 之后还有 {count} 步",
        "all_done": (
            "已声明的步骤都已完成。用一行“[Step] 描述”声明下一步；如果任务已经完成，"
            "请不调用工具直接回复。"
        ),
        "instructions": (
            "把工作分成步骤：每个步骤单独一行，写成“[Step] 描述”（发现新步骤时随时补充）。"
            "在步骤内用“[Progress] k/n”报告进度。当前步骤完成时写“[完成]”或“[done]”，"
            "无法完成时写“[Failed] 原因”。整个任务完成后，请不调用工具直接回复。"
        ),
        "paused": (
            "{h} 会话计划因达到迭代上限而暂停：{goal}（已完成 {done}/{total} 步）。"
            "现在不要再调用工具，请告诉用户：{message}"
        ),
        "limit": "任务进行中（已完成 {done}/{total} 步）。回复“继续”即可恢复。",
        "limit_no_plan": "任务进行中。回复“继续”即可恢复。",
        "completed": "任务已完成（已完成 {done}/{total} 步）。",
        "failed": "任务失败（已完成 {done}/{total} 步）：{reason}",
        "no_reason": "未说明原因",
    },
}


def _t(language: str) -> dict[str, Any]:
    return _TEXT["zh" if str(language).lower().startswith("zh") else "en"]


def _step_progress(step: dict[str, Any], t: dict[str, Any]) -> str:
    progress = step.get("progress")
    if not isinstance(progress, dict):
        return ""
    return t["step_progress"].format(current=progress.get("current"), total=progress.get("total"))


def _step_line(index: int, step: dict[str, Any]) -> str:
    mark = MARKS.get(step.get("status", ""), "?")
    progress = step.get("progress")
    tail = ""
    if isinstance(progress, dict) and step.get("status") == "running":
        tail = f" ({progress.get('current')}/{progress.get('total')})"
    return f"  {mark} {index + 1}. {step.get('description', '')}{tail}"


def _current_line(plan: dict[str, Any], t: dict[str, Any]) -> str:
    step = current_step(plan)
    if step is None:
        return t["no_current"]
    if step.get("implicit"):
        return t["current_implicit"] + _step_progress(step, t)
    k = plan["current_step_index"] + 1
    line = t["current"].format(k=k, n=len(plan["steps"]), desc=step.get("description", ""))
    return line + _step_progress(step, t)


def render_summary(plan: dict[str, Any], language: str = "en") -> str:
    """A progress summary of a session plan, for people and for resuming.

    Goal, steps done out of declared, iterations used, the current step with
    its progress, and every step marked ✓ (completed), ⏳ (running),
    ⏸ (pending) or ✗ (failed). ``language``: ``"en"`` or ``"zh"``.
    See the module docstring for an example.
    """
    t = _t(language)
    status = plan.get("status", "")
    lines = [
        t["summary_head"].format(h=HEADER, status=t["status"].get(status, status)),
        t["goal"].format(goal=plan.get("goal", "")),
        t["progress"].format(
            done=steps_done(plan),
            total=len(plan.get("steps", [])),
            iterations=plan.get("iteration_count", 0),
        ),
    ]
    if status == "failed":
        lines.append(t["failure"].format(reason=plan.get("failure_reason") or t["no_reason"]))
    else:
        lines.append(_current_line(plan, t))
    lines.extend(_step_line(i, s) for i, s in enumerate(plan.get("steps", [])))
    return "\n".join(lines)


def resume_prefix(plan: dict[str, Any], language: str = "en") -> str:
    """The summary put in front of the user's "continue" message."""
    return render_summary(plan, language) + "\n" + _t(language)["resume"]


def step_instructions(language: str = "en") -> str:
    """How the model declares steps and reports progress, for the system prompt.

    Put it in the system prompt from the first turn, so the reply that creates
    the plan can already declare steps; :func:`context_block` repeats it.

    Example:
        >>> step_instructions().startswith("Plan your work as steps")
        True
    """
    return _t(language)["instructions"]


def context_block(plan: dict[str, Any], language: str = "en") -> str | None:
    """The plan block for the system prompt; None for a finished plan."""
    t = _t(language)
    status = plan.get("status")
    done, total = steps_done(plan), len(plan.get("steps", []))
    if status == "paused":
        message = limit_message(plan, language)
        return t["paused"].format(
            h=HEADER, goal=plan["goal"], done=done, total=total, message=message
        )
    if status not in ("running", "pending"):
        return None
    lines = [t["context_head"].format(h=HEADER, goal=plan["goal"]), _current_line(plan, t)]
    steps = plan.get("steps", [])
    if steps and not (len(steps) == 1 and steps[0].get("implicit")):
        lines.append(t["done_line"].format(done=done, total=total))
        index = min(plan.get("current_step_index", 0), len(steps))
        start = max(0, index - CONTEXT_STEPS_BEFORE)
        stop = min(len(steps), index + CONTEXT_STEPS_AFTER)
        if start:
            lines.append(t["earlier"].format(count=start))
        lines.extend(_step_line(i, steps[i]) for i in range(start, stop))
        if stop < len(steps):
            lines.append(t["later"].format(count=len(steps) - stop))
    if current_step(plan) is None and steps:
        lines.append(t["all_done"])
    lines.append(t["instructions"])
    return "\n".join(lines)


def limit_message(plan: dict[str, Any] | None, language: str = "en") -> str:
    """ "Task in progress (k/n steps done). Say 'continue' to resume." in ``language``."""
    t = _t(language)
    if plan is None:
        return t["limit_no_plan"]
    return t["limit"].format(done=steps_done(plan), total=len(plan.get("steps", [])))


def finished_message(plan: dict[str, Any], language: str = "en") -> str:
    """What to tell the user when the loop stopped on a completed or failed plan."""
    t = _t(language)
    done, total = steps_done(plan), len(plan.get("steps", []))
    if plan.get("status") == "failed":
        reason = plan.get("failure_reason") or t["no_reason"]
        return t["failed"].format(done=done, total=total, reason=reason)
    return t["completed"].format(done=done, total=total)
