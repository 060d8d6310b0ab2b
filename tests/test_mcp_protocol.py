"""`waygraph mcp` as the official MCP client sees it (issue 37, item 6).

One server over stdio, driven by the `mcp` package's client session: the
server's version, tool schemas (descriptions, enums, no unknown arguments),
annotations, one-line argument errors, resource-not-found, a result reported
for a session with no run, and the docs' tool table checked against the
server's own tool list.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

import waygraph
from tests.test_mcp import LIBRARY, call, with_server

DOCS = Path(__file__).resolve().parent.parent / "docs" / "integrations.md"


async def read_error(session: ClientSession, uri: str) -> dict[str, Any]:
    """The JSON-RPC error of reading ``uri`` (code, message, data)."""
    try:
        await session.read_resource(uri)
    except Exception as exc:  # the client raises the protocol error it got
        error = getattr(exc, "error", None)
        assert error is not None, repr(exc)
        return {"code": error.code, "message": error.message, "data": error.data}
    raise AssertionError(f"reading {uri} succeeded")


@pytest.fixture(scope="module")
def seen(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("mcp_protocol")
    library = tmp / "plans.yaml"
    library.write_text(LIBRARY)

    async def body(session: ClientSession) -> dict[str, Any]:
        info = session.initialize_result.server_info  # type: ignore[union-attr]
        tools = (await session.list_tools()).tools
        found: dict[str, Any] = {
            "server": {"name": info.name, "version": info.version},
            "tools": {tool.name: tool for tool in tools},
            "order": [tool.name for tool in tools],
        }
        report = "report_tool_result"
        found["no_run"] = await call(session, report, session_id="nobody", output="ok")
        found["no_run_model"] = await call(
            session, report, session_id="nobody", output="All done.", source="model", final=True
        )
        found["missing"] = await call(session, "match_plans")
        found["wrong_type"] = await call(
            session, report, session_id="s", output="x", exit_code="abc"
        )
        found["wrong_items"] = await call(
            session, "match_plans", message="cut a release", allowed_plans=[{"a": 1}]
        )
        found["two_wrong"] = await call(session, "start_plan", session_id=[1])
        found["unknown_arg"] = await call(
            session, "get_status", session_id="s", sesion="typo", verbose=True
        )
        found["no_args_tool"] = await call(session, "list_plans", everything=True)
        found["bad_source"] = await call(
            session, report, session_id="s", output="x", source="human"
        )
        found["unknown_plan"] = await read_error(session, "waygraph://plans/nope/json")
        found["unknown_uri"] = await read_error(session, "file:///etc/passwd")
        # The same calls, valid, still work (and a run's results are verified).
        await call(session, "user_message", session_id="s", message="cut a release")
        found["reported"] = await call(session, report, session_id="s", output="ok", exit_code=0)
        found["reset"] = await call(session, "reset_session", session_id="s")
        found["after_reset"] = await call(session, report, session_id="s", output="ok")
        return found

    return with_server(["--library", str(library), "--store", "memory://"], body, tmp)  # type: ignore[no-any-return]


def one_line(result: dict[str, Any]) -> str:
    assert set(result) == {"error"}, result
    text: str = result["error"]
    assert "\n" not in text and "pydantic" not in text and "validation error" not in text, text
    return text


def test_server_info_names_waygraph_and_its_version(seen: dict[str, Any]):
    assert seen["server"] == {"name": "waygraph", "version": waygraph.__version__}
    assert waygraph.__version__


def test_a_result_for_a_session_with_no_run_is_a_tool_error(seen: dict[str, Any]):
    for key in ("no_run", "no_run_model", "after_reset"):
        text = one_line(seen[key])
        assert "no plan is running in session" in text, text
        assert "start_plan" in text and "user_message" in text, text
    assert "'nobody'" in seen["no_run"]["error"]
    assert "'s'" in seen["after_reset"]["error"]
    # With a run, the same report is verified as before.
    assert seen["reported"]["run"]["current_node"] == "publish"
    assert seen["reset"]["aborted"] == "release"


def test_argument_errors_are_one_line_naming_the_argument(seen: dict[str, Any]):
    assert one_line(seen["missing"]).endswith("match_plans: argument 'message' is required")
    wrong = one_line(seen["wrong_type"])
    # As docs/integrations.md shows it.
    assert wrong.endswith("""argument 'exit_code' must be an integer or null (got "abc")"""), wrong
    items = one_line(seen["wrong_items"])
    assert "argument 'allowed_plans' must be a list of text" in items, items
    two = one_line(seen["two_wrong"])
    assert "argument 'session_id' must be text" in two and "argument 'plan_id' is required" in two
    assert "Only a person answers" in one_line(seen["bad_source"])


def test_unknown_arguments_are_refused(seen: dict[str, Any]):
    text = one_line(seen["unknown_arg"])
    assert "unknown arguments 'sesion', 'verbose'" in text and "it takes session_id" in text, text
    assert "unknown argument 'everything' (it takes no arguments)" in one_line(seen["no_args_tool"])


def test_an_unknown_resource_is_resource_not_found(seen: dict[str, Any]):
    from waygraph.integrations.mcp_protocol import RESOURCE_NOT_FOUND

    assert RESOURCE_NOT_FOUND == -32002
    plan = seen["unknown_plan"]
    assert plan["code"] == -32002 and plan["data"] == {"uri": "waygraph://plans/nope/json"}
    assert "no plan 'nope'" in plan["message"] and "\n" not in plan["message"]
    uri = seen["unknown_uri"]
    assert uri["code"] == -32002 and uri["data"] == {"uri": "file:///etc/passwd"}


def test_every_argument_is_described_and_none_other_is_accepted(seen: dict[str, Any]):
    for name, tool in seen["tools"].items():
        schema = tool.input_schema
        assert schema["additionalProperties"] is False, name
        for argument, prop in schema["properties"].items():
            assert len(prop.get("description", "")) > 10, (name, argument)
    source = seen["tools"]["report_tool_result"].input_schema["properties"]["source"]
    assert source["enum"] == ["tool", "host", "model"] and source["default"] == "tool"


def test_tool_annotations_say_what_each_tool_changes(seen: dict[str, Any]):
    hints = {
        name: tool.annotations.model_dump(by_alias=True, exclude_none=True)
        for name, tool in seen["tools"].items()
    }
    for name in ("list_plans", "match_plans", "get_status"):
        assert hints[name]["readOnlyHint"] is True and hints[name]["openWorldHint"] is False
    for name in ("start_plan", "user_message", "report_tool_result", "reset_session"):
        assert hints[name]["readOnlyHint"] is False, name
    assert hints["reset_session"]["destructiveHint"] is True
    assert hints["reset_session"]["idempotentHint"] is True
    assert hints["start_plan"]["destructiveHint"] is True
    assert hints["report_tool_result"]["destructiveHint"] is False
    assert hints["report_tool_result"]["idempotentHint"] is False
    assert all(hint["title"] for hint in hints.values())


def docs_tool_table() -> dict[str, list[str]]:
    """docs/integrations.md's MCP tool table: tool -> its arguments (``name?`` when optional)."""
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index("## MCP server") :]
    section = section[: section.index("\n## ", 1)] if "\n## " in section[1:] else section
    rows: dict[str, list[str]] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and re.fullmatch(r"`\w+`", cells[0]):
            # "(`tool`, `host` or `model`)" lists an argument's values, not arguments.
            arguments = re.sub(r"\([^)]*\)", "", cells[1])
            rows[cells[0].strip("`")] = re.findall(r"`(\w+\??)`", arguments)
    return rows


def test_the_docs_table_lists_every_tool_and_argument_the_server_has(seen: dict[str, Any]):
    served = {}
    for name in seen["order"]:
        schema = seen["tools"][name].input_schema
        required = set(schema.get("required", []))
        served[name] = [a if a in required else f"{a}?" for a in schema["properties"]]
    table = docs_tool_table()
    assert list(table) == seen["order"], json.dumps(table)
    assert table == served
