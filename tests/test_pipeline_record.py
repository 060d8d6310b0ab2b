"""Pipeline runs in the store: checkpoints, the plan, one owner at a time, and answers to gates."""

from __future__ import annotations

import subprocess
import threading
import uuid
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from waygraph.errors import InputError, NotWaitingError, RunHeldError, RunNotFoundError
from waygraph.model import Graph, Plan
from waygraph.pipelines.checkpoint import Checkpoint
from waygraph.pipelines.outcome import Outcome
from waygraph.pipelines.record import KIND, PipelineRecords
from waygraph.pipelines.record_interviewer import StoreInterviewer
from waygraph.pipelines.record_lease import LeaseKeeper
from waygraph.pipelines.record_view import pipeline_view, pipeline_waiting
from waygraph.planning._lease import Lease, _machine
from waygraph.store import Store, open_store

OK = Outcome(status="success")
GATE = {"node": "review", "prompt": "Ship it?", "choices": ["[Y] Yes", "[N] No"]}


@pytest.fixture(params=["memory", "sqlite", "file", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "postgres":
        url = str(request.getfixturevalue("postgres_url"))
    else:
        url = {
            "memory": "memory://",
            "sqlite": f"sqlite:///{tmp_path / 'wg.db'}",
            "file": f"file://{tmp_path / 'files'}",
        }[request.param]
    opened = open_store(url)
    request.addfinalizer(opened.close)
    return opened


def pipeline(plan_id: str = "ship") -> Plan:
    return (
        Graph.builder()
        .task("build")
        .human("review", prompt="Ship it?")
        .exit("done")
        .exit("stop")
        .edge("start", "build")
        .edge("build", "review")
        .edge("review", "done", label="[Y] Yes")
        .edge("review", "stop", label="[N] No")
        .plan(plan_id, goal="ship the release")
    )


def run_id() -> str:
    # The postgres schema is shared by the test session: every test names its own runs.
    return f"pl_{uuid.uuid4().hex[:10]}"


def after(rid: str, *done: str, nxt: str | None, **more: object) -> Checkpoint:
    """The checkpoint after ``done`` finished, running ``nxt`` next."""
    return Checkpoint(
        run_id=rid,
        plan_id="ship",
        source="ship.dot",
        current_node=done[-1] if done else None,
        next_node=nxt,
        completed_nodes=done,
        node_outcomes={n: OK for n in done},
        **more,  # type: ignore[arg-type]
    )


def types(store: Store, rid: str) -> list[str]:
    return [e.data["type"] for e in store.events(rid)]


def test_a_run_saved_after_every_node_loads_back_with_its_plan(store):
    rid, plan = run_id(), pipeline()
    records = PipelineRecords(store)
    records.save(after(rid, "start", nxt="build"), plan)
    records.save(after(rid, "start", "build", nxt="review", context={"build.ok": True}), plan)

    cp, stored = PipelineRecords(store).load(rid)  # another process reads it back
    assert cp.completed_nodes == ("start", "build") and cp.next_node == "review"
    assert cp.context == {"build.ok": True}
    assert stored == plan
    # The plan is stored once; each node's finish is told once.
    assert types(store, rid) == ["plan_started", "node_finished", "node_finished"]
    finished = [e.data["node"] for e in store.events(rid) if e.data["type"] == "node_finished"]
    assert finished == ["start", "build"]
    record = store.get(rid)
    assert record.kind == KIND and record.session == rid
    assert store.current(rid) is None  # the pointer names a Navigator's guided run
    assert "events" not in record.data  # a guided record's recent events, not a count
    assert record.data["current_node"] == "review" and record.data["path"] == ["start", "build"]


def test_list_shows_each_run_with_its_status_and_node(store):
    records = PipelineRecords(store)
    first, second = run_id(), run_id()
    records.save(after(first, "start", nxt="build"), pipeline())
    records.save(
        after(second, "start", "build", nxt="review", status="paused", waiting=GATE), pipeline()
    )
    runs = {r.run_id: r for r in records.list() if r.run_id in (first, second)}
    assert (runs[first].status, runs[first].current_node) == ("running", "build")
    assert (runs[second].status, runs[second].current_node) == ("paused", "review")
    assert runs[second].waiting["choices"] == ["[Y] Yes", "[N] No"]
    assert [r.run_id for r in records.list(status="paused") if r.run_id == second] == [second]


def test_a_changed_plan_is_stored_again_and_loaded(store):
    rid = run_id()
    records = PipelineRecords(store)
    records.save(after(rid, "start", nxt="build"), pipeline())
    changed = pipeline().model_copy(update={"goal": "ship it faster"})
    records.save(after(rid, "start", "build", nxt="review"), changed)
    records.save(after(rid, "start", "build", nxt="review"), changed)
    assert records.load(rid)[1].goal == "ship it faster"
    assert types(store, rid).count("run_checkpoint") == 1


def test_a_run_that_ended_is_released_and_says_how(store):
    rid = run_id()
    records = PipelineRecords(store)
    records.save(after(rid, "start", nxt="build"), pipeline())
    failed = Outcome(status="fail", failure_reason="tests failed")
    records.save(
        after(rid, "start", "build", nxt=None, status="failed", outcome=failed).model_copy(
            update={"node_outcomes": {"start": OK, "build": failed}}
        ),
        pipeline(),
    )
    assert records.lease(rid) is None
    end = store.events(rid)[-1].data
    assert (end["type"], end["reason"]) == ("plan_failed", "tests failed")
    assert store.get(rid).status == "failed"
    finished = [e.data for e in store.events(rid) if e.data["type"] == "node_finished"]
    assert finished[-1]["status"] == "failed" and finished[-1]["result"]["error"] == "tests failed"
    # Another process may take the ended run (to report it): nothing holds it.
    PipelineRecords(store).claim(rid)


def test_a_second_process_is_refused_until_the_first_releases(store):
    rid = run_id()
    first, second = PipelineRecords(store), PipelineRecords(store)
    first.save(after(rid, "start", nxt="build"), pipeline())
    with pytest.raises(RunHeldError, match=r"is being run by pid \d+ .*--takeover"):
        second.claim(rid)
    with pytest.raises(RunHeldError, match="is being run by"):
        second.save(after(rid, "start", "build", nxt="review"), pipeline())
    assert PipelineRecords(store).load(rid)[0].next_node == "build"  # nothing was written

    first.release(rid)
    lease = second.claim(rid)
    assert second.lease(rid) == lease
    second.save(after(rid, "start", "build", nxt="review"), pipeline())


def test_takeover_wins_and_the_old_owner_can_no_longer_save(store):
    rid = run_id()
    old, new = PipelineRecords(store), PipelineRecords(store)
    old.save(after(rid, "start", nxt="build"), pipeline())
    new.claim(rid, takeover=True)
    with pytest.raises(RunHeldError, match="was taken over"):
        old.renew(rid)  # the old owner's renewal finds out first
    # From then on it is any other process: the new owner's live lease refuses it.
    with pytest.raises(RunHeldError, match="is being run by"):
        old.save(after(rid, "start", "build", nxt="review"), pipeline())
    assert new.load(rid)[0].next_node == "build"
    resumed = [e.data for e in store.events(rid) if e.data["type"] == "plan_resumed"]
    assert resumed[0]["took_over"] is True and resumed[0]["node"] == "build"


def test_the_old_owner_finds_out_at_its_next_checkpoint_and_writes_nothing(store):
    rid = run_id()
    old, new = PipelineRecords(store), PipelineRecords(store)
    old.save(after(rid, "start", nxt="build"), pipeline())
    new.claim(rid, takeover=True)
    with pytest.raises(RunHeldError, match=r"was taken over by pid \d+"):
        old.save(after(rid, "start", "build", nxt="review"), pipeline())
    assert new.load(rid)[0].completed_nodes == ("start",)


def test_a_run_whose_process_was_killed_is_claimed_at_once(store):
    rid = run_id()
    records = PipelineRecords(store)
    records.save(after(rid, "start", nxt="build"), pipeline())
    # The lease of a process of this machine that is gone (as after kill -9), still unexpired.
    dead = subprocess.Popen(["true"])
    dead.wait()
    gone = Lease("here", dead.pid, "dead", expires=10**10, machine=_machine())
    record = store.get(rid)
    store.commit(
        rid,
        {**record.data, "lease": gone.data()},
        record.version,
        [],
        kind=KIND,
        session=rid,
        status=record.status,
        plan=record.plan,
    )
    resumer = PipelineRecords(store)
    resumer.claim(rid)  # no --takeover needed
    cp, plan = resumer.load(rid)
    # It continues after the finished node, not from the start.
    assert cp.completed_nodes == ("start",) and cp.next_node == "build"
    resumer.save(after(rid, "start", "build", nxt="review"), plan)
    assert [e.data["node"] for e in store.events(rid) if e.data["type"] == "node_finished"] == [
        "start",
        "build",
    ]


def test_of_two_processes_claiming_at_once_one_wins(store):
    rid = run_id()
    owner = PipelineRecords(store)
    owner.save(after(rid, "start", nxt="build"), pipeline())
    owner.release(rid)
    barrier = threading.Barrier(2)
    results: list[str] = []

    def claim() -> None:
        barrier.wait()
        try:
            PipelineRecords(store).claim(rid)
            results.append("won")
        except RunHeldError:
            results.append("refused")

    threads = [threading.Thread(target=claim) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == ["refused", "won"]


def test_claiming_a_run_that_is_not_there_says_so(store):
    with pytest.raises(RunNotFoundError, match="no pipeline run"):
        PipelineRecords(store).claim("pl_missing")
    assert PipelineRecords(store).load("pl_missing") is None


def test_a_person_answers_the_gate_the_run_waits_on(store):
    rid = run_id()
    records = PipelineRecords(store)
    records.save(after(rid, "start", "build", nxt="review"), pipeline())
    with pytest.raises(NotWaitingError, match="it is running node 'review'"):
        PipelineRecords(store).answer(rid, "yes")
    asked = records.ask(rid, GATE)
    assert asked["node"] == "review" and asked["id"]
    assert store.get(rid).status == "paused"
    assert pipeline_waiting(store.get(rid).data)["choices"] == ["[Y] Yes", "[N] No"]

    person = PipelineRecords(store)  # the CLI or the server: another process
    with pytest.raises(InputError, match=r"'maybe' is not one of the choices: answer '\[Y\] Yes'"):
        person.answer(rid, "maybe")
    given = person.answer(rid, "y", by="ann")
    assert (given["choice"], given["by"], given["id"]) == ("[Y] Yes", "ann", asked["id"])
    assert records.answered(rid, asked["id"])["choice"] == "[Y] Yes"
    assert records.answered(rid, "another-question") is None
    with pytest.raises(NotWaitingError, match="already answered"):
        person.answer(rid, "no")
    record = store.get(rid)
    assert record.status == "running" and record.data["awaiting"] is None
    said = store.events(rid)[-1].data
    assert (said["type"], said["choice"], said["by"]) == ("human_answered", "[Y] Yes", "ann")

    # The lease renewal and a checkpoint of the same wait keep the answer.
    records.renew(rid)
    cp, plan = records.load(rid)
    records.save(cp, plan)
    assert records.answered(rid, asked["id"])["answer"] == "y"
    # The runner moves on: the answer was used, the run waits on nobody.
    records.save(after(rid, "start", "build", "review", nxt="done"), plan)
    assert records.load(rid)[0].waiting is None and store.get(rid).data.get("answer") is None


def test_asking_again_after_a_restart_keeps_the_answer_given_meanwhile(store):
    rid = run_id()
    records = PipelineRecords(store)
    records.save(after(rid, "start", "build", nxt="review"), pipeline())
    first = records.ask(rid, GATE)
    # The runner is killed while it waits; a person answers; a new process resumes.
    PipelineRecords(store).answer(rid, "No")
    resumer = PipelineRecords(store)
    resumer.claim(rid, takeover=True)
    again = resumer.ask(rid, GATE)
    assert again["id"] == first["id"]
    assert resumer.answered(rid, again["id"])["choice"] == "[N] No"
    assert types(store, rid).count("human_asked") == 1


def test_an_answer_without_choices_is_taken_as_written(store):
    rid = run_id()
    records = PipelineRecords(store)
    records.save(after(rid, "start", nxt="build"), pipeline())
    asked = records.ask(rid, {"node": "build", "prompt": "Which branch?", "choices": []})
    assert pipeline_waiting(store.get(rid).data)["kind"] == "question"
    with pytest.raises(InputError, match="blank"):
        records.answer(rid, "  ")
    assert records.answer(rid, "release/2.0")["choice"] is None
    assert records.answered(rid, asked["id"])["answer"] == "release/2.0"


def test_a_key_of_another_kind_is_not_overwritten(store):
    store.commit("guided_key", {"status": "running"}, 0, [], kind="guided")
    with pytest.raises(InputError, match="holds a guided record"):
        PipelineRecords(store).save(after("guided_key", "start", nxt="build"), pipeline())
    assert PipelineRecords(store).load("guided_key") is None


def test_the_drawing_state_follows_the_checkpoint(store):
    rid = run_id()
    records = PipelineRecords(store)
    records.save(after(rid, "start", "build", nxt="review"), pipeline())
    records.ask(rid, GATE)
    plan, state = pipeline_view(store, store.get(rid))
    assert plan == pipeline()
    # Paused at the gate is still drawn as the node the run is at.
    assert state["status"] == "running" and state["current_node"] == "review"
    assert state["path"] == ["start", "build", "review"]
    assert state["visited"]["build"]["outcome"] == "success"


# ---------------------------------------------------------------- StoreInterviewer


@dataclass(frozen=True)
class Option:  # the specification's Option (§6.2)
    key: str
    label: str


@dataclass(frozen=True)
class Question:  # the specification's Question (§6.2)
    text: str
    stage: str
    options: tuple[Option, ...] = ()
    type: str = "MULTIPLE_CHOICE"
    timeout_seconds: float | None = None


REVIEW = Question("Ship it?", "review", (Option("Y", "[Y] Yes"), Option("N", "[N] No")))


def waiting_at_review(store: Store) -> tuple[str, PipelineRecords]:
    rid = run_id()
    records = PipelineRecords(store)
    records.save(after(rid, "start", "build", nxt="review"), pipeline())
    return rid, records


def test_the_interviewer_waits_until_a_person_answers_through_the_store(store):
    rid, records = waiting_at_review(store)
    looks: list[str] = []

    def meanwhile(seconds: float) -> None:
        looks.append(store.get(rid).status)
        if len(looks) == 2:  # the person answers after the runner looked twice
            PipelineRecords(store).answer(rid, "no", by="ann")

    answer = StoreInterviewer(records, rid, sleep=meanwhile).ask(REVIEW)
    assert (answer.value, answer.selected_option, answer.by) == ("N", REVIEW.options[1], "ann")
    assert looks == ["paused", "paused"]
    assert types(store, rid)[-2:] == ["human_asked", "human_answered"]


def test_no_answer_within_the_timeout_is_a_timeout_and_the_lease_is_renewed(store):
    rid, records = waiting_at_review(store)
    now = [0.0]
    expiries: list[float] = []

    def tick(seconds: float) -> None:
        now[0] += seconds
        expiries.append(records.lease(rid).expires)

    asker = StoreInterviewer(records, rid, poll=5, sleep=tick, clock=lambda: now[0], renew_every=5)
    answer = asker.ask(replace(REVIEW, timeout_seconds=12))
    assert answer.timed_out and answer.value == "timeout"
    assert len(expiries) == 3 and expiries[0] < expiries[-1]  # renewed while it waited


def test_yes_no_and_free_form_questions(store):
    rid, records = waiting_at_review(store)

    def person_says(words: str):
        return lambda seconds: PipelineRecords(store).answer(rid, words)

    yes_no = Question("Deploy now?", "review", type="YES_NO")
    answer = StoreInterviewer(records, rid, sleep=person_says("y")).ask(yes_no)
    assert answer.value == "yes"
    records.save(after(rid, "start", "build", "review", nxt="build"), pipeline())  # gate passed
    free = Question("Which branch?", "build", type="FREEFORM")
    answer = StoreInterviewer(records, rid, sleep=person_says("release/2")).ask(free)
    assert (answer.value, answer.text, answer.selected_option) == ("release/2", "release/2", None)


def test_a_resumed_run_takes_the_answer_given_while_nothing_ran(store):
    rid, records = waiting_at_review(store)
    StoreInterviewer(records, rid, sleep=lambda s: None, clock=iter(range(100)).__next__).wait(
        "review", "Ship it?", ["[Y] Yes", "[N] No"], timeout=1
    )
    PipelineRecords(store).answer(rid, "yes")  # the runner was killed before it looked again
    resumer = PipelineRecords(store)
    resumer.claim(rid, takeover=True)

    def never(seconds: float) -> None:
        raise AssertionError("the answer was already there")

    assert StoreInterviewer(resumer, rid, sleep=never).ask(REVIEW).value == "Y"


# ---------------------------------------------------------------- resume and the lease keeper


def test_resume_claims_the_run_and_returns_where_it_stood(store):
    rid, records = waiting_at_review(store)
    records.release(rid)  # the first process stopped
    resumer = PipelineRecords(store)
    cp, plan = resumer.resume(rid)
    assert cp.next_node == "review" and plan == pipeline()
    with pytest.raises(RunHeldError, match="is being run by"):
        PipelineRecords(store).resume(rid)
    with pytest.raises(RunNotFoundError):
        PipelineRecords(store).resume("pl_missing")
    resumer.save(after(rid, "start", "build", "review", "done", nxt=None, status="completed"), plan)
    # An ended run comes back as it is, with nothing to claim.
    assert PipelineRecords(store).resume(rid)[0].status == "completed"


def test_the_lease_keeper_renews_until_stopped_and_says_when_the_run_was_taken(store):
    rid, records = waiting_at_review(store)
    first = records.lease(rid).expires
    keeper = LeaseKeeper(records, rid, every=0.01)
    with keeper:
        renewed = threading.Event()
        for _ in range(500):  # waits for a renewal, however slow the machine
            if records.lease(rid).expires > first:
                renewed.set()
                break
            threading.Event().wait(0.01)
        assert renewed.is_set()
        PipelineRecords(store).claim(rid, takeover=True)
        for _ in range(500):
            if keeper.lost is not None:
                break
            threading.Event().wait(0.01)
    assert "was taken over" in str(keeper.lost)
