"""Document 001, file-based per-session planning, as it writes it.

The document is written for a Go agent loop (``internal/agent/loop.go``); this
file is that loop in Python, with the document's hooks answered by
``waygraph.sessions``: the plan is created on the first reply that calls a
tool, ``[Step]`` lines append steps, transition words and the ten-iteration
timeout complete them, the iteration limit pauses the plan with the document's
message, and "继续" resumes it behind the document's wrapper and summary. The
model is the shipped chat server with scripted replies, reached through the
real ``openai`` client; the example task is the document's own (Tencent's
annual reports).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openai import OpenAI

from waygraph.sessions import (
    SessionPlanner,
    detect_step_completion,
    extract_step_declarations,
    is_continue_intent,
    step_instructions,
)
from waygraph.testing import ScriptedChatServer

GOAL = "下载分析腾讯最近5年年度财报PDF，提取关键财务指标，制作成图表"
SESSION = "telegram:20260224"  # a session key as a chat channel writes it
MAX_ITERATIONS = 20


def tool(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def reply(content: str, *calls: dict[str, Any]) -> dict[str, Any]:
    return {"content": content, "tool_calls": list(calls)}


@pytest.fixture
def chat() -> Iterator[ScriptedChatServer]:
    with ScriptedChatServer() as server:
        yield server


class AgentLoop:
    """The document's ``loop.go`` changes, one per hook ("Code Changes", 2 and 3)."""

    def __init__(
        self,
        workspace: Path,
        chat: ScriptedChatServer,
        max_iterations: int,
        loop_limit: int | None = None,
    ) -> None:
        self.planner = SessionPlanner(workspace, max_iterations=max_iterations)
        self.client = OpenAI(base_url=chat.base_url, api_key="test", max_retries=0)
        # The loop's own MaxIterations per message; the plan's budget by default.
        self.loop_limit = loop_limit or max_iterations
        self.system_prompts: list[str] = []

    def handle(self, session_key: str, content: str) -> str:
        # "检测 continue intent 并恢复": the planner rewrites the message.
        content = self.planner.on_user_message(session_key, content)
        messages: list[dict[str, Any]] = [{"role": "user", "content": content}]
        for _ in range(self.loop_limit):
            # "修改 System Prompt": the plan block, or how to declare steps.
            system = self.planner.context(session_key) or step_instructions("zh")
            self.system_prompts.append(system)
            answer = self.client.chat.completions.create(
                model="scripted", messages=[{"role": "system", "content": system}, *messages]
            )
            message = answer.choices[0].message
            calls = message.tool_calls or []
            # "每个迭代后更新 plan" (and "第一轮工具调用时创建 plan").
            self.planner.after_model_reply(session_key, message.content or "", len(calls))
            if not calls:
                return message.content or ""
            messages.append({"role": "assistant", "content": message.content or ""})
            messages += [{"role": "user", "content": f"{c.function.name}: ok"} for c in calls]
        # "迭代用完时暂停 plan".
        return self.planner.on_iteration_limit(session_key)


def plan_file(workspace: Path) -> dict[str, Any]:
    # "~/.maxclaw/workspace/.sessions/{session_key}/plan.json"
    path = workspace / ".sessions" / "telegram_20260224" / "plan.json"
    return json.loads(path.read_text(encoding="utf-8"))


