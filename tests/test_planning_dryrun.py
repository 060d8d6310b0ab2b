"""Dry runs: ``pattern.simulate(agent, plan)`` and ``PlanningPattern(dry_run=True)``.

Layers, parallel batches under ``max_parallel``, the critical path, the token
budget, invalid plans; and, throughout, that no tool and (for ``simulate``)
no model is ever called.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pydantic import ValidationError

from waygraph.errors import ConfigError
from waygraph.planning import (
    Agent,
    DryRunLayer,
    DryRunReport,
    LLMResponse,
    OpenAILLM,
    Plan,
    PlanExecutionResult,
    PlanningAgent,
    PlanningCallbacks,
    PlanningPattern,
    Tool,
)
from waygraph.testing import ScriptedChatServer

pytestmark = pytest.mark.timeout(30)


class NoModel:
    """An LLM that fails the test when called: simulate must not ask a model."""

    async def complete(self, messages, *, json_schema=None, schema_name="reply") -> LLMResponse:
        raise AssertionError(f"unexpected model call: {messages[-1]['content'][:80]}")


class Recorder:
    """Tools that record every call, so a test can prove none happened."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def fetch(self, url: str) -> str:
        """Fetch a page."""
        self.calls.append(f"fetch {url}")
        return url

    def merge(self, left: str, right: str = "") -> str:
        """Merge two texts."""
        self.calls.append("merge")
        return left + right

    def publish(self, text: str) -> str:
        """Publish a text (a side effect)."""
        self.calls.append("publish")
        return text

    def tools(self) -> list[Any]:
        return [self.fetch, self.merge, Tool(self.publish, side_effects=True)]


def step(
    step_id: str, action: str = "fetch", deps: tuple[str, ...] = (), tokens: int = 0, **params: Any
) -> dict[str, Any]:
    if not params:
        params = {"url": step_id} if action == "fetch" else {"text": step_id}
    return {
        "id": step_id,
        "action": action,
        "parameters": params,
        "dependencies": list(deps),
        "estimated_tokens": tokens,
    }


def plan_of(*steps: dict[str, Any]) -> Plan:
    return Plan(goal="report", steps=list(steps))


#: Three roots; a merge of two of them; a publish after the merge and the third root.
#:   a --\
#:        c -- e
#:   b --/    /
#:   d ------/
WIDE = plan_of(
    step("a", tokens=10),
    step("b", tokens=10),
    step("c", "merge", ("a", "b"), tokens=40, left="$a", right="$b"),
    step("d", tokens=5),
    step("e", "publish", ("c", "d"), tokens=2, text="$c"),
)


def simulate(plan: Plan | dict[str, Any], recorder: Recorder | None = None, **pattern: Any):
    recorder = recorder or Recorder()
    agent = Agent(tools=recorder.tools(), llm=NoModel())
    report = asyncio.run(PlanningPattern(**pattern).simulate(agent, plan))
    assert recorder.calls == []  # simulate never calls a tool
    return report


def batches(report: DryRunReport) -> list[list[list[str]]]:
    return [[list(b) for b in layer.batches] for layer in report.layers]


# ------------------------------------------------------------------ layers and batches


def test_layers_are_in_dependency_order_and_cover_every_step():
    report = simulate(WIDE, execution_mode="parallel")
    assert report.valid and report.problems == ()
    assert [layer.index for layer in report.layers] == [0, 1, 2]
    assert [set(layer.steps) for layer in report.layers] == [{"a", "b", "d"}, {"c"}, {"e"}]
    assert [layer.estimated_tokens for layer in report.layers] == [25, 40, 2]
    assert report.unschedulable == ()
    assert report.step_count == 5
    assert isinstance(report.layers[0], DryRunLayer)


def test_max_parallel_2_splits_a_layer_into_batches_longest_chain_first():
    report = simulate(WIDE, execution_mode="parallel", max_parallel=2)
    # a and b have two steps behind them, d one: the scheduler starts a and b first.
    assert batches(report) == [[["a", "b"], ["d"]], [["c"]], [["e"]]]
    assert report.concurrency == 2 and report.peak_parallel == 2


def test_max_parallel_1_runs_one_step_per_batch():
    report = simulate(WIDE, execution_mode="parallel", max_parallel=1)
    assert batches(report) == [[["a"], ["b"], ["d"]], [["c"]], [["e"]]]
    assert report.concurrency == 1 and report.peak_parallel == 1


