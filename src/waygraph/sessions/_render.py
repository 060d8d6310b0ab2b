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

from collections.abc import Mapping
from typing import Any, TypedDict

__all__ = [
    "answer_message",
    "context_block",
    "finished_message",
    "limit_message",
    "progress_summary",
    "render_summary",
    "resume_message",
    "step_instructions",
    "waiting_message",
]

HEADER = "[waygraph]"
MARKS = {"completed": "✓", "running": "⏳", "pending": "⏸", "failed": "✗"}
#: Steps shown around the current one in the system-prompt block.
CONTEXT_STEPS_BEFORE = 3
CONTEXT_STEPS_AFTER = 6


class _Texts(TypedDict):
    """One language's texts (every language has every key)."""

    status: dict[str, str]
    summary_head: str
    goal: str
    progress: str
    current: str
    current_implicit: str
    no_current: str
    step_progress: str
    failure: str
    resume: str
    done_line: str
    earlier: str
    later: str
    all_done: str
    instructions: str
    paused: str
    limit: str
    limit_no_plan: str
    completed: str
    failed: str
    no_reason: str
    doc_block: str
    doc_current: str
    doc_step_progress: str
    doc_current_implicit: str
    doc_no_current: str
    more_instructions: str
    summary_task: str
    summary_progress: str
    summary_current: str
    summary_iterations: str
    summary_iterations_all: str
    summary_history: str
    summary_marks: dict[str, str]
    resume_wrapper: str
    awaiting: str
    awaiting_line: str
    waiting: str
    answer_wrapper: str


_TEXT: dict[str, _Texts] = {
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
            "completed). Make no more tool calls now; tell the user: {message}"
        ),
        "limit": "Task in progress ({done}/{total} steps completed). Type 'continue' to resume.",
        "limit_no_plan": "Task in progress. Type 'continue' to resume.",
        "completed": "Task completed ({done}/{total} steps done).",
        "failed": "Task failed ({done}/{total} steps done): {reason}",
        "no_reason": "no reason given",
        # Document 001's texts, in English for English conversations.
        "doc_block": (
            "Current task plan:\n- Goal: {goal}\n- Current step: {current}\n{progress}"
            "\nYou can declare new steps in this format:\n[Step] step description\n\n"
            "When you finish the current step, the system moves on to the next step by itself."
        ),
        "doc_current": "{desc} ({k}/{n})",
        "doc_step_progress": "- Step progress: {current}/{total}\n",
        "doc_current_implicit": "the whole task (no steps declared yet)",
        "doc_no_current": "none (every declared step is done)",
        "more_instructions": (
            'Report progress inside a step with "[Progress] k/n". Write "[done]" when the '
            'current step is finished, or "[Failed] reason" if it cannot be done. When the '
            "whole task is finished, reply without tool calls."
        ),
        "summary_task": "Current task: {goal}",
        "summary_progress": "Progress: {done}/{total} steps completed",
        "summary_current": "Current step: {current}",
        "summary_iterations": "Iterations used: {used}/{limit}",
        "summary_iterations_all": " ({total} in all)",
        "summary_history": "Step history:",
        "summary_marks": {
            "running": " (in progress)",
            "pending": " (pending)",
            "failed": " (failed)",
        },
        "resume_wrapper": "[Resuming task] {summary}\n\nUser instruction: {message}",
        "awaiting": (
            "{h} You asked the user a question and the plan waits for the answer: "
            "“{question}” Make no tool calls and do not go on with the steps until the "
            "user replies; then continue this plan with their answer."
        ),
        "awaiting_line": "Waiting for the user's answer to: {question}",
        "waiting": "Task waiting for your answer ({done}/{total} steps completed): {question}",
        "answer_wrapper": (
            "[Continuing task] {summary}\n\nYou asked the user: {question}\n"
            "User's answer: {message}"
        ),
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
            "{h} 会话计划因达到迭代上限而暂停：{goal}（{done}/{total} 步已完成）。"
            "现在不要再调用工具，请告诉用户：{message}"
        ),
        "limit": "任务执行中（{done}/{total} 步已完成）。输入'继续'以恢复执行。",
        "limit_no_plan": "任务执行中。输入'继续'以恢复执行。",
        "completed": "任务已完成（已完成 {done}/{total} 步）。",
        "failed": "任务失败（已完成 {done}/{total} 步）：{reason}",
        "no_reason": "未说明原因",
        # Document 001's texts, word for word.
        "doc_block": (
            "当前任务规划信息：\n- 目标: {goal}\n- 当前步骤: {current}\n{progress}"
            "\n你可以使用以下格式声明新步骤：\n[Step] 步骤描述\n\n"
            "完成当前步骤后，系统会自动推进到下一步。"
        ),
        "doc_current": "{desc} ({k}/{n})",
        "doc_step_progress": "- 步骤进度: {current}/{total}\n",
        "doc_current_implicit": "整个任务（尚未声明步骤）",
        "doc_no_current": "无（已声明的步骤都已完成）",
        "more_instructions": (
            "在步骤内用“[Progress] k/n”报告进度。当前步骤完成时写“[完成]”或“[done]”，"
            "无法完成时写“[Failed] 原因”。整个任务完成后，请不调用工具直接回复。"
        ),
        "summary_task": "当前任务: {goal}",
        "summary_progress": "进度: {done}/{total} 步已完成",
        "summary_current": "当前步骤: {current}",
        "summary_iterations": "已用迭代: {used}/{limit}",
        "summary_iterations_all": "（共 {total} 次）",
        "summary_history": "历史步骤:",
        "summary_marks": {"running": " (进行中)", "pending": " (待执行)", "failed": " (失败)"},
        "resume_wrapper": "[恢复任务] {summary}\n\n用户指令: {message}",
        "awaiting": (
            "{h} 你向用户提了一个问题，计划正在等待回答：“{question}”"
            "在用户回复之前不要调用工具，也不要继续执行步骤；收到回答后按回答继续这个计划。"
        ),
        "awaiting_line": "等待用户回答：{question}",
        "waiting": "任务等待你的回答（{done}/{total} 步已完成）：{question}",
        "answer_wrapper": "[继续任务] {summary}\n\n你向用户提问: {question}\n用户回答: {message}",
    },
}


