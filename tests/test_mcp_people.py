"""`waygraph mcp` and issue 32: only a person passes a step a person decides.

End to end over stdio with the official ``mcp`` client session. A client that
offers elicitation is asked for the person's choice (a human node) or
confirmation (a manual check) by the server itself; one that does not is told
to ask the user in chat and wait. No tool answers for the person, and a
reply that asks the user something is a question, not a claim.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import mcp.types as mcp_types
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from tests.test_mcp import call

LIBRARY = """\
plans:
  rollout:
    name: Rollout
    triggers: [roll out the service]
    trigger_threshold: 1
    graph:
      start: start
      nodes:
        start: {type: start}
        build: {type: task, action: Run the build, verify: {type: exit_code_zero}}
        where: {type: human, prompt: "Roll out to which environment?"}
        staging: {type: task, action: Deploy to staging, verify: {type: exit_code_zero}}
        done: {type: exit}
        stopped: {type: exit, status: aborted, reason: the person cancelled}
      edges:
        - {from: start, to: build}
        - {from: build, to: where, condition: on_success}
        - {from: where, to: staging, label: "[S] Staging"}
        - {from: where, to: stopped, label: "[C] Cancel"}
        - {from: staging, to: done, condition: on_success}
  release:
    name: Release
    triggers: [cut a release]
    trigger_threshold: 1
    steps:
      - name: Approve
        action: Get the go-ahead for the release
        verify: {type: manual, value: CONFIRMED}
      - {name: Tag, action: Tag the release, verify: {type: exit_code_zero}}
"""

Body = Callable[[ClientSession], Awaitable[Any]]
Elicit = Callable[[Any, Any], Awaitable[Any]]


@pytest.fixture
def library(tmp_path: Path) -> Path:
    path = tmp_path / "people.yaml"
    path.write_text(LIBRARY)
    return path


def with_client(library: Path, body: Body, cwd: Path, elicit: Elicit | None = None) -> Any:
    """`python -m waygraph mcp` with ``library``, a client session (eliciting with
    ``elicit`` when given, else offering no elicitation), then ``body``."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "waygraph", "mcp", "--library", str(library), "--store", "memory://"],
        env=dict(os.environ),
        cwd=cwd,
    )

    async def main() -> Any:
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write, elicitation_callback=elicit) as session,
        ):
            await session.initialize()
            return await body(session)

    return asyncio.run(asyncio.wait_for(main(), timeout=60))


def person(*answers: dict[str, Any] | str) -> tuple[Elicit, list[Any]]:
    """An elicitation callback answering with ``answers`` in turn ("decline" / "cancel"
    for those actions), and the list of the requests it was sent."""
    asked: list[Any] = []
    queue = list(answers)

    async def elicit(context: Any, params: Any) -> Any:
        asked.append(params)
        answer = queue.pop(0)
        if isinstance(answer, str):
            return mcp_types.ElicitResult(action=answer)  # type: ignore[arg-type]
        return mcp_types.ElicitResult(action="accept", content=answer)

    return elicit, asked


def schema_of(params: Any) -> dict[str, Any]:
    return getattr(params, "requested_schema", None) or params.requestedSchema


def kinds(result: dict[str, Any]) -> list[str]:
    return [e["type"] for e in result["events"]]


async def to_the_human_node(session: ClientSession) -> dict[str, Any]:
    """Start the rollout and pass its build: the run enters the human node."""
    await call(session, "user_message", session_id="s", message="roll out the service")
    return await call(
        session, "report_tool_result", session_id="s", output="built", exit_code=0, call_id="b"
    )


def test_with_elicitation_the_persons_choice_moves_a_human_node(library: Path, tmp_path: Path):
    elicit, asked = person({"choice": "[S] Staging"}, {"answer": "CONFIRMED"})

    async def body(session: ClientSession) -> dict[str, Any]:
        seen = {"reached": await to_the_human_node(session)}
        seen["release"] = await call(session, "start_plan", session_id="r", plan_id="release")
        seen["status"] = await call(session, "get_status", session_id="s")
        return seen

    seen = with_client(library, body, tmp_path, elicit)
    reached = seen["reached"]
    assert reached["run"]["current_node"] == "staging"
    assert reached["run"]["awaiting"] is None and reached["ask_user"] is None
    assert kinds(reached).index("human_asked") < kinds(reached).index("human_answered")
    answered = next(e for e in reached["events"] if e["type"] == "human_answered")
    assert answered["by"] == "mcp-elicitation" and answered["answer"] == "[S] Staging"
    assert reached["elicited"] == [{"node": "where", "action": "accept", "answer": "[S] Staging"}]
    # The person was asked the node's question, its choices as an enum.
    assert "Roll out to which environment?" in asked[0].message
    choice = schema_of(asked[0])["properties"]["choice"]
    assert choice["type"] == "string" and choice["enum"] == ["[S] Staging", "[C] Cancel"]
    # A manual check asks for the value in a text field; a plan starting there asks at once.
    assert "Get the go-ahead for the release" in asked[1].message
    field = schema_of(asked[1])["properties"]["answer"]
    assert field["type"] == "string" and "CONFIRMED" in field["description"]
    assert seen["release"]["run"]["current_node"] == "step_2"
    assert seen["status"]["run"]["current_node"] == "staging"