def test_a_wide_layer_fits_in_one_batch_when_max_parallel_allows():
    report = simulate(WIDE, execution_mode="parallel", max_parallel=3)
    assert batches(report)[0] == [["a", "b", "d"]]
    assert report.peak_parallel == 3


def test_sequential_mode_keeps_plan_order_one_at_a_time_whatever_max_parallel():
    plan = plan_of(step("d"), step("a"), step("c", "merge", ("a",), left="$a"))
    report = simulate(plan, execution_mode="sequential", max_parallel=5)
    assert batches(report) == [[["d"], ["a"]], [["c"]]]
    assert report.concurrency == 1


def test_adaptive_mode_runs_a_side_effect_step_alone():
    plan = plan_of(step("a"), step("p", "publish"), step("b"), step("c"))
    report = simulate(plan, execution_mode="adaptive", max_parallel=3)
    assert batches(report) == [[["a"], ["p"], ["b", "c"]]]


# ------------------------------------------------------------------ critical path


def test_the_critical_path_is_the_longest_chain_in_steps_not_in_tokens():
    plan = plan_of(
        step("big", tokens=1000),  # one expensive step alone
        step("s1", tokens=1),
        step("s2", "merge", ("s1",), tokens=1, left="$s1"),
        step("s3", "merge", ("s2",), tokens=1, left="$s2"),
    )
    report = simulate(plan, execution_mode="parallel")
    assert report.critical_path == ("s1", "s2", "s3")
    assert report.critical_path_tokens == 3
    assert report.estimated_tokens == 1003


def test_equally_long_chains_go_to_the_one_with_more_estimated_tokens():
    report = simulate(WIDE, execution_mode="parallel")
    # a -> c -> e and b -> c -> e are three steps each (52 tokens), d -> e two.
    assert report.critical_path == ("a", "c", "e")
    assert report.critical_path_tokens == 52
    cheap_first = plan_of(
        step("x", tokens=1), step("y", tokens=9), step("z", "merge", ("x", "y"), left="$x")
    )
    assert simulate(cheap_first).critical_path == ("y", "z")


# ------------------------------------------------------------------ tokens and the budget


def test_an_estimate_over_the_token_budget_is_flagged_and_makes_the_plan_invalid():
    report = simulate(WIDE, token_budget=50)
    assert report.estimated_tokens == 67
    assert report.token_budget == 50 and report.budget_left == 50 and report.tokens_spent == 0
    assert report.over_budget is True
    assert not report.valid
    assert [p.code for p in report.problems] == ["over_budget"]
    assert "67 tokens, over the 50 tokens left" in report.problems[0].message
    # Over budget or not, the layout is still shown.
    assert [len(layer.steps) for layer in report.layers] == [3, 1, 1]


def test_an_estimate_within_the_budget_is_valid():
    report = simulate(WIDE, token_budget=67)
    assert report.valid and not report.over_budget and report.budget_left == 67
    unbudgeted = simulate(WIDE)
    assert unbudgeted.token_budget is None and unbudgeted.budget_left is None
    assert not unbudgeted.over_budget


def test_steps_without_an_estimate_are_named_and_noted():
    report = simulate(plan_of(step("a", tokens=5), step("b")))
    assert report.unestimated_steps == ("b",)
    assert any("1 of 2 steps without a token estimate count 0" in note for note in report.notes)


# ------------------------------------------------------------------ invalid plans


def test_an_unknown_tool_is_reported_and_the_layout_still_shown():
    report = simulate(plan_of(step("a"), step("b", "serch", ("a",), q="$a")))
    assert not report.valid
    assert [(p.code, p.step_id) for p in report.problems] == [("unknown_tool", "b")]
    assert "unknown tool 'serch'" in report.problems[0].message
    assert [layer.steps for layer in report.layers] == [("a",), ("b",)]
    assert report.summary().startswith("invalid: 1 problem (unknown_tool at 'b')")


def test_steps_on_a_cycle_or_behind_an_unknown_step_are_unschedulable():
    plan = plan_of(
        step("a", deps=("b",)),
        step("b", deps=("a",)),
        step("c", deps=("ghost",)),
        step("d", "merge", ("c",), left="$c"),
        step("ok"),
    )
    report = simulate(plan)
    assert not report.valid
    assert {p.code for p in report.problems} == {"cycle", "unknown_dependency"}
    assert report.unschedulable == ("a", "b", "c", "d")
    assert [layer.steps for layer in report.layers] == [("ok",)]
    assert report.critical_path == ("ok",)