def current_step(plan: Mapping[str, Any]) -> dict[str, Any] | None:
    """The running step a plan.json (or a session record) points at, or None.

    The texts read plans as dicts, since records and hand-made dicts are
    rendered too; the rule is :attr:`SessionPlanRun.current_step
    <waygraph.engine.session_plan_run.SessionPlanRun.current_step>`'s, read leniently.
    """
    index = plan.get("current_step_index", 0)
    steps: list[dict[str, Any]] = plan.get("steps", [])
    if 0 <= index < len(steps) and steps[index].get("status") == "running":
        step: dict[str, Any] = steps[index]
        return step
    return None


def steps_done(plan: Mapping[str, Any]) -> int:
    """How many steps of a plan.json (or a session record) are completed."""
    return sum(1 for s in plan.get("steps", []) if s.get("status") == "completed")


def _t(language: str) -> _Texts:
    return _TEXT["zh" if str(language).lower().startswith("zh") else "en"]


def _step_progress(step: dict[str, Any], t: _Texts) -> str:
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


def _current_line(plan: dict[str, Any], t: _Texts) -> str:
    step = current_step(plan)
    if step is None:
        return t["no_current"]
    if step.get("implicit"):
        return t["current_implicit"] + _step_progress(step, t)
    k = plan["current_step_index"] + 1
    line = t["current"].format(k=k, n=len(plan["steps"]), desc=step.get("description", ""))
    return line + _step_progress(step, t)


