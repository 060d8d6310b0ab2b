"""One spec per verify type: a type added in one place is checked, judged,
rendered, drawn and in the schema, and the docs table is the registry's."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import get_args

import pytest

from waygraph.check import check_plan
from waygraph.draw import predicate_label, to_mermaid
from waygraph.draw.svg import to_svg
from waygraph.formats.schema import library_schema
from waygraph.library import Library
from waygraph.model import BUILTIN_VERIFY_TYPES, Graph, Plan, Verify, register_verify_type
from waygraph.navigator import Navigator
from waygraph.verify import Observation, check, evaluate, judge_for, register, unregister
from waygraph.verify_types import (
    BUILTIN_VERIFY_SPECS,
    VERIFY_TYPES,
    Report,
    VerifySpec,
    docs_table,
)
from waygraph.verify_types._verdicts import Source

DOCS = Path(__file__).resolve().parents[1] / "docs" / "plans.md"


def _check_count(verify: Verify, report: Report) -> None:
    if not isinstance(verify.value, int) or isinstance(verify.value, bool):
        report("verify-needs-value", "tests_passed needs the number of tests as `value`", "value")


TESTS_PASSED = VerifySpec(
    "tests_passed",
    judge=lambda verify, obs, ctx: f"{verify.value} passed" in obs.output,
    summary="the test runner reports `value` tests passed",
    describe=lambda verify: f"the test run must report {verify.value} passed",
    label=lambda verify: f"{verify.value} tests pass",
    validate=_check_count,
    reads_output=True,
    example={"type": "tests_passed", "value": 12},
)


@pytest.fixture
def tests_passed() -> Iterator[VerifySpec]:
    VERIFY_TYPES.add(TESTS_PASSED)
    yield TESTS_PASSED
    VERIFY_TYPES.remove("tests_passed")


def _plan(value: object = 3) -> Plan:
    check_spec = {"type": "tests_passed", "value": value}
    return (
        Graph.builder()
        .task("test", name="Test", action="Run the tests", verify=check_spec)
        .decision("judge")
        .exit("done")
        .escalate("stuck", reason="tests fail")
        .edge("start", "test")
        .edge("test", "judge", "on_success")
        .edge("judge", "done", when=check_spec)
        .edge("judge", "stuck")
        .plan("tested", triggers=["run the tests"], trigger_threshold=1)
    )


def test_a_type_added_in_a_test_module_is_loaded_and_checked(tests_passed):
    assert [p.code for p in check_plan(_plan())] == []
    problems = check_plan(_plan(value="three"))
    assert {(p.code, p.node, p.field) for p in problems} >= {
        ("verify-needs-value", "test", "verify.value")
    }
    assert any(p.field == "when.value" for p in problems)


def test_a_type_added_in_a_test_module_is_judged_with_the_evidence_rules(tests_passed):
    verify = Verify(type="tests_passed", value=3)
    assert check(verify, Observation(output="3 passed in 0.1s")) is True
    assert check(verify, Observation(output="1 failed, 2 passed")) is False
    # Who may pass a step holds for it with no word of its own.
    for source in ("model", "human"):
        assert evaluate(verify, Observation(output="3 passed", source=source)).outcome == "unknown"
    never_ran = Observation(output="bash: pytest: command not found", exit_code=127)
    assert evaluate(verify, never_ran).outcome == "fail"
    bound = verify.model_copy(update={"command_matches": "pytest"})
    assert judge_for(Observation(output="3 passed", command="echo 3 passed"))(bound).passed is None
    assert judge_for(Observation(output="3 passed", command="pytest -q"))(bound).passed is True


def test_a_type_added_in_a_test_module_is_rendered_and_drawn(tests_passed):
    plan = _plan()
    nav = Navigator(Library([plan]), store="memory://")
    guidance = nav.turn("s", user_message="please run the tests").text or ""
    assert "the test run must report 3 passed" in guidance
    wrong = nav.turn("s", tool_output="2 passed in 0.2s", exit_code=0).run or {}
    assert wrong["visited"]["test"]["outcome"] == "fail"
    done = nav.turn("s", tool_output="3 passed in 0.2s", exit_code=0).run or {}
    assert done["status"] == "completed"
    assert predicate_label(Verify(type="not", checks=(Verify(type="tests_passed", value=3),))) == (
        "not (3 tests pass)"
    )
    assert "when 3 tests pass" in to_mermaid(plan)
    assert "verify: 3 tests pass" in to_svg(plan)


def test_a_type_added_in_a_test_module_is_in_the_schema(tests_passed):
    enum = library_schema()["$defs"]["Verify"]["properties"]["type"]["enum"]
    assert enum == [*BUILTIN_VERIFY_TYPES, "tests_passed"]
    assert "tests_passed" not in library_schema_after_removal()


def library_schema_after_removal() -> list[str]:
    VERIFY_TYPES.remove("tests_passed")
    try:
        return list(library_schema()["$defs"]["Verify"]["properties"]["type"]["enum"])
    finally:
        VERIFY_TYPES.add(TESTS_PASSED)


def test_the_docs_verify_table_is_the_registry():
    text = DOCS.read_text(encoding="utf-8")
    assert docs_table() in text, "regenerate docs/plans.md's table with verify_types.docs_table()"
    rows = re.findall(r"^\| `(\w+)` \|", text.split("## Verify: checks and predicates")[1], re.M)
    assert rows[: len(BUILTIN_VERIFY_SPECS)] == [spec.name for spec in BUILTIN_VERIFY_SPECS]


def test_every_built_in_is_one_whole_spec():
    assert list(BUILTIN_VERIFY_TYPES) == [spec.name for spec in BUILTIN_VERIFY_SPECS]
    assert VERIFY_TYPES.names()[: len(BUILTIN_VERIFY_SPECS)] == tuple(BUILTIN_VERIFY_TYPES)
    for spec in BUILTIN_VERIFY_SPECS:
        example = Verify.model_validate(spec.example or {"type": spec.name})
        assert spec.summary and spec.describe(example) and spec.label(example), spec.name
        assert "custom check" not in spec.describe(example), spec.name
        assert spec.sources <= set(get_args(Source)) - {"model"}, spec.name
        assert VERIFY_TYPES[spec.name] is spec
    # Only a person passes manual; a person's words pass nothing else but the logic around it.
    human = {spec.name for spec in BUILTIN_VERIFY_SPECS if "human" in spec.sources}
    assert human == {"manual", "all", "any", "not"}


def test_a_built_in_cannot_be_removed_but_takes_a_new_judge():
    with pytest.raises(ValueError, match="built-in"):
        VERIFY_TYPES.remove("regex")
    original = VERIFY_TYPES["any_output"]
    try:
        register("any_output", lambda verify, obs, ctx: obs.output == "yes")
        assert check(Verify(type="any_output"), Observation(output="no")) is False
        # The spec keeps its words and label; only the judge changed.
        assert VERIFY_TYPES["any_output"].label(Verify(type="any_output")) == "any output"
        with pytest.raises(ValueError, match="built-in"):
            unregister("any_output")
    finally:
        VERIFY_TYPES.add(original, builtin=True)
    assert check(Verify(type="any_output"), Observation(output="no")) is True


def test_a_type_allowed_by_name_only_fails_until_it_has_a_judge():
    register_verify_type("signed_off")
    try:
        verdict = evaluate(Verify(type="signed_off"), Observation(output="ok"))
        assert verdict.outcome == "fail" and "no verifier" in (verdict.reason or "")
        register("signed_off", lambda verify, obs, ctx: "signed" in obs.output)
        assert check(Verify(type="signed_off"), Observation(output="signed")) is True
    finally:
        unregister("signed_off")
    with pytest.raises(ValueError, match="unknown verify type 'signed_off'"):
        Verify(type="signed_off")


def test_a_type_only_people_pass_takes_their_words_only_and_asks_for_them():
    signed_off = VerifySpec(
        "signed_off",
        judge=lambda verify, obs, ctx: "signed" in obs.output.lower(),
        sources=frozenset({"human"}),
        ask=lambda verify: "ask the user to sign the release off, then wait",
        describe=lambda verify: "a person signs the release off",
    )
    VERIFY_TYPES.add(signed_off)
    try:
        verify = Verify(type="signed_off")
        tool = evaluate(verify, Observation(output="signed", source="tool"))
        assert (tool.outcome, tool.reason) == (
            "unknown",
            "ask the user to sign the release off, then wait",
        )
        assert evaluate(verify, Observation(output="signed", source="model")).outcome == "unknown"
        assert evaluate(verify, Observation(output="Signed.", source="human")).outcome == "success"
        plan = (
            Graph.builder()
            .task("release", action="Release", verify={"type": "signed_off"})
            .exit("done")
            .chain("start", "release", "done")
            .plan("release", triggers=["release it"], trigger_threshold=1)
        )
        text = Navigator(Library([plan]), store="memory://").turn("s", user_message="release it")
        assert "Ask the user: ask the user to sign the release off, then wait." in (text.text or "")
    finally:
        VERIFY_TYPES.remove("signed_off")
