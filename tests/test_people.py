"""A person as a source of evidence (issue 32): human nodes, manual checks, questions, answers."""

from __future__ import annotations

import pytest

from waygraph import AsyncNavigator, Hooks, Navigator, engine
from waygraph.errors import InputError, NotWaitingError
from waygraph.guided.turns import MAX_MESSAGE_CHARS
from waygraph.library import Library
from waygraph.model import Graph, Plan
from waygraph.verify_types.people import choice_of, is_refusal


def approval() -> Plan:
    return (
        Graph.builder()
        .human("ok", prompt="Deploy to production?")
        .task("deploy", verify={"type": "exit_code_zero"})
        .exit("done")
        .exit("stop", status="aborted", reason="the person said no")
        .edge("start", "ok")
        .edge("ok", "deploy", label="[Y] Yes")
        .edge("ok", "stop", label="[N] No")
        .edge("deploy", "done", "on_success")
        .plan("approval")
    )


def review(value: str | None = "CONFIRMED") -> Plan:
    check = {"type": "manual", **({"value": value} if value else {})}
    return (
        Graph.builder()
        .task("review", action="Show the diff to the user", verify=check)
        .exit("done")
        .chain("start", "review", "done")
        .plan("review")
    )


def asking() -> Plan:
    return (
        Graph.builder()
        .task("pick", verify={"type": "output_contains", "value": "PASS"})
        .exit("done")
        .chain("start", "pick", "done")
        .plan("asking")
    )


def nav_for(plan: Plan, *, strict: bool = False) -> Navigator:
    nav = Navigator(Library([plan]), store="memory://", strict=strict)
    nav.start("s", plan.id)
    return nav


# ---------------------------------------------------------------- choices


@pytest.mark.parametrize(
    ("answer", "expected"),
    [("y", 0), ("Y", 0), ("yes", 0), ("Yes.", 0), ("[Y] Yes", 0), ("n", 1), ("No!", 1)],
)
def test_an_answer_picks_a_label_its_words_or_its_accelerator(answer: str, expected: int):
    assert choice_of(["[Y] Yes", "[N] No"], answer) == expected


@pytest.mark.parametrize("answer", ["maybe", "", "   ", "yes please", "ye"])
def test_any_other_answer_picks_nothing(answer: str):
    assert choice_of(["[Y] Yes", "[N] No"], answer) is None


def test_a_whole_label_wins_over_another_labels_accelerator():
    assert choice_of(["[A] Approve", "a"], "a") == 1


@pytest.mark.parametrize("answer", ["no", "No.", "nope", "not yet", "don't", "reject", "cancel"])
def test_refusals(answer: str):
    assert is_refusal(answer)


@pytest.mark.parametrize("answer", ["yes", "looks good", "note: fine", "nothing to add, ship it"])
def test_not_refusals(answer: str):
    assert not is_refusal(answer)


# ---------------------------------------------------------------- human nodes


def test_a_human_node_waits_and_tells_the_model_to_ask():
    g = nav_for(approval()).context("s")
    assert g is not None
    assert "Ask the user: Deploy to production?" in g
    assert "'[Y] Yes' or '[N] No'" in g
    # The closing line agrees: ask and wait, no tool call.
    assert g.splitlines()[-1].endswith("tool results and your words never do.")


def test_a_tool_result_naming_a_choice_is_only_recorded():
    nav = nav_for(approval())
    g = nav.turn("s", tool_output="Yes", exit_code=0, tool_args="echo Yes")
    assert g.run["current_node"] == "ok" and g.run["awaiting"] == "user"
    assert [e.type for e in g.events] == ["result_ignored"]
    assert "tool results do not count here" in (g.text or "")


def test_the_users_message_picks_a_choice():
    nav = nav_for(approval())
    g = nav.turn("s", user_message="n")
    assert g.run["status"] == "aborted" and g.run["awaiting"] is None
    answered = [e for e in g.events if e.type == "human_answered"]
    assert answered[0]["choice"] == "[N] No" and answered[0]["to"] == "stop"


def test_answer_follows_the_choice_and_keeps_who_answered():
    nav = nav_for(approval())
    g = nav.answer("s", "Y", by="ann@example.com")
    assert g.error is None and g.run["current_node"] == "deploy"
    event = next(e for e in g.events if e.type == "human_answered")
    assert event["by"] == "ann@example.com" and event["answer"] == "Y"
    assert "The user decided at ok" in (g.text or "")


def test_an_answer_that_is_no_choice_changes_nothing_but_says_the_choices():
    nav = nav_for(approval())
    g = nav.answer("s", "maybe later")
    assert g.error == "'maybe later' is not one of the choices: answer '[Y] Yes' or '[N] No'"
    assert g.run["current_node"] == "ok" and g.run["awaiting"] == "user"
    assert [e.type for e in g.events] == ["answer_rejected"]


# ---------------------------------------------------------------- manual checks


def test_a_manual_check_never_passes_on_tool_output_or_the_models_words():
    nav = nav_for(review())
    g = nav.turn("s", tool_output="CONFIRMED", exit_code=0, tool_args="echo CONFIRMED")
    assert g.run["current_node"] == "review"
    assert "ask the user to reply 'CONFIRMED'" in (g.text or "")
    g = nav.turn("s", tool_output="CONFIRMED", source="model", final=True)
    assert g.run["status"] == "running"
    g = nav.turn("s", tool_output="CONFIRMED", source="host")
    assert g.run["status"] == "running"


