"""Tools from function signatures, and $step references in parameters."""

from __future__ import annotations

import asyncio
import threading
from typing import Annotated

import pytest
from pydantic import BaseModel, Field

from waygraph.planning import PlanStep, StepContext, Tool, ToolDefinitionError, ToolRegistry
from waygraph.planning._references import find_references, rename_reference, substitute

pytestmark = pytest.mark.timeout(20)


def add(a: int, b: int = 0) -> int:
    """Add two numbers.

    More text that is not part of the description.
    """
    return a + b


class Query(BaseModel):
    text: str
    limit: int = 5


async def search(
    query: Query, site: Annotated[str, Field(description="a domain")] = "", **options: str
) -> str:
    """Search the web."""
    return f"{query.text}/{query.limit}/{site}/{sorted(options)}"


# ------------------------------------------------------------------ schema


def test_schema_and_description_come_from_the_signature_and_docstring():
    tool = Tool(add)
    assert tool.name == "add"
    assert tool.description == "Add two numbers."
    schema = tool.parameters_schema
    assert schema["required"] == ["a"]
    assert schema["properties"]["a"]["type"] == "integer"
    assert schema["properties"]["b"]["type"] == "integer"
    assert tool.signature_text() == "add(a: integer, b?: integer)"
    assert not tool.is_async and not tool.side_effects


def test_schema_of_models_annotations_and_extra_keywords():
    tool = Tool(search)
    schema = tool.parameters_schema
    assert tool.is_async
    assert schema["properties"]["query"] == {"$ref": "#/$defs/Query"}
    assert schema["$defs"]["Query"]["required"] == ["text"]
    assert schema["properties"]["site"]["description"] == "a domain"
    assert schema["additionalProperties"] is True
    assert tool.signature_text() == "search(query: Query, site?: string, ...)"


def test_name_and_description_can_be_given():
    tool = Tool(add, name="plus", description="Sum.", side_effects=True)
    assert (tool.name, tool.description, tool.side_effects) == ("plus", "Sum.", True)


def test_context_parameter_is_hidden_from_the_model():
    async def note(text: str, ctx: StepContext) -> str:
        return text

    tool = Tool(note)
    assert tool.context_parameter == "ctx"
    assert list(tool.parameters_schema["properties"]) == ["text"]


@pytest.mark.parametrize(("fn", "message"), [
    (lambda *items: None, "takes \\*items"),
    (lambda x, /: None, "positional-only"),
])  # fmt: skip
def test_functions_that_cannot_take_named_arguments_are_refused(fn, message):
    with pytest.raises(ToolDefinitionError, match=message):
        Tool(fn, name="f")


def test_reserved_and_duplicate_names_are_refused():
    def decompose() -> None: ...

    with pytest.raises(ToolDefinitionError, match="reserved"):
        Tool(decompose)
    with pytest.raises(ToolDefinitionError, match="two tools are named 'add'"):
        ToolRegistry([add, add])
    with pytest.raises(ToolDefinitionError, match="unknown tools: nope"):
        ToolRegistry([add], side_effect_tools={"nope"})


def test_registry_marks_side_effect_tools():
    registry = ToolRegistry([add, Tool(search)], side_effect_tools={"search"})
    assert list(registry) == ["add", "search"]
    assert registry["search"].side_effects and not registry["add"].side_effects


# ------------------------------------------------------------------ checking parameters


def test_check_parameters_names_every_problem():
    problems = Tool(add).check_parameters({"a": "many", "c": 1})
    assert problems == [
        "parameter 'a': Input should be a valid integer, unable to parse string as an "
        "integer (got 'many')",
        "unknown parameter 'c'; add takes: a, b",
    ]
    assert Tool(add).check_parameters({}) == ["missing required parameter 'a' of add"]
    assert Tool(add).check_parameters({"a": "3"}) == []


def test_references_are_not_type_checked_before_the_step_runs():
    tool = Tool(add)
    assert tool.check_parameters({"a": "$s1"}, known_steps={"s1"}) == []
    assert tool.check_parameters({"a": "${s1}"}) == []
    assert tool.check_parameters({"a": "$s1"}) != []  # not a step: just a bad string


