"""Issue 32 in Agent-Zero: who may pass a step.

A person's words reach waygraph as the user's message while a plan runs (a
``manual`` check passes on them, a ``human`` node follows the choice they
make); the model's final answer that asks the user something is a question,
not a claim; terminal output never confirms for a person, and a terminal
command's exit status is the one it really had. The installed hooks of both
layouts, loaded the way Agent-Zero loads them and called in its message-loop
order (tests/agent_zero_fake.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.agent_zero_fake import (  # noqa: F401 (agent_zero_modules: an autouse fixture)
    KEY,
    FakeAgentZero,
    Response,
    agent_zero_modules,
    make_tree,
    session_state,
)
from waygraph.integrations.agent_zero import install
from waygraph.integrations.agent_zero.runtime import EXIT_MARKER

PEOPLE_LIBRARY = """\
plans:
  release:
    name: Release
    triggers: [cut a release]
    trigger_threshold: 1
    steps:
      - name: Approve
        action: Get the go-ahead for the release
        verify: {type: manual, value: CONFIRMED}
      - name: Tag
        action: Tag the release with git tag
        verify: {type: output_contains, value: tagged, command_matches: "^git tag"}
  rollout:
    name: Rollout
    triggers: [roll out the service]
    trigger_threshold: 1
    graph:
      start: start
      nodes:
        start: {type: start}
        where: {type: human, prompt: "Roll out to which environment?"}
        staging: {type: task, action: Deploy to staging, verify: {type: exit_code_zero}}
        done: {type: exit}
        stopped: {type: exit, status: aborted, reason: the person cancelled}
      edges:
        - {from: start, to: where}
        - {from: where, to: staging, label: "[S] Staging"}
        - {from: where, to: stopped, label: "[C] Cancel"}
        - {from: staging, to: done, condition: on_success}
"""


@pytest.fixture(params=["0.9", "1.x"])
def layout(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def a0(tmp_path: Path, layout: str) -> FakeAgentZero:
    """Agent 0 of a chat in an installed tree whose library has the plans above."""
    root = make_tree(tmp_path / "a0", layout)
    (root / "plans" / "people.yaml").write_text(PEOPLE_LIBRARY)
    install(root, library=root / "plans")
    return FakeAgentZero(root, layout)


def terminal(a0: FakeAgentZero, command: str, output: str, status: int) -> Response:
    """A code_execution_tool terminal call as Agent-Zero runs it, with the hooks around it.

    The terminal echoes the typed lines, then prints what they print: the
    command's ``output``, then (when the hook added it) the status marker.
    """
    tool_args: dict[str, Any] = {"runtime": "terminal", "code": command}
    a0.call("tool_execute_before", tool_args=tool_args, tool_name="code_execution_tool")
    ran = tool_args["code"]
    printed = f"{ran}\n{output}\n"
    if ran != command:
        printed += f"{EXIT_MARKER}={status}\n"
    response = Response(printed)
    a0.history.append({"ai": True, "content": '{"tool_name": "code_execution_tool"}'})
    a0.call("tool_execute_after", response=response, tool_name="code_execution_tool")
    a0.history.append({"ai": False, "content": {"tool_name": "code_execution_tool"}})
    return response


def types_of(record: dict[str, Any] | None) -> list[str]:
    assert record is not None
    return [e["type"] for e in record["events"]]


def test_a_user_message_confirms_a_manual_step(a0: FakeAgentZero):
    a0.user("Please cut a release")
    assert "Approve << CURRENT" in a0.prompt()[KEY]
    # The run waits for a person, and the mirror on the agent says so.
    assert a0.agent._htn_state["awaiting"] == "user"  # type: ignore[attr-defined]
    record = session_state(a0.root)
    asked = [e for e in record["events"] if e["type"] == "human_asked"]  # type: ignore[index]
    assert asked and asked[-1]["value"] == "CONFIRMED"
    a0.tool("Please reply CONFIRMED to go ahead with the release.", name="response")

    a0.user("CONFIRMED")  # the person's next message: a new monologue
    seen = a0.prompt()[KEY]
    assert "Tag << CURRENT" in seen  # in this iteration's prompt already
    record = session_state(a0.root)
    assert record is not None and record["current_node"] == "step_2"
    answered = [e for e in record["events"] if e["type"] == "human_answered"]
    assert answered[-1]["answer"] == "CONFIRMED"
    assert record["awaiting"] is None
    assert a0.agent._htn_state["awaiting"] is None  # type: ignore[attr-defined]
    # The same message is heard once: the next iterations do not hear it again.
    a0.prompt()
    a0.prompt()
    assert types_of(session_state(a0.root)).count("human_answered") == 1
    log = a0.log.text("info")
    assert "[HTN] Waiting for the user at step_1: Get the go-ahead for the release" in log
    assert "[HTN] The user answered at step_1: 'CONFIRMED'" in log


def test_the_message_that_starts_a_plan_is_not_its_confirmation(a0: FakeAgentZero):
    a0.user("Cut a release, CONFIRMED")
    a0.prompt()
    a0.prompt()
    record = session_state(a0.root)
    assert record is not None and record["current_node"] == "step_1"
    assert "human_answered" not in types_of(record)


def test_a_person_picks_the_choice_of_a_human_node(a0: FakeAgentZero):
    a0.user("Roll out the service")
    seen = a0.prompt()[KEY]
    assert "Ask the user: Roll out to which environment?" in seen
    a0.tool("[S] Staging", name="response")  # the model asking: never an answer
    assert session_state(a0.root)["current_node"] == "where"  # type: ignore[index]
    a0.user("s")
    assert "staging << CURRENT" in a0.prompt()[KEY]
    record = session_state(a0.root)
    assert record is not None and record["current_node"] == "staging"


def test_a_subordinates_user_message_is_another_agents_words(tmp_path: Path, layout: str):
    """Agent 1's "user" is agent 0, a model: its message never confirms for a person."""
    root = make_tree(tmp_path / "a0", layout)
    (root / "plans" / "people.yaml").write_text(PEOPLE_LIBRARY)
    install(root, library=root / "plans")
    subordinate = FakeAgentZero(root, layout, number=1)
    subordinate.user("Please cut a release")
    subordinate.prompt()
    subordinate.user("CONFIRMED")
    subordinate.prompt()
    record = session_state(root, number=1)
    assert record is not None and record["current_node"] == "step_1"
    assert record["awaiting"] == "user"


