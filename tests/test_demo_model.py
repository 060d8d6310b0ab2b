"""``waygraph demo --llm`` through the shared chat client: every call of a reply runs and is
answered, the text tool protocol works end to end, and a failing server is one line."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from rich.console import Console

from waygraph.demo import run_demo
from waygraph.navigator import Navigator
from waygraph.testing import ScriptedChatServer

REPRODUCE = "python -m unittest test_pricing"


def _demo(tmp_path: Path, replies: list[Any], **options: Any) -> tuple[Any, list[Any], str]:
    out = io.StringIO()
    console = Console(file=out, width=120)
    with ScriptedChatServer(replies) as server:
        result = run_demo(
            store=f"sqlite:///{tmp_path / 'd.db'}",
            llm_url=server.base_url,
            model="scripted",
            console=console,
            workspace=tmp_path / "ws",
            max_turns=4,
            **options,
        )
        requests = list(server.requests)
    return result, requests, out.getvalue()


def _verified(tmp_path: Path, session: str) -> list[tuple[str, bool]]:
    nav = Navigator(store=f"sqlite:///{tmp_path / 'd.db'}")
    try:
        events = nav.events(session)
    finally:
        nav.close()
    return [(e["node"], e["passed"]) for e in events if e["type"] == "node_verified"]


def test_every_call_of_a_reply_runs_in_order_and_each_is_answered(tmp_path: Path):
    calls = [
        {"id": "a", "name": "run_command", "arguments": {"command": REPRODUCE}},
        {"id": "b", "name": "run_command", "arguments": {"command": "cat pricing.py"}},
    ]
    result, requests, _ = _demo(tmp_path, [{"tool_calls": calls}, "I stop here."])
    answered = [m for m in requests[1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in answered] == ["a", "b"]
    assert "FAILED" in answered[0]["content"] and "def apply_discount" in answered[1]["content"]
    # The first call reproduced the bug: evidence for the reproduce step.
    assert _verified(tmp_path, result.session_id)[0] == ("reproduce", True)


def test_the_text_protocol_runs_the_demo_with_calls_written_in_the_reply(tmp_path: Path):
    written = json.dumps({"tool_name": "run_command", "tool_args": {"command": REPRODUCE}})
    result, requests, _ = _demo(tmp_path, [written, "I stop here."], tool_protocol="text")
    assert all("tools" not in r for r in requests)
    follow_up = requests[1]["messages"]
    assert any(
        m["role"] == "user" and m["content"].startswith("Result of run_command:") for m in follow_up
    )
    assert _verified(tmp_path, result.session_id)[0] == ("reproduce", True)


def test_a_call_the_model_wrote_in_words_is_no_answer_and_no_claim(tmp_path: Path):
    cut = '{"tool_name": "run_command", "tool_args": {"command": "python -m unit'
    result, requests, shown = _demo(tmp_path, [cut, "I stop here."], tool_protocol="text")
    assert "tool call refused" in shown
    assert "nothing ran: call the tool again" in requests[1]["messages"][-2]["content"]
    assert _verified(tmp_path, result.session_id) == []


def test_a_failing_server_is_one_line_and_the_demo_ends(tmp_path: Path):
    crash = {"status": 500, "error": "model crashed"}
    result, _, shown = _demo(tmp_path, [crash, crash])  # the client retries once
    assert "answered HTTP 500: model crashed" in shown and "Traceback" not in shown
    assert result.status == "running" and result.turns == 0


def test_the_reply_bound_and_context_reach_the_requests(tmp_path: Path):
    _, requests, _ = _demo(tmp_path, ["I stop here."], max_tokens=300, context_tokens=100000)
    assert requests[0]["max_tokens"] == 300


def test_a_write_outside_the_workspace_is_refused_and_never_evidence(tmp_path: Path):
    # A real 135M model's demo run passed reproduce and isolate on such writes.
    outside = {"name": "write_file", "arguments": {"path": "/tmp/test_login.py", "content": "x"}}
    result, requests, shown = _demo(tmp_path, [{"tool_calls": [outside]}, "I stop here."])
    assert "tool call refused" in shown
    answer = next(m for m in requests[1]["messages"] if m["role"] == "tool")["content"]
    assert answer.startswith("refused:") and "nothing ran" in answer
    assert _verified(tmp_path, result.session_id) == []


def test_calls_past_the_turn_limit_are_answered_not_run(tmp_path: Path):
    call = {"name": "run_command", "arguments": {"command": "ls"}}
    calls = [{**call, "id": f"c{i}"} for i in range(6)]
    result, requests, _ = _demo(tmp_path, [{"tool_calls": calls}, "I stop here."])
    assert result.turns == 4  # max_turns of _demo
    assert len(requests) == 1  # the limit ends the demo after the reply
