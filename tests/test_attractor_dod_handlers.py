"""The specification's Definition of Done, §11.6-§11.10: one test per checkbox, in its order.

The first sections (§11.1-§11.5) are in ``test_attractor_dod.py``, the parity
matrix and smoke test (§11.12, §11.13) in ``test_attractor_dod_parity.py``.
Where waygraph does something else by a documented choice, the test asserts
what waygraph does and its docstring says so.
"""

from __future__ import annotations

import threading
import time

import pytest

from tests.pipeline_helpers import Scripted, ok, plan_of, run, status
from waygraph.model import Plan
from waygraph.pipelines.checkpoint import Checkpoint
from waygraph.pipelines.conditions import evaluate_condition
from waygraph.pipelines.context import Context
from waygraph.pipelines.handlers import (
    CodergenHandler,
    ConditionalHandler,
    ExitHandler,
    StartHandler,
    default_handlers,
)
from waygraph.pipelines.interviewers import (
    Answer,
    AutoApproveInterviewer,
    CallbackInterviewer,
    ConsoleInterviewer,
    Interviewer,
    Option,
    Question,
    QuestionType,
    QueueInterviewer,
)
from waygraph.pipelines.outcome import Outcome
from waygraph.pipelines.run_folder import load_checkpoint
from waygraph.pipelines.stylesheet import parse_stylesheet
from waygraph.sandbox import landlock

TWO = """digraph two { start [shape=Mdiamond]; done [shape=Msquare]
    a [prompt="A"]; b [prompt="B"]
    start -> a -> b -> done }"""


# ---------------------------------------------------------------- §11.6 node handlers


def test_11_6_start_handler(tmp_path):
    """**Start handler:** Returns SUCCESS immediately (no-op)."""
    plan = plan_of(TWO)
    context = Context({"x": 1})
    outcome = StartHandler().execute(plan.graph.nodes["start"], context, plan, tmp_path)
    assert outcome.status == "success" and context.snapshot() == {"x": 1}
    assert list(tmp_path.iterdir()) == []


def test_11_6_exit_handler(tmp_path):
    """**Exit handler:** Returns SUCCESS immediately (no-op, engine checks goal gates)."""
    plan = plan_of(TWO)
    outcome = ExitHandler().execute(plan.graph.nodes["done"], Context(), plan, tmp_path)
    assert outcome.status == "success" and list(tmp_path.iterdir()) == []


def test_11_6_codergen_handler(tmp_path):
    """**Codergen handler:** Expands `$goal` in prompt, calls `CodergenBackend.run()`,
    writes prompt.md and response.md to stage dir."""
    plan = Plan.model_validate(
        {"id": "p", "goal": "ship", "graph": {"nodes": {"a": {"prompt": "Do: $goal"}}}}
    )
    backend = Scripted({"a": ["Done it."]})
    outcome = CodergenHandler(backend).execute(plan.graph.nodes["a"], Context(), plan, tmp_path)
    assert backend.prompts == {"a": "Do: ship"}
    assert (tmp_path / "a" / "prompt.md").read_text() == "Do: ship"
    assert (tmp_path / "a" / "response.md").read_text() == "Done it."
    assert outcome.status == "success" and outcome.context_updates["last_response"] == "Done it."


HUMAN = """digraph h { start [shape=Mdiamond]; done [shape=Msquare]
    ask [shape=hexagon, label="Ship it?"]; ship [prompt=s]; fix [prompt=f]
    start -> ask; ask -> ship [label="[S] Ship"]; ask -> fix [label="[F] Fix"]
    ship -> done; fix -> done }"""


def test_11_6_wait_human_handler(tmp_path):
    """**Wait.human handler:** Presents outgoing edge labels as choices to the interviewer,
    returns selected label as preferred_label."""
    asked: list[Question] = []

    def person(question: Question) -> Answer:
        asked.append(question)
        return Answer(value="F", selected_option=question.options[1])

    result = run(HUMAN, tmp_path, interviewer=CallbackInterviewer(person))
    (question,) = asked
    assert question.text == "Ship it?" and question.type is QuestionType.MULTIPLE_CHOICE
    assert [o.label for o in question.options] == ["[S] Ship", "[F] Fix"]
    assert result.path == ("start", "ask", "fix", "done")
    assert load_checkpoint(tmp_path).node_outcomes["ask"].preferred_label == "[F] Fix"