def test_a_plan_given_as_json_is_parsed_and_its_problems_reported():
    report = simulate({"goal": "g", "steps": [{"id": "a", "action": "fetch"}]})
    assert not report.valid and report.plan is None and report.layers == ()
    assert {p.code for p in report.problems} == {"missing_field", "missing_dependencies"}
    assert report.goal == "g"
    good = simulate({"goal": "g", "steps": [step("a"), step("b", "merge", ("a",), left="$a")]})
    assert good.valid and [layer.steps for layer in good.layers] == [("a",), ("b",)]


def test_without_require_dependencies_references_imply_the_layers():
    plan = plan_of(step("a"), {"id": "b", "action": "merge", "parameters": {"left": "$a"}})
    report = simulate(plan, require_dependencies=False)
    assert report.valid
    assert [layer.steps for layer in report.layers] == [("a",), ("b",)]


def test_bad_arguments_raise_a_clear_error_naming_the_argument():
    agent = Agent(tools=Recorder().tools(), llm=NoModel())
    with pytest.raises(ConfigError, match=r"simulate: plan must be a Plan .* not int"):
        asyncio.run(PlanningPattern().simulate(agent, 42))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="expected an Agent, got str"):
        asyncio.run(PlanningPattern().simulate("agent", WIDE))  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="dry_run"):
        PlanningPattern(dry_run="perhaps")  # type: ignore[arg-type]


# ------------------------------------------------------------------ simulate leaves no trace


def test_simulate_works_with_a_planning_agent_and_leaves_the_latest_run_alone():
    recorder = Recorder()
    pattern = PlanningPattern(execution_mode="parallel", max_parallel=2)
    engine = PlanningAgent(NoModel(), tools=recorder.tools(), pattern=pattern)
    report = asyncio.run(pattern.simulate(engine, WIDE))
    assert report.valid and report.plan is not None and report.plan.step_ids == WIDE.step_ids
    assert recorder.calls == []
    assert pattern.get_plan() is None and engine.get_plan() is None
    assert engine.get_execution_state() is None


def test_the_report_round_trips_through_json():
    report = simulate(WIDE, execution_mode="parallel", max_parallel=2, token_budget=10)
    data = json.loads(report.model_dump_json())
    assert data["layers"][0]["batches"] == [["a", "b"], ["d"]]
    assert data["problems"][0][0] == "over_budget"
    assert DryRunReport.model_validate_json(report.model_dump_json()) == report


# ------------------------------------------------------------------ PlanningPattern(dry_run=True)


def llm_for(server: ScriptedChatServer) -> OpenAILLM:
    return OpenAILLM(base_url=server.base_url, model="scripted", api_key="k", max_retries=0)


def wide_json() -> str:
    return WIDE.model_dump_json(exclude={"created_at", "estimated_total_tokens"})


def test_a_dry_run_plans_with_the_model_validates_and_never_executes_a_step():
    recorder = Recorder()
    started: list[str] = []
    callbacks = PlanningCallbacks(on_step_start=lambda step, **_: started.append(step.id))
    pattern = PlanningPattern(dry_run=True, execution_mode="parallel", max_parallel=2)
    with ScriptedChatServer([wide_json()]) as server:
        agent = Agent(pattern=pattern, tools=recorder.tools(), llm=llm_for(server),
                      callbacks=callbacks)  # fmt: skip
        result = asyncio.run(agent.run("write the report"))
        asked = len(server.requests)
    assert isinstance(result, PlanExecutionResult)
    assert asked == 1  # the plan was generated by the model, as in a real run
    assert recorder.calls == [] and started == []
    assert result.success is True
    assert result.step_results == {} and result.execution_state is None
    report = result.dry_run_report
    assert report is not None and report.valid
    assert batches(report) == [[["a", "b"], ["d"]], [["c"]], [["e"]]]
    assert result.plan is not None and result.plan.step_ids == ["a", "b", "c", "d", "e"]
    assert str(result.final_output).startswith("dry run, nothing executed: valid: 5 steps")
    assert result.token_usage.total_tokens > 0
    assert report.tokens_spent == result.token_usage.total_tokens


def test_a_dry_run_does_not_ask_for_approval():
    asked: list[Plan] = []

    def approve(plan: Plan) -> bool:
        asked.append(plan)
        return True

    pattern = PlanningPattern(dry_run=True, require_plan_approval=True)
    with ScriptedChatServer([wide_json()]) as server:
        agent = Agent(pattern=pattern, tools=Recorder().tools(), llm=llm_for(server),
                      callbacks=PlanningCallbacks(on_plan_approved=approve))  # fmt: skip
        result = asyncio.run(agent.run("write the report"))
    assert result.success and asked == []


