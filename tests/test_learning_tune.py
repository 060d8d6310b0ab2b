"""``waygraph tune``: proposals from stores of hundreds of real Navigator runs.

Every run here is a real plan driven through :class:`waygraph.Navigator`
with scripted outcomes: each plan of the test library carries one pattern
(a node that often succeeds only on its last attempt, one whose retries never
help, one where runs stall, a plan activated falsely by half its messages),
and session plans carry goals the library missed. A noise store, where every
attempt succeeds or fails at random, must give no proposal at all.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from waygraph import Navigator
from waygraph.cli import app
from waygraph.errors import InputError
from waygraph.learning.runs import guided_runs
from waygraph.learning.samples import session_samples
from waygraph.learning.suggest import suggest
from waygraph.learning.tune import Proposal, tune
from waygraph.learning.tune_apply import apply_proposals, write_library
from waygraph.library import load_library
from waygraph.sessions import SessionPlanner
from waygraph.store import open_store

# Its module-scoped fixture takes seconds to build: one worker runs the whole module
# (make test distributes whole modules, --dist loadfile), so the fixture is built once;
# the group does so under --dist loadgroup where xdist can tag node ids (pytest < 9).
pytestmark = pytest.mark.xdist_group("learning_tune")

PASS = {"type": "output_contains", "value": "PASS"}


def _task(name: str, retries: int, **extra: Any) -> dict[str, Any]:
    return {"type": "task", "name": name, "verify": PASS, "max_retries": retries, **extra}


def _chain(*nodes: str) -> list[dict[str, str]]:
    edges = [{"from": "start", "to": nodes[0], "condition": "always"}]
    edges += [{"from": a, "to": b, "condition": "on_success"} for a, b in pairwise(nodes)]
    return [*edges, {"from": nodes[-1], "to": "done", "condition": "on_success"}]


def _exhaust(*nodes: str) -> list[dict[str, str]]:
    return [{"from": n, "to": "stuck", "condition": "on_exhaust"} for n in nodes]


def _plan(
    name: str,
    triggers: list[str],
    threshold: int,
    tasks: dict[str, Any],
    edges: list[Any],
    **extra: Any,
) -> dict[str, Any]:
    nodes = {"start": {"type": "start"}, **tasks, "done": {"type": "exit"}}
    if any(e["to"] == "stuck" for e in edges):
        nodes["stuck"] = {"type": "escalate", "reason": "ask a person"}
    return {
        "name": name,
        "triggers": triggers,
        "trigger_threshold": threshold,
        "graph": {"start": "start", "nodes": nodes, "edges": edges},
        **extra,
    }


LIBRARY: dict[str, Any] = {
    "plans": {
        "deploy": _plan(
            "Deploy the service",
            ["deploy the service", "ship a release"],
            1,
            {"build": _task("Build the image", 1), "ship": _task("Ship it", 1)},
            _chain("build", "ship") + _exhaust("build", "ship"),
        ),
        "migrate": _plan(
            "Migrate the database schema",
            ["migrate the database", "run the migration"],
            2,
            {
                "prepare": _task("Plan the migration", 1),
                "apply": _task("Apply the migration", 3),
                "check": _task("Verify the schema", 1),
            },
            _chain("prepare", "apply", "check") + _exhaust("prepare", "apply", "check"),
        ),
        "report": _plan(
            "Weekly report",
            ["weekly report"],
            1,
            {"collect": _task("Collect the numbers", 0), "write": _task("Write the report", 1)},
            _chain("collect", "write") + _exhaust("write"),
            stale_after_turns=3,
        ),
        "cleanup": _plan(
            "Clean up old files",
            ["clean up", "tidy", "remove old files"],
            1,
            {"scan": _task("Scan for old files", 1), "delete": _task("Delete them", 1)},
            _chain("scan", "delete") + _exhaust("scan", "delete"),
            stale_after_turns=3,
        ),
        "backup": _plan(
            "Back up the database",
            ["back up", "backup"],
            1,
            {
                "dump": _task("Dump the database", 1, tool="pg_dump"),
                "upload": _task("Copy the dump offsite", 1, tool="upload"),
            },
            _chain("dump", "upload") + _exhaust("dump", "upload"),
            description="Dump the database and copy the dump offsite.",
        ),
    }
}

#: When an attempt at a node passes, given the node and the attempt number.
Script = Callable[[str, int], bool]


def always(node: str, attempt: int) -> bool:
    return True


def drive(nav: Navigator, session: str, message: str, script: Script | None) -> dict[str, Any]:
    """One run: activate with ``message``, then answer each attempt as ``script`` says.

    ``script`` None: the agent never works on the plan (a false activation):
    the user keeps talking about something else until the run expires.
    """
    guidance = nav.turn(session, user_message=message)
    run = guidance.run
    assert run is not None and run["status"] == "running", message
    for turn in range(40):
        if run["status"] != "running":
            break
        if script is None:
            guidance = nav.turn(session, user_message="anyway, what's for lunch?")
        else:
            ok = script(run["current_node"], run["attempts"])
            # Outputs differ turn to turn: identical failing calls would count as repeats.
            output = "PASS" if ok else f"FAIL try {turn}"
            guidance = nav.turn(session, tool_output=output, tool_name="sh")
        run = guidance.run
        assert run is not None
    return run


def succeed_at(node: str, attempt_of_success: int | None) -> Script:
    """``node`` passes from attempt ``attempt_of_success`` on (None: never); others pass."""

    def script(current: str, attempt: int) -> bool:
        if current != node:
            return True
        return attempt_of_success is not None and attempt >= attempt_of_success

    return script


def fill_patterns(nav: Navigator, rng: random.Random) -> None:
    # deploy.build (1 retry): 40 % pass at once, 45 % only on the last attempt, 15 % never.
    for i in range(120):
        roll = rng.random()
        won = 1 if roll < 0.4 else 2 if roll < 0.85 else None
        drive(nav, f"deploy-{i}", "please deploy the service", succeed_at("build", won))
    # migrate.apply (3 retries): passes at once or not at all.
    for i in range(120):
        won = 1 if rng.random() < 0.7 else None
        message = "migrate the database and run the migration"
        drive(nav, f"migrate-{i}", message, succeed_at("apply", won))
    # report.collect has no failure edge: a quarter of the runs stall there.
    for i in range(60):
        won = 1 if rng.random() < 0.75 else None
        drive(nav, f"report-{i}", "write the weekly report", succeed_at("collect", won))
    # cleanup: "tidy" alone catches messages that are not about files at all.
    for i in range(80):
        if i % 8 < 3:
            drive(nav, f"cleanup-{i}", f"tidy the garage, box {i}", None)
        else:
            drive(nav, f"cleanup-{i}", "clean up the repo and remove old files", always)
    for i in range(30):
        drive(nav, f"backup-{i}", "back up the shop database", always)


def fill_noise(nav: Navigator, rng: random.Random) -> None:
    messages = {
        "deploy": "deploy the service now",
        "migrate": "migrate the database and run the migration",
        "cleanup": "clean up and remove old files",
        "backup": "back up the shop database",
    }

    def script(node: str, attempt: int) -> bool:
        return rng.random() < 0.9

    for i in range(240):
        plan = rng.choice(sorted(messages))
        idle = rng.random() < 0.05
        drive(nav, f"noise-{i}", messages[plan], None if idle else script)


def session_goals(workspace: Path) -> None:
    planner = SessionPlanner(workspace)
    goals = {
        # No trigger of backup hits these: a trigger to add.
        "snap": [
            ("take a database snapshot of orders", ["Dump the database", "Copy the dump offsite"]),
            ("database snapshot for billing", ["Dump the database", "Copy the dump offsite"]),
            ("make a database snapshot of users", ["Dump the database", "Copy the dump offsite"]),
        ],
        # One trigger of migrate (it needs two): a threshold to lower.
        "mig": [
            (
                f"migrate the database to postgres {v}",
                ["Plan the migration", "Apply the migration", "Verify the schema"],
            )
            for v in (15, 16, 17)
        ],
    }
    for kind, runs in goals.items():
        for i, (goal, steps) in enumerate(runs):
            sid = f"{kind}-{i}"
            planner.on_user_message(sid, goal)
            declared = "\n".join(f"[Step] {s}" for s in steps)
            planner.after_model_reply(sid, f"{declared}\nStarting. [done]", 1)
            for _ in steps[1:]:
                planner.after_model_reply(sid, "Finished this one. [done]", 1)
            planner.after_model_reply(sid, "All done.", 0)


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("tune")
    library_file = root / "plans.json"
    library_file.write_text(json.dumps(LIBRARY), encoding="utf-8")
    url = f"sqlite:///{root / 'runs.db'}"
    with Navigator(str(library_file), store=url, strict=True) as nav:
        fill_patterns(nav, random.Random(7))
    noise_url = f"sqlite:///{root / 'noise.db'}"
    with Navigator(str(library_file), store=noise_url, strict=True) as nav:
        fill_noise(nav, random.Random(11))
    workspace = root / "workspace"
    workspace.mkdir()
    session_goals(workspace)
    # Alike session plans of a kind no plan is about: material for `library suggest`.
    unrelated = root / "unrelated"
    planner = SessionPlanner(unrelated)
    for i in range(4):
        sid = f"news-{i}"
        planner.on_user_message(sid, f"summarise the morning news, edition {i}")
        planner.after_model_reply(sid, "[Step] Fetch the feeds\n[Step] Write a summary\n[done]", 1)
        planner.after_model_reply(sid, "Finished this one. [done]", 1)
        planner.after_model_reply(sid, "All done.", 0)
    return {
        "root": root,
        "library": library_file,
        "url": url,
        "noise": noise_url,
        "workspace": workspace,
        "unrelated": unrelated,
    }


def _proposals(setup: dict[str, Any]) -> dict[str, Proposal]:
    library = load_library(setup["library"])
    with open_store(setup["url"]) as store:
        found = tune(store, library, samples=session_samples(setup["workspace"]))
    return {p.id: p for p in found}


def test_the_fixture_stores_hold_hundreds_of_guided_runs(setup: dict[str, Any]):
    with open_store(setup["url"]) as store:
        runs = guided_runs(store)
    assert len(runs) == 410
    assert {r.plan for r in runs} == {"deploy", "migrate", "report", "cleanup", "backup"}
    # The Navigator records the message that activated each run.
    assert all(r.message for r in runs)
    with open_store(setup["noise"]) as store:
        assert len(guided_runs(store)) == 240


def test_each_pattern_gives_its_proposal_and_nothing_else(setup: dict[str, Any]):
    found = _proposals(setup)
    assert sorted(found) == [
        "backup:add-trigger",
        "cleanup:raise-trigger-threshold",
        "deploy:build:raise-max-retries",
        "migrate:apply:lower-max-retries",
        "migrate:lower-trigger-threshold",
        "report:collect:add-escalation-edge",
    ]


def test_a_node_that_often_succeeds_on_its_last_attempt_gets_one_more(setup: dict[str, Any]):
    p = _proposals(setup)["deploy:build:raise-max-retries"]
    assert (p.current, p.proposed) == (1, 2)
    counts = p.evidence.counts
    assert counts["visits"] == 120
    assert counts["last_attempt_succeeded"] >= 0.2 * 120 and counts["exhausted"] >= 12
    assert p.evidence.runs and "last allowed attempt" in p.reason


def test_retries_that_never_help_are_proposed_away(setup: dict[str, Any]):
    p = _proposals(setup)["migrate:apply:lower-max-retries"]
    assert (p.current, p.proposed) == (3, 0)
    assert p.evidence.counts["tried_past_last_success"] >= 10


def test_runs_stalling_at_a_node_without_escalation_get_an_edge(setup: dict[str, Any]):
    p = _proposals(setup)["report:collect:add-escalation-edge"]
    assert p.proposed["edge"] == {
        "from": "collect",
        "to": "escalate_collect",
        "condition": "on_fail",  # collect has no retries: a failure exhausts it at once
    }
    assert p.evidence.counts["stuck"] >= 5 and p.evidence.counts["stalled"] >= 5


def test_false_activations_raise_the_threshold(setup: dict[str, Any]):
    p = _proposals(setup)["cleanup:raise-trigger-threshold"]
    assert (p.current, p.proposed) == (1, 2)
    assert p.evidence.counts["false_activations"] == 30
    assert p.evidence.counts["good_lost"] == 0
    assert all(m.startswith("tidy the garage") for m in p.evidence.messages)


def test_goals_the_library_missed_add_triggers_or_lower_a_threshold(setup: dict[str, Any]):
    found = _proposals(setup)
    added = found["backup:add-trigger"]
    assert added.proposed == ["back up", "backup", "database snapshot"]
    assert added.evidence.counts["would_activate"] == 3
    lowered = found["migrate:lower-trigger-threshold"]
    assert (lowered.current, lowered.proposed) == (2, 1)
    assert all(m.startswith("migrate the database to postgres") for m in lowered.evidence.messages)


def test_random_noise_gives_no_proposal(setup: dict[str, Any]):
    library = load_library(setup["library"])
    samples = session_samples(setup["unrelated"])
    assert len(samples) == 4 and len(suggest(samples)) == 1  # a new plan, not a trigger
    with open_store(setup["noise"]) as store:
        assert tune(store, library, samples=samples) == []


def test_the_tuned_copy_passes_check_and_the_original_is_unchanged(setup: dict[str, Any]):
    before = setup["library"].read_bytes()
    library = load_library(setup["library"])
    found = list(_proposals(setup).values())
    target = setup["root"] / "tuned.yaml"
    write_library(apply_proposals(library, found), target, source=library)
    assert setup["library"].read_bytes() == before
    tuned = load_library(target)
    assert load_library(setup["library"]).check() == []
    # No error, and not one new warning (a node left without retries leaves by on_fail).
    assert tuned.check() == []
    assert tuned["deploy"].graph.nodes["build"].max_retries == 2
    assert tuned["migrate"].graph.nodes["apply"].max_retries == 0
    assert tuned["migrate"].trigger_threshold == 1
    assert tuned["cleanup"].trigger_threshold == 2
    assert "database snapshot" in tuned["backup"].triggers
    assert tuned["report"].graph.nodes["escalate_collect"].type == "escalate"
    # Tuned runs start again from nothing: old runs are of other plan versions.
    with open_store(setup["url"]) as store:
        assert [p.kind for p in tune(store, tuned, samples=[])] == []
    result = CliRunner().invoke(app, ["check", str(target)])
    assert result.exit_code == 0, result.output


def test_write_refuses_the_library_itself_and_existing_files(setup: dict[str, Any], tmp_path: Path):
    library = load_library(setup["library"])
    with pytest.raises(InputError, match="the library itself"):
        write_library(library, setup["library"], source=library)
    target = tmp_path / "copy.yaml"
    target.write_text("keep me", encoding="utf-8")
    with pytest.raises(InputError, match="--force"):
        write_library(library, target)
    assert target.read_text(encoding="utf-8") == "keep me"
    folder = tmp_path / "plans"
    folder.mkdir()
    (folder / "a.json").write_bytes(setup["library"].read_bytes())
    from_folder = load_library(folder)
    with pytest.raises(InputError, match="inside the library folder"):
        write_library(from_folder, folder / "tuned.yaml")
    write_library(from_folder, tmp_path / "one.yaml")
    assert load_library(tmp_path / "one.yaml").ids() == from_folder.ids()


def test_a_proposal_that_does_not_fit_names_plan_and_node(setup: dict[str, Any]):
    library = load_library(setup["library"])
    wrong = Proposal(
        plan="deploy", node="nope", kind="raise-max-retries", current=1, proposed=2, reason="test"
    )
    with pytest.raises(InputError, match=r"'deploy'.*'nope'"):
        apply_proposals(library, [wrong])


def test_cli_json_and_write(setup: dict[str, Any]):
    target = setup["root"] / "cli-tuned.yaml"
    args = [
        "tune",
        "--store",
        setup["url"],
        "--library",
        str(setup["library"]),
        "--workspace",
        str(setup["workspace"]),
        "--json",
    ]
    only = ["--only", "deploy:build:raise-max-retries", "--write", str(target)]
    result = CliRunner().invoke(app, args + only)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert len(data["proposals"]) == 6
    first = data["proposals"][0]
    assert {"plan", "node", "kind", "current", "proposed", "evidence", "reason", "id"} <= set(first)
    assert data["applied"] == ["deploy:build:raise-max-retries"]
    # A proposal read back from --json is the same proposal.
    assert Proposal.model_validate(first).id == first["id"]
    tuned = load_library(target)
    assert tuned["deploy"].graph.nodes["build"].max_retries == 2
    assert tuned["cleanup"].trigger_threshold == 1  # not chosen, not applied
    again = CliRunner().invoke(app, args + only)
    assert again.exit_code == 2 and "--force" in again.output
    text = CliRunner().invoke(
        app, ["tune", "--store", setup["noise"], "--library", str(setup["library"])]
    )
    assert text.exit_code == 0 and "No proposal" in text.output


def test_cli_names_what_is_wrong_with_its_input(setup: dict[str, Any]):
    base = ["tune", "--store", setup["url"], "--library", str(setup["library"])]
    unknown = CliRunner().invoke(app, [*base, "--only", "deploy:nope"])
    assert unknown.exit_code == 2
    assert "--only deploy:nope: no such proposal" in unknown.output
    assert "deploy:build:raise-max-retries" in unknown.output
    wrong_name = CliRunner().invoke(app, [*base, "--write", str(setup["root"] / "tuned.txt")])
    assert wrong_name.exit_code == 2 and ".yaml, .yml or .json" in wrong_name.output
    itself = CliRunner().invoke(app, [*base, "--write", str(setup["library"]), "--force"])
    assert itself.exit_code == 2 and "the library itself" in itself.output


def test_runs_stored_before_messages_were_recorded_still_count():
    from waygraph.learning.runs import run_facts

    events = [
        {"type": "plan_activated", "triggers": ["tidy"], "score": 1},
        {"type": "node_entered", "node": "scan", "attempt": 1},
        {"type": "plan_expired", "node": "scan"},
    ]
    facts = run_facts("r1", {"plan": "cleanup", "status": "expired"}, events)
    assert facts.message is None and facts.triggers == ("tidy",)
    assert facts.false_activation
    # Sent back through a failure edge with no attempts left: one visit, exhausted.
    loop = [
        {"type": "node_entered", "node": "fix", "attempt": 1},
        {"type": "node_verified", "node": "fix", "outcome": "success", "attempt": 1},
        {"type": "node_entered", "node": "fix", "attempt": 2},
        {"type": "node_verified", "node": "fix", "outcome": "success", "attempt": 2},
        {"type": "node_entered", "node": "fix", "attempt": 2, "exhausted": True},
    ]
    (visit,) = run_facts("r2", {"plan": "p", "status": "escalated"}, loop).visits
    assert visit.exhausted and visit.success_attempt is None and visit.last_attempt == 2