def test_a_resolved_value_that_looks_like_a_reference_is_checked_as_text_when_called():
    # After substitution a tool's output may hold "${...}" text; binding
    # checks it like any value and names the parameter (it used to skip the
    # check and let pydantic's own message out).
    with pytest.raises(ValueError, match=r"^add: parameter 'a': Input should be a valid integer"):
        Tool(add).bind({"a": "${s1}"})
    assert Tool(add).bind({"a": "3", "b": 4}) == {"a": 3, "b": 4}


def test_extra_keywords_are_accepted_only_by_tools_that_take_them():
    assert Tool(search).check_parameters({"query": {"text": "x"}, "lang": "en"}) == []


# ------------------------------------------------------------------ calling


def test_call_coerces_arguments_and_awaits_async_tools():
    assert asyncio.run(Tool(add).call({"a": "2", "b": 3})) == 5
    out = asyncio.run(Tool(search).call({"query": {"text": "q"}, "lang": "en"}))
    assert out == "q/5//['lang']"


def test_call_with_bad_arguments_names_the_parameter():
    with pytest.raises(ValueError, match="parameter 'a'"):
        asyncio.run(Tool(add).call({"a": [1]}))


def test_sync_tools_run_in_a_worker_thread_so_the_loop_goes_on():
    released = threading.Event()

    def blocking() -> str:
        # Only returns if the event loop could run `release` meanwhile.
        assert released.wait(5)
        return "done"

    async def release() -> None:
        await asyncio.sleep(0)
        released.set()

    async def main() -> str:
        result, _ = await asyncio.gather(Tool(blocking).call({}), release())
        return result

    assert asyncio.run(main()) == "done"


def test_step_context_counts_tokens_and_collects_new_information():
    ctx = StepContext(step=PlanStep(id="s", action="t"), goal="g", results={})
    ctx.report_tokens(5)
    ctx.report_new_information("the API moved")
    assert ctx.token_usage.total_tokens == 5
    assert ctx.new_information == ["the API moved"]
    with pytest.raises(RuntimeError, match="no execution model"):
        asyncio.run(ctx.complete([{"role": "user", "content": "x"}]))


# ------------------------------------------------------------------ references


def test_whole_value_references_keep_the_result_type():
    results = {"s1": {"rows": [1, 2]}, "s2": 7}
    params = {"a": "$s1", "b": "${s2}", "c": ["$s2", {"d": "${ s1 }"}]}
    assert substitute(params, results, known={"s1", "s2"}) == {
        "a": {"rows": [1, 2]},
        "b": 7,
        "c": [7, {"d": {"rows": [1, 2]}}],
    }


def test_references_inside_text_become_text():
    results = {"fetch": "page text", "count": 3, "data": {"k": "v"}}
    out = substitute(
        {"q": "Summarize $fetch (${count} items, ${data})"}, results, known=set(results)
    )
    assert out == {"q": 'Summarize page text (3 items, {"k": "v"})'}


def test_bare_references_match_the_longest_known_id_and_leave_other_dollars_alone():
    results = {"s1": "A", "s1-b": "B"}
    known = {"s1", "s1-b"}
    assert substitute("$s1-b|$s1-c|$s1.txt|$s10|$5", results, known) == "B|A-c|A.txt|$s10|$5"


def test_missing_results_become_none_or_empty_text():
    assert substitute({"a": "$s1", "b": "x${s1}y"}, {}, known={"s1"}) == {"a": None, "b": "xy"}


def test_find_and_rename_references():
    params = {"a": ["$s1 and ${s9}"], "b": "$s2", "c": 5}
    assert find_references(params, known={"s1", "s2"}) == {"s1", "s2", "s9"}
    renamed = rename_reference(params, "s1", "r1", known={"s1", "s2"})
    assert renamed == {"a": ["${r1} and ${s9}"], "b": "$s2", "c": 5}
    assert params["a"] == ["$s1 and ${s9}"]  # the input is unchanged