def test_11_6_conditional_handler(tmp_path):
    """**Conditional handler:** Passes through; engine evaluates edge conditions against
    outcome/context."""
    plan = plan_of("""digraph c { start [shape=Mdiamond]; done [shape=Msquare]
        work [prompt=w]; gate [shape=diamond]; yes [prompt=y]; no [prompt=n]
        start -> work -> gate
        gate -> yes [condition="context.verdict=good"]; gate -> no [condition="outcome=fail"]
        yes -> done; no -> done }""")
    context = Context({"verdict": "good"})
    handler = ConditionalHandler()
    assert handler.execute(plan.graph.nodes["gate"], context, plan, tmp_path).status == "success"
    assert context.snapshot() == {"verdict": "good"}
    result = run(plan, tmp_path, backend=Scripted({"work": [ok(verdict="good")]}))
    assert result.path == ("start", "work", "gate", "yes", "done")


FAN = """digraph fan { start [shape=Mdiamond]; done [shape=Msquare]
    fork [shape=component]; a [prompt=a]; b [prompt=b]; c [prompt=c]
    join [shape=tripleoctagon]; after [prompt=z]
    start -> fork; fork -> a; fork -> b; fork -> c
    a -> join; b -> join; c -> join; join -> after -> done }"""


def test_11_6_parallel_handler(tmp_path):
    """**Parallel handler:** Fans out to multiple target nodes concurrently (or sequentially
    as fallback)."""
    barrier = threading.Barrier(3, timeout=30)

    class Meet:
        def run(self, node, prompt, context):
            if node.id in "abc":
                barrier.wait()  # breaks (the branch fails) unless all three run at once
            return f"{node.id} met"

    result = run(FAN, tmp_path, backend=Meet())
    assert [(r["id"], r["status"]) for r in result.context["parallel.results"]] == [
        ("a", "success"),
        ("b", "success"),
        ("c", "success"),
    ]
    one_at_a_time = run(FAN.replace("component]", "component, max_parallel=1]"), tmp_path / "s")
    assert one_at_a_time.path == ("start", "fork", "a", "b", "c", "join", "after", "done")


def test_11_6_fan_in_handler(tmp_path):
    """**Fan-in handler:** Waits for all parallel branches to complete before proceeding."""
    finished: list[str] = []

    class Slow:
        def run(self, node, prompt, context):
            if node.id == "a":
                time.sleep(0.2)  # the slowest branch: the fan-in must still wait for it
            if node.id == "after":
                assert sorted(finished) == ["a", "b", "c"]
            finished.append(node.id)
            return "done"

    result = run(FAN, tmp_path, backend=Slow())
    assert result.status == "success"
    assert result.path.index("join") > max(result.path.index(b) for b in "abc")
    assert finished[-1] == "after"
    assert result.context["parallel.fan_in.best_id"] in {"a", "b", "c"}


needs_landlock = pytest.mark.skipif(
    landlock.abi_version() < 1, reason="this kernel cannot confine commands (no Landlock)"
)


@needs_landlock
def test_11_6_tool_handler(tmp_path):
    """**Tool handler:** Executes configured tool/command and returns result."""
    work = tmp_path / "work"
    work.mkdir()
    dot = """digraph t { start [shape=Mdiamond]; done [shape=Msquare]
        t [shape=parallelogram, tool_command="echo made > out.txt; echo all good"]
        start -> t -> done }"""
    result = run(dot, tmp_path / "logs", allow_commands=True, workspace=work)
    assert result.status == "success"
    assert (work / "out.txt").read_text() == "made\n"
    assert (result.context["tool.exit_code"], result.context["tool.last_line"]) == (0, "all good")


def test_11_6_tool_handler_needs_permission(tmp_path):
    """**Tool handler** (continued): without ``allow_commands`` waygraph runs no command and
    the stage fails (waygraph's choice: a pipeline file cannot run shell commands unasked)."""
    dot = """digraph t { start [shape=Mdiamond]; done [shape=Msquare]
        t [shape=parallelogram, tool_command="touch made"]; start -> t -> done }"""
    result = run(dot, tmp_path / "logs", workspace=tmp_path)
    assert result.status == "fail" and not (tmp_path / "made").exists()