def test_a_dry_run_of_an_invalid_plan_reports_it_and_fails():
    bad = json.dumps({"goal": "g", "steps": [step("a", "serch")]})
    recorder = Recorder()
    with ScriptedChatServer([bad] * 3) as server:  # the plan and two repairs
        agent = Agent(pattern=PlanningPattern(dry_run=True), tools=recorder.tools(),
                      llm=llm_for(server))  # fmt: skip
        result = asyncio.run(agent.run("search"))
    assert result.success is False and recorder.calls == []
    report = result.dry_run_report
    assert report is not None and not report.valid
    assert [p.code for p in report.problems] == ["unknown_tool"]
    assert result.problems == report.problems
    assert [layer.steps for layer in report.layers] == [("a",)]
    assert "unknown tool 'serch'" in str(result.final_output)


def test_a_dry_run_counts_the_planning_tokens_against_the_budget():
    scripted = {
        "content": wide_json(),
        "usage": {"prompt_tokens": 30, "completion_tokens": 10, "total_tokens": 40},
    }
    with ScriptedChatServer([scripted]) as server:
        pattern = PlanningPattern(dry_run=True, token_budget=200, plan_repair_attempts=0)
        agent = Agent(pattern=pattern, tools=Recorder().tools(), llm=llm_for(server))
        result = asyncio.run(agent.run("write the report"))
    report = result.dry_run_report
    assert report is not None and report.valid
    assert (report.token_budget, report.tokens_spent, report.budget_left) == (200, 40, 160)
    assert report.estimated_tokens == 67 and not report.over_budget


def test_a_dry_run_whose_model_cannot_be_reached_says_so():
    with ScriptedChatServer([]) as server:  # every request answers HTTP 500
        agent = Agent(pattern=PlanningPattern(dry_run=True), tools=Recorder().tools(),
                      llm=llm_for(server))  # fmt: skip
        result = asyncio.run(agent.run("anything"))
    assert result.success is False and result.plan is None
    report = result.dry_run_report
    assert report is not None and report.plan is None and report.goal == "anything"
    assert [p.code for p in report.problems] == ["no_plan"]
    assert "planning failed" in report.problems[0].message


def test_execute_plan_under_a_dry_run_pattern_validates_but_runs_nothing():
    recorder = Recorder()
    pattern = PlanningPattern(dry_run=True, execution_mode="parallel")
    engine = PlanningAgent(NoModel(), tools=recorder.tools(), pattern=pattern)
    result = asyncio.run(engine.execute_plan(WIDE))
    assert result.success and result.dry_run_report is not None
    assert result.dry_run_report.layers[0].batches == (("a", "b", "d"),)
    assert recorder.calls == [] and result.step_results == {}


def test_a_normal_run_has_no_dry_run_report():
    recorder = Recorder()
    engine = PlanningAgent(NoModel(), tools=recorder.tools())
    result = asyncio.run(engine.execute_plan(plan_of(step("a"))))
    assert result.success and result.dry_run_report is None
    assert recorder.calls == ["fetch a"]


def test_sub_plans_are_one_step_in_the_layout_and_explained_in_the_notes():
    plan = plan_of(
        step("a"),
        {"id": "later", "action": "decompose", "description": "research", "parameters": {},
         "dependencies": ["a"]},
        {"id": "inline", "action": "decompose", "parameters": {}, "dependencies": [],
         "subplan": {"steps": [step("x"), step("y")]}},
    )  # fmt: skip
    report = simulate(plan, hierarchical=True, execution_mode="parallel")
    assert report.valid, report.problems
    assert [layer.steps for layer in report.layers] == [("a", "inline"), ("later",)]
    assert any("'later' is planned into a sub-plan by the model when it is reached" in n
               for n in report.notes)  # fmt: skip
    assert any("'inline' runs a sub-plan of 2 steps as one step" in n for n in report.notes)


def test_a_plan_rejected_by_on_plan_generated_is_reported_as_rejected():
    def refuse(plan: Plan) -> Plan:
        raise RuntimeError("not today")

    with ScriptedChatServer([wide_json()]) as server:
        agent = Agent(
            pattern=PlanningPattern(dry_run=True),
            tools=Recorder().tools(),
            llm=llm_for(server),
            callbacks=PlanningCallbacks(on_plan_generated=refuse),
        )
        result = asyncio.run(agent.run("write the report"))
    report = result.dry_run_report
    assert result.success is False and report is not None and report.plan is not None
    assert [p.code for p in report.problems] == ["rejected"]
    assert "not today" in report.problems[0].message