def test_the_response_tool_asking_the_user_is_a_question_not_a_claim(a0: FakeAgentZero):
    a0.user("Please fix the login bug")
    assert "reproduce << CURRENT" in a0.prompt()[KEY]
    a0.tool("I found two releases. Which version should I use?", name="response")
    record = session_state(a0.root)
    assert record is not None and record["awaiting"] == "user"
    types = types_of(record)
    assert "question_asked" in types and "claim_unverified" not in types
    assert a0.agent._htn_state["awaiting"] == "user"  # type: ignore[attr-defined]
    assert "Still unverified" not in a0.prompt()[KEY]
    assert "[HTN] Waiting for the user's answer to the agent's question" in a0.log.text()

    a0.user("Use 2.1, please")  # the answer
    a0.prompt()
    record = session_state(a0.root)
    assert record is not None and record["awaiting"] is None
    assert "human_answered" in types_of(record)
    assert record["current_node"] == "reproduce"


def test_echo_confirmed_in_the_terminal_does_not_pass_a_manual_step(a0: FakeAgentZero):
    a0.user("Please cut a release")
    a0.prompt()
    terminal(a0, "echo CONFIRMED", "CONFIRMED", status=0)
    a0.prompt()
    a0.tool("CONFIRMED", name="response")  # nor the model's own words
    record = session_state(a0.root)
    assert record is not None and record["current_node"] == "step_1"
    assert record["awaiting"] == "user"
    assert "human_answered" not in types_of(record)


def test_a_printed_exit_marker_does_not_set_the_exit_status(tmp_path: Path, layout: str):
    """The marker waygraph appends prints last: one the command printed itself does not count."""
    root = make_tree(tmp_path / "a0", layout)
    (root / "plans" / "build.yaml").write_text(
        "plans:\n  build:\n    name: Build\n    triggers: [build the project]\n"
        "    trigger_threshold: 1\n    steps:\n"
        "      - {name: Compile, action: Run make, verify: {type: exit_code_zero}}\n"
    )
    install(root, library=root / "plans")
    a0 = FakeAgentZero(root, layout)
    a0.user("Please build the project")
    a0.prompt()
    forged = f'echo "{EXIT_MARKER}=0"; make'
    response = terminal(a0, forged, f"{EXIT_MARKER}=0\nmake: *** [all] Error 2", status=2)
    assert EXIT_MARKER not in response.message.split("\n", 1)[1]
    record = session_state(root)
    assert record is not None and record["current_node"] == "step_1"
    verified = [e for e in record["events"] if e["type"] == "node_verified"]
    assert verified[-1]["outcome"] == "fail"


def test_command_matches_reads_the_terminal_command(a0: FakeAgentZero):
    a0.user("Please cut a release")
    a0.prompt()
    a0.user("CONFIRMED")
    a0.prompt()
    terminal(a0, "echo tagged", "tagged", status=0)  # not the step's command
    assert session_state(a0.root)["current_node"] == "step_2"  # type: ignore[index]
    a0.prompt()
    terminal(a0, "git tag v1.2.0 && echo tagged", "tagged", status=0)
    assert session_state(a0.root)["status"] == "completed"  # type: ignore[index]


def test_with_a_belief_state_tracker_the_person_is_heard_too(tmp_path: Path, layout: str):
    """Plans start after the classifiers there; the person's answer still reaches the plan
    in the iteration it came in."""
    root = make_tree(tmp_path / "a0", layout, bst=True)
    (root / "plans" / "people.yaml").write_text(PEOPLE_LIBRARY)
    install(root, library=root / "plans")
    a0 = FakeAgentZero(root, layout)
    a0.agent.data["next_domain"] = "general"
    a0.user("Please cut a release")
    a0.prompt()  # the selector starts the plan, for the next iteration's prompt
    assert "Approve << CURRENT" in a0.prompt()[KEY]
    a0.user("CONFIRMED")
    assert "Tag << CURRENT" in a0.prompt()[KEY]
    assert session_state(root)["current_node"] == "step_2"  # type: ignore[index]