def test_11_6_custom_handlers_by_type(tmp_path):
    """Custom handlers can be registered by type string."""

    class Deploy:
        def execute(self, node, context, plan, logs_root):
            return Outcome(status="success", context_updates={"deployed": node.attrs["to"]})

    registry = default_handlers()
    registry.register("deploy", Deploy())
    dot = """digraph d { start [shape=Mdiamond]; done [shape=Msquare]
        ship [type="deploy", to="prod"]; start -> ship -> done }"""
    result = run(dot, tmp_path, handlers=registry)
    assert result.context["deployed"] == "prod" and result.path == ("start", "ship", "done")


# ---------------------------------------------------------------- §11.7 state and context


def test_11_7_context_is_a_shared_store():
    """Context is a key-value store accessible to all handlers."""
    context = Context()
    context.set("a.b", 1)
    assert context.get("a.b") == 1 and context.get("missing", "d") == "d"
    assert "a.b" in context and context.get_string("a.b") == "1"
    clone = context.clone()
    clone.set("a.b", 2)
    assert context.get("a.b") == 1


def test_11_7_handlers_read_and_update(tmp_path):
    """Handlers can read context and return `context_updates` in the Outcome."""

    class Counter:
        def execute(self, node, context, plan, logs_root):
            return Outcome(status="success", context_updates={"n": context.get("n", 0) + 1})

    dot = """digraph c { start [shape=Mdiamond]; done [shape=Msquare]
        a [type=count]; b [type=count]; start -> a -> b -> done }"""
    result = run(dot, tmp_path, handlers={"count": Counter()}, context={"n": 10})
    assert result.context["n"] == 12


def test_11_7_updates_merged_after_each_node(tmp_path):
    """Context updates are merged after each node execution."""
    backend = Scripted({"a": [ok(k="from a", only_a=1)], "b": [ok(k="from b")]})
    result = run(TWO, tmp_path, backend=backend)
    assert backend.seen["b"]["k"] == "from a" and backend.seen["b"]["outcome"] == "success"
    assert (result.context["k"], result.context["only_a"]) == ("from b", 1)


def test_11_7_checkpoint_after_each_node(tmp_path):
    """Checkpoint is saved after each node completion (current_node, completed_nodes,
    context, retry counts)."""
    saved: list[Checkpoint] = []
    backend = Scripted({"a": [status("retry")], "b": [ok(k=1)]})
    dot = """digraph two { start [shape=Mdiamond]; done [shape=Msquare]
        a [prompt="A", max_retries=1]; b [prompt="B"]
        start -> a -> b -> done; a -> b [condition="outcome=fail"] }"""
    run(dot, tmp_path, backend=backend, save_checkpoint=saved.append)
    assert [c.current_node for c in saved] == ["start", "a", "b", "done"]
    assert [c.completed_nodes for c in saved][:2] == [("start",), ("start", "a")]
    assert saved[1].node_retries == {"a": 1}  # its one retry, spent (a success resets it, §3.5)
    assert saved[2].context["k"] == 1 and saved[2].node_outcomes["a"].status == "fail"
    assert not (tmp_path / "checkpoint.json").exists()  # save_checkpoint replaced the file


def test_11_7_resume_from_checkpoint(tmp_path):
    """Resume from checkpoint: load checkpoint -> restore state -> continue from current_node."""
    saved: list[Checkpoint] = []
    run(
        TWO,
        tmp_path / "first",
        backend=Scripted({"a": [ok(k="kept")]}),
        save_checkpoint=saved.append,
    )
    after_a = next(c for c in saved if c.current_node == "a")
    backend = Scripted()
    result = run(TWO, tmp_path / "again", backend=backend, resume=after_a)
    assert backend.calls == ["b"]  # a is not run again
    assert backend.seen["b"]["k"] == "kept" and result.status == "success"
    assert result.run_id == after_a.run_id


def test_11_7_artifacts(tmp_path):
    """Artifacts are written to `{logs_root}/{node_id}/` (prompt.md, response.md, status.json)."""
    run(TWO, tmp_path, backend=Scripted({"a": ["answer A"]}))
    for node in ("a", "b"):
        assert {p.name for p in (tmp_path / node).iterdir()} >= {
            "prompt.md",
            "response.md",
            "status.json",
        }
    assert (tmp_path / "a" / "response.md").read_text() == "answer A"


# ---------------------------------------------------------------- §11.8 human-in-the-loop

CHOICE = Question(
    text="Ship?",
    options=(Option(key="S", label="[S] Ship"), Option(key="F", label="[F] Fix")),
)