def test_a_manual_check_passes_on_the_persons_words():
    nav = nav_for(review())
    assert nav.turn("s", user_message="Confirmed, go ahead").run["status"] == "completed"


def test_a_manual_check_through_answer_and_a_refusal():
    nav = nav_for(review(), strict=True)
    g = nav.answer("s", "no, not like this")
    assert g.run["status"] == "running" and g.run["visited"]["review"]["outcome"] == "fail"
    assert nav.answer("s", "what is this about?").run["awaiting"] == "user"
    assert nav.answer("s", "ok, CONFIRMED").run["status"] == "completed"


def test_a_manual_check_without_a_value_passes_on_any_answer_but_a_refusal():
    nav = nav_for(review(None))
    assert nav.turn("s", user_message="nope").run["status"] == "running"
    assert nav.turn("s", user_message="looks right to me").run["status"] == "completed"


# ---------------------------------------------------------------- questions


def test_a_question_waits_for_the_user_and_the_answer_clears_it():
    nav = nav_for(asking())
    g = nav.turn("s", tool_output="Which version should I use?", source="model", final=True)
    assert [e.type for e in g.events] == ["question_asked"]
    assert g.run["awaiting"] == "user"
    assert "You told the user the work is done" not in (g.text or "")
    assert "wait for their answer" in (g.text or "")
    g = nav.turn("s", user_message="the 2.x line")
    assert g.run["awaiting"] is None and g.run["current_node"] == "pick"
    assert "You asked the user a question" not in (g.text or "")


def test_asks_user_overrides_the_question_mark_both_ways():
    nav = nav_for(asking())
    g = nav.turn("s", tool_output="All done?", source="model", final=True, asks_user=False)
    assert "claim_unverified" in [e.type for e in g.events]
    g = nav.turn(
        "s", tool_output="Tell me the version.", source="model", final=True, asks_user=True
    )
    assert [e.type for e in g.events] == ["question_asked"]


def test_the_model_going_on_after_a_question_ends_the_wait():
    nav = nav_for(asking())
    nav.turn("s", tool_output="Shall I use 2.x?", source="model", final=True)
    g = nav.turn("s", tool_output="nope", exit_code=1)
    assert g.run["awaiting"] is None


def test_hooks_and_async_navigator_take_answers():
    nav = Navigator(Library([approval()]), store="memory://")
    nav.start("s", "approval")
    assert Hooks("s", navigator=nav).answer("y").run["current_node"] == "deploy"

    import asyncio

    async def main() -> str:
        anav = AsyncNavigator(Library([approval()]), store="memory://")
        await anav.start("t", "approval")
        g = await anav.answer("t", "n", by="bob")
        await anav.close()
        return str(g.run["status"])

    assert asyncio.run(main()) == "aborted"


# ---------------------------------------------------------------- bad input


def test_an_answer_to_a_session_waiting_for_nobody_changes_nothing():
    nav = nav_for(asking())
    before = nav.state("s")
    g = nav.answer("s", "yes")
    assert g.run is None and "is not waiting for an answer" in (g.error or "")
    assert nav.state("s") == before
    strict = nav_for(asking(), strict=True)
    with pytest.raises(NotWaitingError, match="not waiting"):
        strict.answer("s", "yes")
    with pytest.raises(NotWaitingError):
        strict.answer("nobody", "yes")


@pytest.mark.parametrize(("answer", "by"), [("", None), ("  ", None), (3, None), ("y", 7)])
def test_answers_no_session_can_take_are_input_errors(answer: object, by: object):
    nav = nav_for(approval(), strict=True)
    with pytest.raises(InputError):
        nav.answer("s", answer, by=by)  # type: ignore[arg-type]
    assert nav.state("s")["awaiting"] == "user"


def test_answers_are_size_limited_like_user_messages():
    nav = nav_for(review(), strict=True)
    g = nav.answer("s", "x" * (MAX_MESSAGE_CHARS + 10) + " CONFIRMED")
    # Read on its first MAX_MESSAGE_CHARS characters: the word past them is not seen.
    assert g.run["status"] == "running"


def test_a_run_that_ends_waits_for_nobody():
    plan = approval()
    run, _ = engine.start(plan, run_id="r", turn=1)
    assert run.awaiting == "user"
    aborted, _ = engine.abort(plan, run, turn=2, reason="reset")
    assert aborted.status == "aborted" and aborted.awaiting is None
    stale = approval().model_copy(update={"stale_after_turns": 1})
    nav = nav_for(stale)
    for _ in range(3):
        g = nav.turn("s", tool_output="still deciding", exit_code=0)
    assert g.run["status"] == "expired" and g.run["awaiting"] is None


def test_a_final_reply_at_a_step_a_person_passes_hands_over_not_claims():
    nav = nav_for(review())
    g = nav.turn("s", tool_output="Reply CONFIRMED to go ahead.", source="model", final=True)
    assert [e.type for e in g.events] == ["question_asked"]
    assert g.run["awaiting"] == "user" and g.run["current_node"] == "review"


def test_a_users_message_that_is_no_choice_gets_the_choices_as_error():
    g = nav_for(approval()).turn("s", user_message="maybe")
    assert g.error == "'maybe' is not one of the choices: answer '[Y] Yes' or '[N] No'"
    assert g.run["current_node"] == "ok"