def test_without_elicitation_the_result_says_to_ask_the_user(library: Path, tmp_path: Path):
    async def body(session: ClientSession) -> dict[str, Any]:
        seen = {"reached": await to_the_human_node(session)}
        seen["status"] = await call(session, "get_status", session_id="s")
        # The person's reply in chat, reported as the user's message, moves the run.
        seen["replied"] = await call(session, "user_message", session_id="s", message="s")
        return seen

    seen = with_client(library, body, tmp_path)
    reached = seen["reached"]
    assert reached["run"]["current_node"] == "where" and reached["run"]["awaiting"] == "user"
    assert "human_asked" in kinds(reached) and reached["elicited"] == []
    ask = reached["ask_user"]
    assert ask["node"] == "where" and ask["question"] == "Roll out to which environment?"
    assert ask["choices"] == ["[S] Staging", "[C] Cancel"]
    assert "ask the user" in ask["instruction"].lower() and "wait" in ask["instruction"]
    assert seen["status"]["ask_user"] == ask
    assert seen["replied"]["run"]["current_node"] == "staging"
    assert seen["replied"]["ask_user"] is None


def test_a_declined_or_cancelled_elicitation_falls_back_to_the_chat(library: Path, tmp_path: Path):
    elicit, asked = person("decline", "cancel")

    async def body(session: ClientSession) -> list[dict[str, Any]]:
        first = await to_the_human_node(session)
        second = await call(session, "start_plan", session_id="r", plan_id="release")
        return [first, second]

    first, second = with_client(library, body, tmp_path, elicit)
    assert len(asked) == 2
    assert first["run"]["current_node"] == "where" and first["elicited"][0]["action"] == "decline"
    assert first["ask_user"]["choices"] == ["[S] Staging", "[C] Cancel"]
    assert second["run"]["current_node"] == "step_1" and second["elicited"][0]["action"] == "cancel"
    assert second["ask_user"]["value"] == "CONFIRMED"
    assert "human_answered" not in kinds(first) + kinds(second)


def test_no_tool_answers_for_the_person(library: Path, tmp_path: Path):
    async def body(session: ClientSession) -> dict[str, Any]:
        seen: dict[str, Any] = {"tools": (await session.list_tools()).tools}
        await to_the_human_node(session)
        seen["output"] = await call(
            session, "report_tool_result", session_id="s", output="[S] Staging", exit_code=0
        )
        seen["human"] = await call(
            session, "report_tool_result", session_id="s", output="[S] Staging", source="human"
        )
        seen["claim"] = await call(
            session,
            "report_tool_result",
            session_id="s",
            output="[S] Staging",
            source="model",
            final=True,
        )
        seen["status"] = await call(session, "get_status", session_id="s")
        return seen

    seen = with_client(library, body, tmp_path)
    for tool in seen["tools"]:
        properties = set(tool.input_schema.get("properties", {})) if tool.input_schema else set()
        assert not properties & {"answer", "choice", "by", "ctx"}, tool.name
    assert kinds(seen["output"]) == ["result_ignored"]
    assert "person" in seen["human"]["error"] and "user_message" in seen["human"]["error"]
    assert "human_answered" not in kinds(seen["claim"])
    assert seen["status"]["run"]["current_node"] == "where"
    assert seen["status"]["run"]["awaiting"] == "user"


def test_a_reply_that_asks_the_user_is_a_question(library: Path, tmp_path: Path):
    async def body(session: ClientSession) -> dict[str, Any]:
        await call(session, "user_message", session_id="s", message="roll out the service")
        seen = {
            "question": await call(
                session,
                "report_tool_result",
                session_id="s",
                output="I see two build targets. Which one should I use?",
                source="model",
                final=True,
            )
        }
        await call(session, "user_message", session_id="s", message="the default one")
        seen["told"] = await call(
            session,
            "report_tool_result",
            session_id="s",
            output="Tell me which branch to build.",
            source="model",
            final=True,
            asks_user=True,
        )
        await call(session, "user_message", session_id="s", message="main")
        seen["claim"] = await call(
            session,
            "report_tool_result",
            session_id="s",
            output="Built. Anything else?",
            source="model",
            final=True,
            asks_user=False,
        )
        return seen

    seen = with_client(library, body, tmp_path)
    for key in ("question", "told"):
        assert "question_asked" in kinds(seen[key]) and "claim_unverified" not in kinds(seen[key])
        assert seen[key]["run"]["awaiting"] == "user"
    assert "claim_unverified" in kinds(seen["claim"])
