"""What a session plan's rules read in the words: the user's messages and the model's replies.

Pure text rules, no plan: whether a message asks to resume ("continue",
"继续") or says the work is not done ("not done yet"), which script a text is
written in, which steps a reply declares (``[Step] ...``), whether it
completes the current step (``[done]``, a transition word, the timeout),
what it reports (``[Progress] k/n``, ``[Failed] reason``). The transitions
in :mod:`waygraph.engine.session_plan` apply them to a
:class:`~waygraph.engine.session_plan_run.SessionPlanRun`.

Example:
    >>> extract_step_declarations("[Step] Reproduce it\\n- [Step 2] Fix it")
    ['Reproduce it', 'Fix it']
    >>> is_continue_intent("继续"), detect_step_completion("Now the tests", 2)
    (True, 'transition')
"""

from __future__ import annotations

import re

__all__ = [
    "CONTINUE_INTENTS",
    "RESULT_CHARS",
    "STEP_TIMEOUT_ITERATIONS",
    "TRANSITION_MIN_ITERATIONS",
    "detect_language",
    "detect_step_completion",
    "extract_step_declarations",
    "failure_report",
    "goal_from_reply",
    "has_done_marker",
    "is_continue_intent",
    "is_correction",
    "progress_report",
    "prose",
    "same_step",
    "tail",
    "trim",
]

#: A transition word completes a step only once the step has run this many iterations.
TRANSITION_MIN_ITERATIONS = 2
#: A step that has run this many iterations is completed on that reply.
STEP_TIMEOUT_ITERATIONS = 10
#: Step results keep about this many characters of the step's last reply.
RESULT_CHARS = 200

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


# ---------------------------------------------------------------- the user's messages


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


# ---------------------------------------------------------------- the model's replies


def goal_from_reply(text: str) -> str:
    """A goal for a plan whose user message was never seen: the reply's first
    line of prose, else its first declared step.

    Example:
        >>> goal_from_reply("[Step] Read logs\\nI'll start by reading the logs.")
        "I'll start by reading the logs."
    """
    for line in prose(text).splitlines():
        if line.strip():
            return trim(line.strip())
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
    words = prose(text)
    if has_done_marker(words):
        return "marker"
    if iterations_in_step >= TRANSITION_MIN_ITERATIONS and (
        _TRANSITION_EN.search(words) or _TRANSITION_ZH.search(words)
    ):
        return "transition"
    if iterations_in_step >= STEP_TIMEOUT_ITERATIONS:
        return "timeout"
    return None


def has_done_marker(words: str) -> bool:
    """Whether ``words`` carry an explicit ``[done]`` (``[完成]``, ``【完成】``, ...) marker.

    Example:
        >>> has_done_marker("Exported. [done]"), has_done_marker("done")
        (True, False)
    """
    return _DONE_MARKER.search(words) is not None


def progress_report(text: str) -> tuple[int, int] | None:
    """The last ``[Progress] k/n`` a reply reports, as (k, n), or None.

    Example:
        >>> progress_report("[Progress] 2/5 ... [Progress] 3/5"), progress_report("3/5")
        ((3, 5), None)
    """
    found = _PROGRESS.findall(text)
    if not found:
        return None
    done, total = found[-1]
    return int(done), int(total)


def failure_report(text: str) -> str | None:
    """The reason of the first ``[Failed] reason`` in a reply ('' without one), or None.

    Example:
        >>> failure_report("[Failed] no network"), failure_report("[Failed]"), failure_report("ok")
        ('no network', '', None)
    """
    found = _FAILED.search(text)
    return found.group(1).strip() if found else None


def prose(text: str) -> str:
    """``text`` without its ``[Step]`` lines: what the reply reports, not what it plans.

    "[Step] Then run the tests" must not read as a transition out of the
    current step.

    Example:
        >>> prose("[Step] Then test\\nExported.")
        '\\nExported.'
    """
    return _STEP_LINE.sub("", text)


def trim(text: str, limit: int = RESULT_CHARS) -> str:
    """``text`` on one line, cut to ``limit`` characters at the end (…).

    Example:
        >>> trim("a  b\\nc"), trim("abcdef", 4)
        ('a b c', 'abc…')
    """
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def tail(text: str, limit: int = RESULT_CHARS) -> str:
    """``text`` on one line, cut to its last ``limit`` characters (…).

    A question sits at the end of its reply: keep the end, not the start.

    Example:
        >>> tail("abcdef", 4)
        '…def'
    """
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else "…" + flat[-(limit - 1) :].lstrip()


def same_step(description: str) -> str:
    """The key under which two step descriptions are the same step (case and spacing aside).

    Example:
        >>> same_step("Fix  the Bug") == same_step("fix the bug")
        True
    """
    return " ".join(description.casefold().split())