def render_summary(plan: dict[str, Any], language: str = "en") -> str:
    """A progress summary of a session plan, for people (``waygraph sessions show``).

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
    if _awaits_user(plan):
        lines.append(t["awaiting_line"].format(question=_question(plan)))
    lines.extend(_step_line(i, s) for i, s in enumerate(plan.get("steps", [])))
    return "\n".join(lines)


def _window(plan: dict[str, Any]) -> tuple[int, int]:
    # Long plans show the steps around the current one, not all of them.
    steps = plan.get("steps", [])
    index = min(plan.get("current_step_index", 0), len(steps))
    return max(0, index - CONTEXT_STEPS_BEFORE), min(len(steps), index + CONTEXT_STEPS_AFTER)


def progress_summary(
    plan: dict[str, Any], language: str = "en", max_iterations: int | None = None
) -> str:
    """Document 001's progress summary (``generateProgressSummary``), for resuming.

    The current task, steps completed, the current step with its progress,
    iterations used in the last stretch of running out of ``max_iterations``
    (the lifetime total too once the plan has been resumed before), and the
    step history with ✓ ⏳ ⏸ ✗ marks; a long plan shows the steps around the
    current one. The last line asks the model not to redo completed steps.

    Example:
        >>> plan = {"goal": "下载分析腾讯财报", "status": "paused", "iteration_count": 15,
        ...         "current_step_index": 1, "steps": [
        ...     {"description": "搜索财报链接", "status": "completed"},
        ...     {"description": "下载PDF", "status": "running",
        ...      "progress": {"current": 2, "total": 5}},
        ...     {"description": "提取指标", "status": "pending"}]}
        >>> print(progress_summary(plan, "zh", max_iterations=20))
        当前任务: 下载分析腾讯财报
        进度: 1/3 步已完成
        当前步骤: 下载PDF (2/5)
        已用迭代: 15/20
        <BLANKLINE>
        历史步骤:
        1. ✓ 搜索财报链接
        2. ⏳ 下载PDF (进行中)
        3. ⏸ 提取指标 (待执行)
        <BLANKLINE>
        请从当前步骤继续，不要重做已完成的步骤。
    """
    t = _t(language)
    steps = plan.get("steps", [])
    total = int(plan.get("iteration_count", 0))
    used = total - int(plan.get("resumed_at_iteration", 0))
    iterations = t["summary_iterations"].format(
        used=used, limit=max_iterations if max_iterations is not None else "?"
    )
    if used != total:
        iterations += t["summary_iterations_all"].format(total=total)
    lines = [
        t["summary_task"].format(goal=plan.get("goal", "")),
        t["summary_progress"].format(done=steps_done(plan), total=len(steps)),
        t["summary_current"].format(current=_summary_current(plan, t)),
        iterations,
        "",
        t["summary_history"],
    ]
    start, stop = _window(plan)
    if start:
        lines.append(t["earlier"].format(count=start).strip())
    for index in range(start, stop):
        step = steps[index]
        status = step.get("status", "")
        mark = MARKS.get(status, "?")
        tail = t["summary_marks"].get(status, "")
        lines.append(f"{index + 1}. {mark} {step.get('description', '')}{tail}")
    if stop < len(steps):
        lines.append(t["later"].format(count=len(steps) - stop).strip())
    lines += ["", t["resume"]]
    return "\n".join(lines)


def _summary_current(plan: dict[str, Any], t: _Texts) -> str:
    step = current_step(plan)
    if step is None:
        return t["doc_no_current"]
    progress = step.get("progress")
    tail = ""
    if isinstance(progress, dict):
        tail = f" ({progress.get('current')}/{progress.get('total')})"
    if step.get("implicit"):
        return t["doc_current_implicit"] + tail
    return f"{step.get('description', '')}{tail}"


def resume_message(
    plan: dict[str, Any],
    message: str,
    language: str = "en",
    max_iterations: int | None = None,
) -> str:
    """Document 001's resume wrapper: ``[恢复任务] <summary>\\n\\n用户指令: <message>``.

    In English: ``[Resuming task] <summary>\\n\\nUser instruction: <message>``.

    Example:
        >>> plan = {"goal": "Ship it", "steps": [], "iteration_count": 4}
        >>> print(resume_message(plan, "continue", max_iterations=4).splitlines()[0])
        [Resuming task] Current task: Ship it
    """
    summary = progress_summary(plan, language, max_iterations)
    return _t(language)["resume_wrapper"].format(summary=summary, message=message)


def answer_message(
    plan: dict[str, Any],
    message: str,
    language: str = "en",
    max_iterations: int | None = None,
) -> str:
    """The user's answer to the model's question, handed back with the plan.

    ``[Continuing task] <summary>\\n\\nYou asked the user: <question>\\nUser's
    answer: <message>`` (``[继续任务] ... 你向用户提问: ... 用户回答: ...`` in
    Chinese): the progress summary, the question the plan waited on, then
    what the user wrote, so the model goes on with the same plan.

    Example:
        >>> plan = {"goal": "Ship it", "steps": [], "iteration_count": 2,
        ...         "question": "Which branch?"}
        >>> print("\\n".join(answer_message(plan, "main").splitlines()[-2:]))
        You asked the user: Which branch?
        User's answer: main
    """
    summary = progress_summary(plan, language, max_iterations)
    return _t(language)["answer_wrapper"].format(
        summary=summary, question=_question(plan), message=message
    )


def _awaits_user(plan: dict[str, Any]) -> bool:
    return plan.get("awaiting") == "user"


def _question(plan: dict[str, Any]) -> str:
    question = plan.get("question")
    return question if isinstance(question, str) and question else "…"


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
    """The plan block for the system prompt; None for a finished plan.

    Document 001's "System Prompt Addition" first (goal, current step k/n,
    its progress, how to declare steps), then waygraph's lines: the steps
    around the current one and how to report progress, completion and failure.
    While the plan waits on the user's answer, a line saying so comes first.
    """
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
    step = current_step(plan)
    progress = ""
    if step is None:
        current = t["doc_no_current"]
    else:
        if step.get("implicit"):
            current = t["doc_current_implicit"]
        else:
            k, n = plan["current_step_index"] + 1, total
            current = t["doc_current"].format(desc=step.get("description", ""), k=k, n=n)
        if isinstance(step.get("progress"), dict):
            progress = t["doc_step_progress"].format(**step["progress"])
    lines = [t["doc_block"].format(goal=plan["goal"], current=current, progress=progress), ""]
    if _awaits_user(plan):
        lines[:0] = [t["awaiting"].format(h=HEADER, question=_question(plan)), ""]
    steps = plan.get("steps", [])
    if steps and not (len(steps) == 1 and steps[0].get("implicit")):
        lines.append(t["done_line"].format(done=done, total=total))
        start, stop = _window(plan)
        if start:
            lines.append(t["earlier"].format(count=start))
        lines.extend(_step_line(i, steps[i]) for i in range(start, stop))
        if stop < len(steps):
            lines.append(t["later"].format(count=len(steps) - stop))
    if step is None and steps:
        lines.append(t["all_done"])
    lines.append(t["more_instructions"])
    return "\n".join(lines)


def limit_message(plan: dict[str, Any] | None, language: str = "en") -> str:
    """Document 001's pause message, "任务执行中（k/n 步已完成）。输入'继续'以恢复执行。",
    or in English "Task in progress (k/n steps completed). Type 'continue' to resume."
    """
    t = _t(language)
    if plan is None:
        return t["limit_no_plan"]
    return t["limit"].format(done=steps_done(plan), total=len(plan.get("steps", [])))


def waiting_message(plan: dict[str, Any], language: str = "en") -> str:
    """What to tell the user when the loop stopped while the plan waits on their answer."""
    t = _t(language)
    done, total = steps_done(plan), len(plan.get("steps", []))
    return t["waiting"].format(done=done, total=total, question=_question(plan))


def finished_message(plan: dict[str, Any], language: str = "en") -> str:
    """What to tell the user when the loop stopped on a completed or failed plan."""
    t = _t(language)
    done, total = steps_done(plan), len(plan.get("steps", []))
    if plan.get("status") == "failed":
        reason = plan.get("failure_reason") or t["no_reason"]
        return t["failed"].format(done=done, total=total, reason=reason)
    return t["completed"].format(done=done, total=total)