def test_11_8_interviewer_interface():
    """Interviewer interface works: `ask(question) -> Answer`."""
    for interviewer in (
        AutoApproveInterviewer(),
        CallbackInterviewer(lambda q: Answer(value="F")),
        QueueInterviewer(["F"]),
        ConsoleInterviewer(read=lambda prompt: "s", write=lambda line: None),
    ):
        assert isinstance(interviewer, Interviewer)
        assert isinstance(interviewer.ask(CHOICE), Answer)


def test_11_8_question_types():
    """Question supports types: YES_NO, MULTIPLE_CHOICE, FREEFORM, CONFIRMATION."""
    assert {t.name for t in QuestionType} >= {
        "YES_NO",
        "MULTIPLE_CHOICE",
        "FREEFORM",
        "CONFIRMATION",
    }
    lines = iter(["y", "n", "release 2", "s"])
    console = ConsoleInterviewer(read=lambda prompt: next(lines), write=lambda line: None)
    said = [
        console.ask(Question(text="?", type=QuestionType.YES_NO)).value,
        console.ask(Question(text="?", type=QuestionType.CONFIRMATION)).value,
        console.ask(Question(text="?", type=QuestionType.FREEFORM)).text,
        console.ask(CHOICE).value,
    ]
    assert said == ["yes", "no", "release 2", "S"]


def test_11_8_auto_approve_picks_the_first():
    """AutoApproveInterviewer always selects the first option (for automation/testing)."""
    answer = AutoApproveInterviewer().ask(CHOICE)
    assert answer.selected_option == CHOICE.options[0] and answer.value == "S"
    assert AutoApproveInterviewer().ask(Question(text="?", type=QuestionType.YES_NO)).value == "yes"


def test_11_8_console_interviewer():
    """ConsoleInterviewer prompts in terminal and reads user input."""
    shown: list[str] = []
    prompts: list[str] = []
    lines = iter(["maybe", "fix"])

    def read(prompt: str) -> str:
        prompts.append(prompt)
        return next(lines)

    answer = ConsoleInterviewer(read=read, write=shown.append).ask(CHOICE)
    assert answer.selected_option == CHOICE.options[1]
    assert shown[0] == "[?] Ship?" and "  [F] [F] Fix" in shown
    assert len(prompts) == 2  # asked again after an answer that was no choice


def test_11_8_callback_interviewer():
    """CallbackInterviewer delegates to a provided function."""
    seen: list[Question] = []
    interviewer = CallbackInterviewer(lambda q: seen.append(q) or Answer(value="F", text="fix"))
    assert interviewer.ask(CHOICE).text == "fix" and seen == [CHOICE]


def test_11_8_queue_interviewer(tmp_path):
    """QueueInterviewer reads from a pre-filled answer queue (for testing)."""
    queue = QueueInterviewer(["F", Answer(value="S")])
    assert [queue.ask(CHOICE).value, queue.ask(CHOICE).value] == ["F", "S"]
    assert queue.remaining == 0 and queue.ask(CHOICE).value == "skipped"
    result = run(HUMAN, tmp_path, interviewer=QueueInterviewer(["fix"]))
    assert result.path == ("start", "ask", "fix", "done")


# ---------------------------------------------------------------- §11.9 condition expressions


def holds(text: str, outcome: str = "success", label: str = "", **context: object) -> bool:
    return evaluate_condition(text, outcome=outcome, preferred_label=label, context=context)


def test_11_9_equals():
    """`=` (equals) operator works for string comparison."""
    assert holds("context.env=prod", env="prod") and not holds("context.env=prod", env="dev")
    assert not holds("context.env=prod", env="production")


def test_11_9_not_equals():
    """`!=` (not equals) operator works."""
    assert holds("context.env!=prod", env="dev") and not holds("context.env!=prod", env="prod")


def test_11_9_and():
    """`&&` (AND) conjunction works with multiple clauses."""
    text = "outcome=success && context.a=1 && context.b!=x"
    assert holds(text, a="1", b="y")
    assert not holds(text, a="2", b="y") and not holds(text, a="1", b="x")
    assert not holds(text, outcome="fail", a="1", b="y")


