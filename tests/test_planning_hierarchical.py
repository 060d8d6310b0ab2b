"""Hierarchical plans: sub-plans given inline or decomposed on demand, the depth limit,
and results, tokens and revisions rolled up into the parent step."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from waygraph.planning import OpenAILLM, PlanningAgent, PlanningPattern, StepContext
from waygraph.testing import ScriptedChatServer

pytestmark = pytest.mark.timeout(30)


@contextmanager
def scripted(*replies: Any) -> Iterator[tuple[ScriptedChatServer, OpenAILLM]]:
    with ScriptedChatServer(list(replies)) as server:
        yield (
            server,
            OpenAILLM(
                "scripted", base_url=server.base_url, api_key="test", max_retries=0, timeout=5
            ),
        )


def step(step_id: str, action: str, deps: tuple[str, ...] = (), **params: Any) -> dict[str, Any]:
    return {"id": step_id, "action": action, "parameters": params, "dependencies": list(deps)}


def composite(
    step_id: str,
    description: str,
    deps: tuple[str, ...] = (),
    subplan: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    data = {
        "id": step_id,
        "action": "decompose",
        "description": description,
        "parameters": {},
        "dependencies": list(deps),
    }
    if subplan is not None:
        data["subplan"] = {"steps": subplan}
    return data


def plan_json(*steps: dict[str, Any], goal: str = "report") -> str:
    return json.dumps({"goal": goal, "steps": list(steps)})


def tools() -> list[Any]:
    def fetch(source: str) -> str:
        return f"data from {source}"

    def shout(text: str) -> str:
        return text.upper()

    def fail(text: str = "") -> str:
        raise RuntimeError("cannot")

    def costly(ctx: StepContext) -> str:
        ctx.report_tokens(7)
        return "paid"

    return [fetch, shout, fail, costly]


def agent(llm: OpenAILLM, **pattern: Any) -> PlanningAgent:
    pattern.setdefault("hierarchical", True)
    pattern.setdefault("retry_failed_steps", 0)
    return PlanningAgent(llm, tools=tools(), pattern=PlanningPattern(**pattern))


def test_an_inline_subplan_runs_and_its_result_rolls_up():
    reply = plan_json(
        step("s1", "fetch", source="web"),
        composite("s2", "Shout the data", ("s1",), subplan=[
            step("x", "fetch", source="${s1} again"),
            step("y", "shout", ("x",), text="$x"),
        ]),
        step("s3", "shout", ("s2",), text="final: $s2"),
    )  # fmt: skip
    with scripted(reply) as (server, llm):
        result = agent(llm).run("report")
        assert len(server.requests) == 1  # nothing left to decompose
    assert result.success
    parent = result.step_results["s2"]
    assert parent.output == "DATA FROM DATA FROM WEB AGAIN"
    assert parent.subplan_result is not None and parent.subplan_result.success
    assert set(parent.subplan_result.step_results) == {"x", "y"}
    assert result.final_output == "FINAL: DATA FROM DATA FROM WEB AGAIN"


def test_a_decompose_step_is_planned_when_it_is_reached():
    top = plan_json(
        step("s1", "fetch", source="db"), composite("s2", "Shout what was fetched", ("s1",))
    )
    sub = plan_json(step("loud", "shout", text="$s1"), goal="Shout what was fetched")
    with scripted(top, sub) as (server, llm):
        result = agent(llm).run("report")
        request = server.requests[1]["messages"]
    assert result.success
    assert result.final_output == "DATA FROM DB"
    assert request[-1]["content"].startswith(
        "Goal: Shout what was fetched\n\nThis is one step of a larger goal: report"
    )
    assert "- s1: data from db" in request[-1]["content"]
    decomposed = result.final_plan.step("s2").subplan
    assert decomposed is not None and decomposed.step_ids == ["loud"]
    assert result.plan.step("s2").subplan is None  # the plan as first approved
    graph = result.final_plan.to_graph_plan("report").graph
    assert graph.nodes["s2"].meta["planning_step"]["subplan"]["steps"][0]["id"] == "loud"


def test_decomposition_stops_at_the_depth_limit():
    top = plan_json(composite("s1", "Do the work"))
    too_deep = plan_json(composite("inner", "Even more detail"), goal="Do the work")
    flat = plan_json(step("f", "fetch", source="api"), goal="Do the work")
    with scripted(top, too_deep, flat) as (server, llm):
        result = agent(llm, max_decomposition_depth=1).run("report")
        first_system = server.requests[0]["messages"][0]["content"]
        sub_system = server.requests[1]["messages"][0]["content"]
        resend = server.requests[2]["messages"][-1]["content"]
    assert result.success and result.final_output == "data from api"
    assert '"decompose"' in first_system
    assert '"decompose"' not in sub_system  # at the limit the model is not offered it
    assert "asks for a sub-plan at depth 2, deeper than max_decomposition_depth 1" in resend


def test_inline_subplans_deeper_than_the_limit_are_invalid():
    reply = plan_json(
        composite(
            "a",
            "outer",
            subplan=[composite("b", "middle", subplan=[step("c", "fetch", source="x")])],
        )
    )
    with scripted(reply) as (_, llm):
        result = agent(llm, max_decomposition_depth=1, plan_repair_attempts=0).run("report")
    assert not result.success
    assert [p.code for p in result.problems] == ["too_deep"]


def test_without_hierarchical_planning_decompose_is_refused():
    reply = plan_json(composite("a", "anything"))
    with scripted(reply) as (server, llm):
        result = agent(llm, hierarchical=False, plan_repair_attempts=0).run("report")
        system = server.requests[0]["messages"][0]["content"]
    assert [p.code for p in result.problems] == ["hierarchical_off"]
    assert "decompose" not in system


def test_a_failed_subplan_fails_its_step_and_the_fallback_can_save_it():
    failing = [step("x", "fail")]
    reply = plan_json(
        composite("a", "risky", subplan=failing),
        dict(
            composite("b", "risky too", subplan=failing),
            fallback_action="fetch",
            fallback_parameters={"source": "cache"},
        ),
    )
    with scripted(reply) as (_, llm):
        result = agent(llm, allow_revision=False, continue_on_failure=True).run("report")
    a, b = result.step_results["a"], result.step_results["b"]
    assert a.status.value == "failed"
    assert a.error.startswith("sub-plan failed: The plan did not complete: step 'x' failed")
    assert (b.status.value, b.output, b.used_fallback) == ("completed", "data from cache", True)


def test_tokens_and_revisions_roll_up_from_subplans():
    top = plan_json(
        composite("a", "pay and retry", subplan=[step("p", "costly"), step("q", "fail", ("p",))])
    )
    fix = plan_json(step("q2", "shout", ("p",), text="fixed"), goal="pay and retry")
    with scripted(top, fix) as (server, llm):
        result = agent(llm).run("report")
        requests = server.requests
    assert result.success and result.final_output == "FIXED"
    assert result.revision_count == 1
    sub = result.step_results["a"].subplan_result
    assert sub.revision_count == 1 and sub.final_plan.step_ids == ["p", "q2"]

    def tokens(request: dict[str, Any], reply: str) -> int:
        return sum(len(m["content"].split()) for m in request["messages"]) + len(reply.split())

    planning, revision = tokens(requests[0], top), tokens(requests[1], fix)
    # The sub-plan spent 7 tool tokens and its revision; the parent step carries both.
    assert sub.token_usage.total_tokens == 7 + revision
    assert result.step_results["a"].token_usage == sub.token_usage
    assert result.token_usage.total_tokens == planning + revision + 7
