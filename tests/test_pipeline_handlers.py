"""The node handlers (specification §4, §11.6): codergen, human gates, tools, custom ones."""

from __future__ import annotations

import json

import pytest

from tests.pipeline_helpers import LINEAR, Scripted, plan_of, run, status
from waygraph.model import Node
from waygraph.pipelines.context import Context, InterviewCompleted, InterviewStarted
from waygraph.pipelines.handlers import (
    NEEDS_ALLOW_COMMANDS,
    CodergenHandler,
    HandlerRegistry,
    StartHandler,
    WaitForHumanHandler,
    default_handlers,
    human_choices,
)
from waygraph.pipelines.interviewers import (
    Answer,
    AnswerValue,
    AutoApproveInterviewer,
    CallbackInterviewer,
    QueueInterviewer,
    RecordingInterviewer,
)
from waygraph.pipelines.outcome import Outcome
from waygraph.sandbox import landlock

# ---------------------------------------------------------------- codergen


def test_codergen_writes_prompt_response_and_status_through_a_backend(tmp_path):
    backend = Scripted({"plan": ["x" * 500]})
    result = run(LINEAR, tmp_path, backend=backend)
    assert backend.prompts["plan"] == "Plan: Ship it"
    assert (tmp_path / "plan" / "response.md").read_text() == "x" * 500
    assert result.context["last_stage"] == "build"
    saved = json.loads((tmp_path / "plan" / "status.json").read_text())
    assert saved == {
        "outcome": "success",
        "notes": "Stage completed: plan",
        "context_updates": {"last_stage": "plan", "last_response": "x" * 200},
    }


def test_codergen_backend_outcome_is_the_stage_outcome(tmp_path):
    backend = Scripted({"plan": [status("fail", failure_reason="no plan")]})
    result = run(LINEAR, tmp_path, backend=backend)
    assert result.status == "fail" and result.outcome.failure_reason == "no plan"
    assert json.loads((tmp_path / "plan" / "status.json").read_text())["outcome"] == "fail"
    assert not (tmp_path / "plan" / "response.md").exists()


def test_a_status_file_the_agent_wrote_wins(tmp_path):
    class WritesStatus:
        def run(self, node, prompt, context):
            folder = tmp_path / node.id
            (folder / "status.json").write_text(
                json.dumps({"outcome": "FAIL", "failure_reason": "agent says tests fail"})
            )
            return "all good, honest"

    result = run(LINEAR, tmp_path, backend=WritesStatus())
    assert result.status == "fail"
    assert result.outcome.failure_reason == "agent says tests fail"
    assert result.path == ("start", "plan")


def test_auto_status_turns_a_handler_that_wrote_no_status_into_success(tmp_path):
    class Silent:
        def execute(self, node, context, plan, logs_root):
            return Outcome(status="fail", failure_reason="no status written")

    dot = """digraph a { start [shape=Mdiamond]; done [shape=Msquare]
        quiet [type=quiet, auto_status=true]; start -> quiet -> done }"""
    result = run(dot, tmp_path, handlers={"quiet": Silent()})
    assert result.status == "success" and result.path[-1] == "done"
    saved = json.loads((tmp_path / "quiet" / "status.json").read_text())
    assert saved["notes"] == "auto-status: handler completed without writing status"


def test_the_stylesheet_model_reaches_the_backend_through_the_node(tmp_path):
    dot = """digraph s { model_stylesheet="* { llm_model: small; } #build { llm_model: big; }"
        start [shape=Mdiamond]; done [shape=Msquare]; plan; build
        start -> plan -> build -> done }"""
    models: dict[str, str] = {}

    class Models:
        def run(self, node, prompt, context):
            models[node.id] = (node.attrs or {}).get("llm_model", "")
            return "ok"

    run(dot, tmp_path, backend=Models())
    assert models == {"plan": "small", "build": "big"}


# ---------------------------------------------------------------- human gates

GATE = """digraph gate {{ start [shape=Mdiamond]; done [shape=Msquare]
    review [shape=hexagon, label="Review the change"{extra}]
    ship; fix
    start -> review
    review -> ship [label="[S] Ship it", weight=1]
    review -> fix [label="[F] Fix first", weight=5]
    ship -> done; fix -> done }}"""


@pytest.mark.parametrize(
    ("interviewer", "taken"),
    [
        (QueueInterviewer(["f"]), "fix"),
        (QueueInterviewer(["Ship it"]), "ship"),
        (QueueInterviewer([Answer(value="S")]), "ship"),
        # The first choice is the first edge as written, whatever the weights.
        (AutoApproveInterviewer(), "ship"),
        (CallbackInterviewer(lambda q: Answer(value=q.options[1].key)), "fix"),
        # An answer that picks nothing falls back to the first choice (§4.6).
        (QueueInterviewer(["what?"]), "ship"),
    ],
)
def test_human_gate_routes_on_the_selection(tmp_path, interviewer, taken):
    result = run(GATE.format(extra=""), tmp_path, interviewer=interviewer)
    assert result.path == ("start", "review", taken, "done")
    label = {"ship": "[S] Ship it", "fix": "[F] Fix first"}[taken]
    assert result.context["human.gate.label"] == label
    assert result.context["human.gate.selected"] == label[1]


def test_human_gate_question_lists_choices_in_declaration_order(tmp_path):
    recorder = RecordingInterviewer(AutoApproveInterviewer())
    events: list[object] = []
    run(GATE.format(extra=""), tmp_path, interviewer=recorder, on_event=events.append)
    [(question, _answer)] = recorder.recordings
    assert question.text == "Review the change" and question.stage == "review"
    assert [(o.key, o.label) for o in question.options] == [
        ("S", "[S] Ship it"),
        ("F", "[F] Fix first"),
    ]
    asked = [e for e in events if isinstance(e, InterviewStarted | InterviewCompleted)]
    assert [type(e).__name__ for e in asked] == ["InterviewStarted", "InterviewCompleted"]


