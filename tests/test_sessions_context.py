"""Session plans (issue #5): the context an agent loop adds to its system prompt, the
planner's settings, and the agent loop of docs/sessions.md run as documented."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.session_helpers import S, start
from waygraph.errors import ConfigError
from waygraph.sessions import (
    SessionPlanner,
    step_instructions,
)

# ---------------------------------------------------------------- context


def test_context_in_english(planner: SessionPlanner):
    start(planner, "Export posts", "Convert")
    planner.after_model_reply(S, "[Progress] 2/5", 1)
    text = planner.context(S)
    lines = text.splitlines()
    # Document 001's system-prompt addition first, in English...
    assert lines[:9] == [
        "Current task plan:",
        "- Goal: Migrate the blog",
        "- Current step: Export posts (1/2)",
        "- Step progress: 2/5",
        "",
        "You can declare new steps in this format:",
        "[Step] step description",
        "",
        "When you finish the current step, the system moves on to the next step by itself.",
    ]
    # ...then waygraph's lines.
    assert "Done: 0/2 steps" in lines
    assert "  ⏳ 1. Export posts (2/5)" in lines and "  ⏸ 2. Convert" in lines
    assert "[done]" in text and "[Failed] reason" in text and "[Progress] k/n" in text


def test_context_in_chinese_by_setting(tmp_path: Path):
    planner = SessionPlanner(tmp_path, language="zh")
    start(planner, "Export posts", "Convert")
    lines = planner.context(S).splitlines()
    assert "\n".join(lines[:8]) == (
        "当前任务规划信息：\n"
        "- 目标: Migrate the blog\n"
        "- 当前步骤: Export posts (1/2)\n"
        "\n"
        "你可以使用以下格式声明新步骤：\n"
        "[Step] 步骤描述\n"
        "\n"
        "完成当前步骤后，系统会自动推进到下一步。"
    )
    assert "[Progress] k/n" in lines[-1] and "[完成]" in lines[-1]


def test_context_shows_a_window_of_steps_in_a_long_plan(planner: SessionPlanner):
    start(planner, *(f"Part {i}" for i in range(1, 21)))
    for _ in range(8):
        planner.after_model_reply(S, "Finished this part [done]", 1)
    text = planner.context(S)
    assert "- Current step: Part 9 (9/20)" in text
    assert "  … 5 earlier step(s)" in text and "  … 6 more step(s)" in text
    assert "Part 1\n" not in text and "Part 20" not in text


def test_step_instructions_are_available_before_any_plan():
    assert "[Step] description" in step_instructions()
    assert "[Step] 描述" in step_instructions("zh")


def test_bad_settings_are_config_errors(tmp_path: Path):
    with pytest.raises(ConfigError, match="max_iterations"):
        SessionPlanner(tmp_path, max_iterations=0)
    with pytest.raises(ConfigError, match="language"):
        SessionPlanner(tmp_path, language="fr")
    assert SessionPlanner(tmp_path, language="zh-CN").language == "zh"


# ---------------------------------------------------------------- docs


def test_the_agent_loop_in_the_docs_runs_as_documented(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
):
    import re

    doc = (Path(__file__).parent.parent / "docs" / "sessions.md").read_text(encoding="utf-8")
    example = next(b for b in re.findall(r"```python\n(.*?)```", doc, re.S) if "SCRIPT" in b)
    given: list[str] = []
    real = SessionPlanner.on_user_message

    def recording(self: SessionPlanner, session_id: str, text: str) -> str:
        given.append(real(self, session_id, text))
        return given[-1]

    monkeypatch.setattr(SessionPlanner, "on_user_message", recording)
    exec(compile(example, "docs/sessions.md", "exec"), {})  # the doc's own code
    expected = [line[2:] for line in example.splitlines() if line.startswith("# ")]
    assert capsys.readouterr().out.splitlines() == expected
    shown = re.search(r"user wrote\):\n\n```\n(.*?)\n```", doc, re.S).group(1)
    assert given == ["Migrate my blog to Hugo", shown]