def test_the_document_flow_create_progress_pause_resume(tmp_path: Path, chat):
    # The document's summary example: the loop stopped after 15 of 20 iterations.
    loop = AgentLoop(tmp_path, chat, MAX_ITERATIONS, loop_limit=15)
    chat.push(
        # Iteration 1: the first reply calls a tool, so the plan is created.
        reply(
            "[Step] 搜索腾讯2020-2024年财报PDF链接\n[Step] 下载所有PDF文件到本地\n"
            "[Step] 提取关键财务指标\n[Step] 制作数据图表\n搜索中。",
            tool("web_search", query="腾讯 年报 PDF"),
        ),
        *[reply("搜索中。", tool("web_search")) for _ in range(4)],
        # Iteration 6: a transition word, after two iterations of the step.
        reply("找到5个PDF链接: tencent_2024.pdf, tencent_2023.pdf。接下来下载。", tool("fetch")),
        # Iterations 7-15: downloading, with progress, not finished.
        *[reply("正在下载 [Progress] 2/5", tool("download")) for _ in range(9)],
    )
    message = loop.handle(SESSION, GOAL)

    # "任务执行中（%d/%d 步已完成）。输入'继续'以恢复执行。"
    assert message == "任务执行中（1/4 步已完成）。输入'继续'以恢复执行。"
    plan = plan_file(tmp_path)
    assert plan["goal"] == GOAL and plan["status"] == "paused"
    assert re.fullmatch(r"plan_[0-9a-f]+", plan["id"])
    assert [s["id"] for s in plan["steps"]] == ["step_1", "step_2", "step_3", "step_4"]
    assert [s["status"] for s in plan["steps"]] == ["completed", "running", "pending", "pending"]
    assert plan["steps"][0]["result"].startswith("找到5个PDF链接")
    assert plan["steps"][1]["progress"] == {"current": 2, "total": 5}
    assert plan["current_step_index"] == 1 and plan["iteration_count"] == 15
    for key in ("created_at", "updated_at"):
        assert plan[key].endswith("+00:00")

    # The system prompt told the model its step, as "System Prompt Addition" writes it.
    assert loop.system_prompts[0] == step_instructions("zh")  # before the plan exists
    assert loop.system_prompts[-1].startswith(
        "当前任务规划信息：\n"
        f"- 目标: {GOAL}\n"
        "- 当前步骤: 下载所有PDF文件到本地 (2/4)\n"
        "- 步骤进度: 2/5\n"
        "\n"
        "你可以使用以下格式声明新步骤：\n"
        "[Step] 步骤描述\n"
        "\n"
        "完成当前步骤后，系统会自动推进到下一步。"
    )
    assert chat.requests[-1]["messages"][0]["content"] == loop.system_prompts[-1]

    # "继续": the plan runs again from current_step_index, behind the wrapper.
    chat.push(reply("下载完成。现在提取指标。", tool("download")), "财报图表已经做好。")
    loop.handle(SESSION, "继续")
    resumed = chat.requests[-2]["messages"][1]["content"]
    assert resumed == (
        f"[恢复任务] 当前任务: {GOAL}\n"
        "进度: 1/4 步已完成\n"
        "当前步骤: 下载所有PDF文件到本地 (2/5)\n"
        "已用迭代: 15/20\n"
        "\n"
        "历史步骤:\n"
        "1. ✓ 搜索腾讯2020-2024年财报PDF链接\n"
        "2. ⏳ 下载所有PDF文件到本地 (进行中)\n"
        "3. ⏸ 提取关键财务指标 (待执行)\n"
        "4. ⏸ 制作数据图表 (待执行)\n"
        "\n"
        "请从当前步骤继续，不要重做已完成的步骤。\n"
        "\n"
        "用户指令: 继续"
    )
    plan = plan_file(tmp_path)
    # The transition word closed step 2; the answer without tool calls the rest.
    assert plan["status"] == "completed" and plan["iteration_count"] == 17
    assert [s["status"] for s in plan["steps"]][:3] == ["completed", "completed", "completed"]


def test_a_plan_is_created_only_when_the_first_reply_calls_a_tool(tmp_path: Path, chat):
    loop = AgentLoop(tmp_path, chat, MAX_ITERATIONS)
    chat.push("你好！有什么可以帮你？")
    loop.handle(SESSION, "你好")
    assert loop.planner.plan(SESSION) is None
    assert not (tmp_path / ".sessions").exists()

    chat.push(reply("先搜索。", tool("web_search")), "搜索完毕。")
    loop.handle(SESSION, GOAL)
    plan = plan_file(tmp_path)
    # "goal = 用户消息"; steps come later, so the whole task is the first one.
    assert plan["goal"] == GOAL and plan["status"] == "completed"


@pytest.mark.parametrize(
    "content",
    ["继续", "continue", "go on", "  Continue  ", "GO ON", "请继续执行任务", "继续执行"],
)
def test_is_continue_intent_as_the_document_writes_it(content: str):
    assert is_continue_intent(content)


@pytest.mark.parametrize("content", ["继续写文档", "continue the essay", "不要继续执行", ""])
def test_other_messages_are_not_continue(content: str):
    assert not is_continue_intent(content)