def test_a_skipped_question_fails_the_gate(tmp_path):
    result = run(GATE.format(extra=""), tmp_path, interviewer=QueueInterviewer([]))
    assert result.status == "fail"
    assert result.outcome.failure_reason == "human skipped interaction"


def test_a_timeout_takes_the_default_choice_or_retries(tmp_path):
    timeout = QueueInterviewer([Answer(value=AnswerValue.TIMEOUT)])
    dot = GATE.format(extra=', "human.default_choice"=fix')
    assert run(dot, tmp_path / "a", interviewer=timeout).path[2] == "fix"
    handler = WaitForHumanHandler(QueueInterviewer([Answer(value=AnswerValue.TIMEOUT)]))
    plan = plan_of(GATE.format(extra=""))
    outcome = handler.execute(plan.graph.nodes["review"], Context(), plan, tmp_path)
    assert outcome.status == "retry"


def test_a_gate_without_edges_fails(tmp_path):
    plan = plan_of("digraph g { start [shape=Mdiamond]; ask [shape=hexagon]; start -> ask }")
    outcome = WaitForHumanHandler().execute(plan.graph.nodes["ask"], Context(), plan, tmp_path)
    assert outcome.status == "fail"


def test_unlabelled_choices_are_their_targets():
    plan = plan_of("""digraph g { start [shape=Mdiamond]; ask [shape=hexagon]
        start -> ask; ask -> approve; ask -> reject }""")
    assert [(o.key, o.label, to) for o, to in human_choices(plan, "ask")] == [
        ("A", "approve", "approve"),
        ("R", "reject", "reject"),
    ]


# ---------------------------------------------------------------- tools

TOOL = """digraph t {{ start [shape=Mdiamond]; done [shape=Msquare]
    say [shape=parallelogram, tool_command="{command}", timeout=30s]
    start -> say
    say -> done [condition="outcome=success"]
    say -> failed [condition="outcome=fail"]
    failed -> done }}"""


def test_tool_nodes_do_not_run_commands_without_permission(tmp_path):
    marker = tmp_path / "ran"
    result = run(TOOL.format(command=f"touch {marker}"), tmp_path / "logs")
    assert result.path == ("start", "say", "failed", "done")
    saved = json.loads((tmp_path / "logs" / "say" / "status.json").read_text())
    assert saved["failure_reason"] == NEEDS_ALLOW_COMMANDS
    assert not marker.exists()


needs_landlock = pytest.mark.skipif(
    landlock.abi_version() < 1, reason="this kernel cannot confine commands (no Landlock)"
)


@needs_landlock
def test_tool_nodes_run_confined_commands_when_allowed(tmp_path):
    result = run(
        TOOL.format(command="echo hello pipeline"),
        tmp_path / "logs",
        allow_commands=True,
        workspace=tmp_path,
    )
    assert result.path == ("start", "say", "done")
    assert result.context["tool.output"] == "hello pipeline\n"
    assert result.context["tool.last_line"] == "hello pipeline"


@needs_landlock
def test_a_failing_or_escaping_command_fails_the_tool_node(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    failing = run(
        TOOL.format(command="exit 3"), tmp_path / "a", allow_commands=True, workspace=work
    )
    assert failing.path == ("start", "say", "failed", "done")
    assert failing.context["tool.exit_code"] == 3
    outside = tmp_path / "outside.txt"
    escaping = run(
        TOOL.format(command=f"touch {outside}"), tmp_path / "b", allow_commands=True, workspace=work
    )
    assert escaping.path[2] == "failed"
    assert not outside.exists()


# ---------------------------------------------------------------- registry and custom handlers


def test_custom_handlers_are_registered_by_type_name(tmp_path):
    class Deploy:
        def __init__(self):
            self.seen: list[str] = []

        def execute(self, node, context, plan, logs_root):
            self.seen.append((node.attrs or {}).get("region", ""))
            return Outcome(status="success", context_updates={"deployed": node.id})

    deploy = Deploy()
    dot = """digraph c { start [shape=Mdiamond]; done [shape=Msquare]
        ship [type=deploy, region=prod]; start -> ship -> done }"""
    result = run(dot, tmp_path, handlers={"deploy": deploy})
    assert deploy.seen == ["prod"]
    assert result.context["deployed"] == "ship"


def test_a_registry_passed_in_is_used_as_it_is(tmp_path):
    registry = default_handlers()

    class Loud:
        def execute(self, node, context, plan, logs_root):
            return Outcome(status="success", notes="loud", context_updates={"loud": node.id})

    registry.register("codergen", Loud())
    result = run(LINEAR, tmp_path, handlers=registry)
    assert result.context["loud"] == "build"
    assert not (tmp_path / "plan" / "prompt.md").exists()


def test_registry_resolution_falls_back_to_the_default():
    registry = HandlerRegistry({"start": StartHandler()}, default=CodergenHandler())
    assert isinstance(registry.resolve(Node(id="s", type="start")), StartHandler)
    assert isinstance(registry.resolve(Node(id="x", handler="nobody")), CodergenHandler)
    assert registry.get("nobody") is None


def test_with_a_backend_and_no_interviewer_gates_ask_on_the_console(tmp_path, monkeypatch):
    asked: list[str] = []
    monkeypatch.setattr("builtins.input", lambda prompt: asked.append(prompt) or "f")
    result = run(GATE.format(extra=""), tmp_path, backend=Scripted())
    assert result.path == ("start", "review", "fix", "done")
    assert asked == ["Select: "]