def test_11_9_outcome_variable(tmp_path):
    """`outcome` variable resolves to the current node's outcome status."""
    assert holds("outcome=partial_success", outcome="partial_success")
    assert not holds("outcome=success", outcome="fail")
    dot = """digraph o { start [shape=Mdiamond]; done [shape=Msquare]
        a [prompt=a]; p [prompt=p]; s [prompt=s]; start -> a
        a -> s [condition="outcome=success"]; a -> p [condition="outcome=partial_success"]
        p -> done; s -> done }"""
    result = run(dot, tmp_path, backend=Scripted({"a": [status("partial_success")]}))
    assert result.path == ("start", "a", "p", "done")


def test_11_9_preferred_label_variable():
    """`preferred_label` variable resolves to the outcome's preferred label."""
    assert holds("preferred_label=Fix", label="Fix") and not holds("preferred_label=Fix")


def test_11_9_context_variables():
    """`context.*` variables resolve to context values (missing keys = empty string)."""
    assert holds("context.tests.passed=true", **{"tests.passed": True})
    assert holds("context.missing=") and holds("context.missing!=anything")
    assert not holds("context.missing=x")


def test_11_9_empty_condition():
    """Empty condition always evaluates to true (unconditional edge)."""
    assert holds("", outcome="fail") and holds("   ", outcome="retry")


# ---------------------------------------------------------------- §11.10 model stylesheet

SHEET = """* { llm_model: base; llm_provider: any; }
    box { llm_model: boxed; }
    .fast { llm_model: flash; }
    #review { reasoning_effort: high; llm_model: pinned; }"""
STYLED = f"""digraph s {{ model_stylesheet="{SHEET}"
    start [shape=Mdiamond]; done [shape=Msquare]
    plain [prompt=p]; quick [class="fast", prompt=q]; review [class="fast", prompt=r]
    own [class="fast", prompt=o, llm_model="mine"]; decide [shape=diamond]
    start -> plain -> quick -> review -> own -> decide -> done }}"""


def styled(node_id: str) -> dict:
    return plan_of(STYLED).graph.nodes[node_id].attrs or {}


def test_11_10_parsed_from_the_graph_attribute():
    """Stylesheet is parsed from the graph's `model_stylesheet` attribute."""
    assert plan_of(STYLED).attrs["model_stylesheet"] == SHEET
    assert len(parse_stylesheet(SHEET).rules) == 4
    assert styled("plain")["llm_provider"] == "any"


def test_11_10_shape_selector():
    """Selectors by shape name work (e.g., `box { llm_model: "claude-opus-4-6" }`)."""
    assert styled("plain")["llm_model"] == "boxed"
    assert styled("decide")["llm_model"] == "base"  # a diamond is no box
    sheet = parse_stylesheet('box { llm_model: "claude-opus-4-6"; }')
    assert sheet.properties_for("n", "box", ()) == {"llm_model": "claude-opus-4-6"}


def test_11_10_class_selector():
    """Selectors by class name work (e.g., `.fast { llm_model: "gemini-3-flash-preview" }`)."""
    assert styled("quick")["llm_model"] == "flash"
    sheet = parse_stylesheet('.fast { llm_model: "gemini-3-flash-preview"; }')
    assert sheet.properties_for("n", "box", ["fast"]) == {"llm_model": "gemini-3-flash-preview"}
    assert sheet.properties_for("n", "box", ["slow"]) == {}


def test_11_10_id_selector():
    """Selectors by node ID work (e.g., `#review { reasoning_effort: "high" }`)."""
    assert styled("review")["reasoning_effort"] == "high"
    assert "reasoning_effort" not in styled("quick")


def test_11_10_specificity():
    """Specificity order: universal < shape < class < ID."""
    models = {n: styled(n)["llm_model"] for n in ("decide", "plain", "quick", "review")}
    assert models == {"decide": "base", "plain": "boxed", "quick": "flash", "review": "pinned"}
    # Written in the reverse order, the most specific rule still wins.
    reverse = parse_stylesheet("#n { m: id; } .c { m: class; } box { m: shape; } * { m: all; }")
    assert reverse.properties_for("n", "box", ["c"]) == {"m": "id"}
    assert reverse.properties_for("x", "box", ["c"]) == {"m": "class"}
    assert reverse.properties_for("x", "box", []) == {"m": "shape"}


def test_11_10_explicit_attributes_win():
    """Stylesheet properties are overridden by explicit node attributes."""
    assert styled("own")["llm_model"] == "mine"
    assert styled("own")["llm_provider"] == "any"  # what it does not set still comes in