def test_a_paused_plan_waits_for_continue(tmp_path: Path, chat):
    loop = AgentLoop(tmp_path, chat, max_iterations=2)
    chat.push(reply("[Step] 搜索财报\n搜索中", tool("search")), reply("搜索中", tool("search")))
    loop.handle(SESSION, GOAL)
    chat.push("今天天气晴。")
    assert loop.handle(SESSION, "今天天气怎么样？") == "今天天气晴。"
    assert plan_file(tmp_path)["status"] == "paused"
    assert chat.requests[-1]["messages"][1]["content"] == "今天天气怎么样？"


@pytest.mark.parametrize(
    ("output", "iteration_in_step", "complete"),
    [
        ("现在让我下载PDF", 2, True),
        ("接下来提取指标", 3, True),
        ("然后制作图表", 1, False),  # the word counts from the step's second iteration
        ("仍在下载", 9, False),
        ("仍在下载", 10, True),  # "超时兜底（一个步骤最多 10 轮）"
    ],
)
def test_detect_step_completion(output: str, iteration_in_step: int, complete: bool):
    assert (detect_step_completion(output, iteration_in_step) is not None) is complete


def test_extract_step_declaration():
    content = "[Step] 下载2024年财报PDF\n[Step] 提取关键财务指标\n开始下载。"
    assert extract_step_declarations(content) == ["下载2024年财报PDF", "提取关键财务指标"]


def test_a_corrupt_plan_is_backed_up_and_a_new_plan_created(tmp_path: Path, chat):
    # "Plan JSON 损坏: 备份旧文件，创建新 plan"
    folder = tmp_path / ".sessions" / "telegram_20260224"
    folder.mkdir(parents=True)
    (folder / "plan.json").write_text("{not json", encoding="utf-8")
    loop = AgentLoop(tmp_path, chat, MAX_ITERATIONS)
    chat.push(reply("[Step] 搜索财报\n搜索中", tool("search")), "完成。")
    loop.handle(SESSION, GOAL)
    assert plan_file(tmp_path)["goal"] == GOAL
    backups = list(folder.glob("plan.json.corrupt-*"))
    assert len(backups) == 1 and backups[0].read_text(encoding="utf-8") == "{not json"


def test_an_unwritable_plan_degrades_to_no_plan(tmp_path: Path, chat):
    # "Plan 文件读写失败: 记录错误，降级为无规划模式继续执行"
    (tmp_path / ".sessions").write_text("a file where the folder should be", encoding="utf-8")
    loop = AgentLoop(tmp_path, chat, MAX_ITERATIONS)
    chat.push(reply("搜索中", tool("search")), "完成。")
    assert loop.handle(SESSION, GOAL) == "完成。"
    assert loop.planner.plan(SESSION) is None


def test_not_done_yet_corrects_a_misjudged_step(tmp_path: Path, chat):
    # "步骤检测误判: 用户可以通过插话说"还没完成"来纠正"
    loop = AgentLoop(tmp_path, chat, max_iterations=2)
    chat.push(
        reply("[Step] 下载PDF\n[Step] 提取指标\n下载中", tool("download")),
        reply("现在开始提取。", tool("extract")),  # misjudged: only 2 of 5 are there
    )
    loop.handle(SESSION, GOAL)
    assert [s["status"] for s in plan_file(tmp_path)["steps"]] == ["completed", "running"]

    chat.push(reply("继续下载剩下的PDF。", tool("download")), "全部下载并提取完毕。")
    loop.handle(SESSION, "还没完成，只下载了2个")
    given = chat.requests[-2]["messages"][1]["content"]
    assert given.startswith("[恢复任务] 当前任务: ")
    assert "\n当前步骤: 下载PDF\n" in given and given.endswith("用户指令: 还没完成，只下载了2个")
    plan = plan_file(tmp_path)
    assert plan["steps"][0]["result"].startswith("全部下载并提取完毕")
    assert plan["status"] == "completed"


def test_a_failed_task_is_kept_for_analysis(tmp_path: Path, chat):
    # "任务完全失败: plan.status = "failed"，保留现场供分析"
    loop = AgentLoop(tmp_path, chat, MAX_ITERATIONS)
    chat.push(
        reply("[Step] 下载PDF\n下载中", tool("download")),
        reply("[Failed] 网站拒绝访问", tool("download")),
        "无法完成。",
    )
    loop.handle(SESSION, GOAL)
    plan = plan_file(tmp_path)
    assert plan["status"] == "failed" and plan["failure_reason"] == "网站拒绝访问"
    assert plan["steps"][0]["status"] == "failed"
