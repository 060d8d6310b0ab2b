"""``waygraph library suggest``: plans learned from groups of alike completed runs.

The runs are real: generated plans driven through the planning executor into
a store (with outputs that differ run to run around a stable marker), and
session plans driven through a SessionPlanner into a workspace.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from waygraph.check import check_plan
from waygraph.cli import app
from waygraph.learning import session_samples, store_samples, suggest
from waygraph.planning import Plan, PlanningAgent
from waygraph.sessions import SessionPlanner
from waygraph.store import Store, open_store

runner = CliRunner()


def backup_tools(n: int) -> list[Any]:
    async def dump(database: str) -> str:
        return f"pg_dump: wrote {1000 + n * 17} bytes of {database}\nDump complete"

    async def upload(path: str) -> dict[str, Any]:
        return {"uploaded": path, "etag": f"e{n}", "status": "stored offsite"}

    return [dump, upload]


def news_tools(n: int) -> list[Any]:
    async def fetch(feed: str) -> str:
        return f"fetched {20 + n} items from {feed}"

    async def summarise(text: str) -> str:
        return f"Summary ({n} paragraphs) ready"

    return [fetch, summarise]


def run_backup(store: Store, n: int, goal: str) -> str:
    plan = Plan(
        goal=goal,
        steps=[
            {
                "id": "d",
                "action": "dump",
                "description": "dump the database",
                "parameters": {"database": f"shop{n}"},
            },
            {
                "id": "u",
                "action": "upload",
                "description": "copy the dump offsite",
                "parameters": {"path": "${d}"},
                "dependencies": ["d"],
            },
        ],
    )
    result = asyncio.run(PlanningAgent(None, tools=backup_tools(n), store=store).execute_plan(plan))
    assert result.success
    return str(result.run_id)


def run_news(store: Store, n: int) -> str:
    plan = Plan(
        goal=f"summarise the morning news feeds {n}",
        steps=[
            {
                "id": "f",
                "action": "fetch",
                "description": "fetch the feeds",
                "parameters": {"feed": "world"},
            },
            {
                "id": "s",
                "action": "summarise",
                "description": "summarise them",
                "parameters": {"text": "${f}"},
                "dependencies": ["f"],
            },
        ],
    )
    result = asyncio.run(PlanningAgent(None, tools=news_tools(n), store=store).execute_plan(plan))
    assert result.success
    return str(result.run_id)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return open_store(f"sqlite:///{tmp_path / 'runs.db'}")


BACKUP_GOALS = [
    "back up the shop database nightly",
    "nightly backup of the shop database",
    "back up the shop database tonight",
]


def test_alike_runs_become_one_plan_per_group_with_checks_from_their_outputs(store: Store):
    backups = [run_backup(store, n, goal) for n, goal in enumerate(BACKUP_GOALS)]
    news = [run_news(store, n) for n in range(3)]
    found = suggest(store_samples(store), min_runs=3)
    assert len(found) == 2
    by_runs = {frozenset(s.runs): s for s in found}
    backup = by_runs[frozenset(backups)].plan
    assert frozenset(news) in by_runs
    steps = backup.steps()
    assert [(s.name, s.tool) for s in steps] == [
        ("dump the database", "dump"),
        ("copy the dump offsite", "upload"),
    ]
    # The line every dump printed; the text value every upload's JSON shared.
    assert steps[0].verify is not None and steps[0].verify.type == "output_contains"
    assert steps[0].verify.value == "Dump complete"
    assert steps[1].verify is not None and steps[1].verify.type == "output_contains"
    assert steps[1].verify.value == "stored offsite"
    assert "shop database" in backup.triggers
    assert backup.meta is not None
    assert sorted(backup.meta["suggested"]["runs"]) == sorted(f"dag:{r}" for r in backups)
    assert backup.meta["suggested"]["to_review"] == []
    assert not [p for p in check_plan(backup) if p.level == "error"]


def test_noise_gives_no_plan_and_min_runs_is_the_bar(store: Store):
    run_backup(store, 0, BACKUP_GOALS[0])
    run_backup(store, 1, BACKUP_GOALS[1])
    run_news(store, 0)
    assert suggest(store_samples(store), min_runs=3) == []
    found = suggest(store_samples(store), min_runs=2)
    assert [len(s.runs) for s in found] == [2]


def test_the_same_runs_give_the_same_suggestions(store: Store):
    for n, goal in enumerate(BACKUP_GOALS):
        run_backup(store, n, goal)
    first = [s.plan for s in suggest(store_samples(store))]
    again = [s.plan for s in suggest(store_samples(store))]
    assert first == again and len(first) == 1


def _session(planner: SessionPlanner, sid: str, goal: str, steps: list[str]) -> None:
    planner.on_user_message(sid, goal)
    declared = "\n".join(f"[Step] {s}" for s in steps)
    planner.after_model_reply(sid, f"{declared}\nStarting. [done]", 1)
    for _ in steps[1:]:
        planner.after_model_reply(sid, "Finished this one. [done]", 1)
    planner.after_model_reply(sid, "All done.", 0)  # no tool call: the plan completes


def test_session_plans_learn_steps_but_their_checks_are_left_to_review(tmp_path: Path):
    planner = SessionPlanner(tmp_path)
    for i in range(3):
        _session(
            planner,
            f"chat-{i}",
            f"Migrate the blog to Hugo, part {i}",
            ["Export the posts", "Convert the posts to Markdown", "Deploy the site"],
        )
    samples = session_samples(tmp_path)
    assert len(samples) == 3 and all(s.source == "session" for s in samples)
    (found,) = suggest(samples)
    steps = found.plan.steps()
    assert [s.name for s in steps] == [
        "Export the posts",
        "Convert the posts to Markdown",
        "Deploy the site",
    ]
    # A session step's text is the model's words: no evidence, so a person decides.
    assert all(s.verify is not None and s.verify.type == "manual" for s in steps)
    assert found.plan.meta is not None and len(found.plan.meta["suggested"]["to_review"]) == 3


def test_the_command_writes_plans_that_waygraph_check_accepts(store: Store, tmp_path: Path):
    for n, goal in enumerate(BACKUP_GOALS):
        run_backup(store, n, goal)
    url = store.url
    store.close()
    out = tmp_path / "suggested"
    result = runner.invoke(app, ["library", "suggest", "--store", url, "--output", str(out)])
    assert result.exit_code == 0, result.output
    (written,) = sorted(out.glob("*.yaml"))
    data = yaml.safe_load(written.read_text(encoding="utf-8"))
    assert data["id"] == written.stem and data["meta"]["suggested"]["runs"]
    checked = runner.invoke(app, ["check", str(written)])
    assert checked.exit_code == 0, checked.output
    again = runner.invoke(app, ["library", "suggest", "--store", url, "--output", str(out)])
    assert again.exit_code == 2 and "--force" in again.output
    as_json = runner.invoke(app, ["library", "suggest", "--store", url, "--json"])
    doc = json.loads(as_json.stdout)
    assert doc["runs_read"] == 3 and doc["suggestions"][0]["plan"]["id"] == data["id"]


def test_an_empty_store_says_why_nothing_was_suggested(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    result = runner.invoke(app, ["library", "suggest", "--store", url])
    assert result.exit_code == 0
    assert "No suggestion: 0 completed run(s) read" in result.output


NAMES = {
    "name": "Nightly database backup",
    "description": "Dump the shop database and keep a copy offsite.",
    "steps": [
        {"name": "Dump the database", "description": "pg_dump to a file."},
        {"name": "Upload the dump", "description": "Copy it to offsite storage."},
    ],
}


def suggest_named(store_url: str, llm: str) -> Any:
    """``waygraph library suggest --json`` with the scripted model at ``llm``."""
    args = ["library", "suggest", "--store", store_url, "--json", "--llm", llm]
    return runner.invoke(app, [*args, "--model", "scripted"])


def test_a_model_names_the_plan_and_steps_but_the_structure_stays_the_runs(
    store: Store, tmp_path: Path
):
    from waygraph.testing import ScriptedChatServer

    for n, goal in enumerate(BACKUP_GOALS):
        run_backup(store, n, goal)
    url = store.url
    store.close()
    plain = json.loads(runner.invoke(app, ["library", "suggest", "--store", url, "--json"]).stdout)[
        "suggestions"
    ][0]["plan"]
    with ScriptedChatServer([json.dumps(NAMES)]) as server:
        result = suggest_named(url, server.base_url)
        asked = json.loads(server.requests[-1]["messages"][1]["content"])
    assert result.exit_code == 0, result.output
    named = json.loads(result.stdout)["suggestions"][0]["plan"]
    assert named["name"] == "Nightly database backup"
    assert [s["name"] for s in named["steps"]] == ["Dump the database", "Upload the dump"]
    assert [s["description"] for s in named["steps"]] == [
        "pg_dump to a file.",
        "Copy it to offsite storage.",
    ]
    # What the runs decided is untouched: id, triggers, actions, tools, checks, provenance.
    for key in ("id", "triggers", "meta"):
        assert named[key] == plain[key]
    for mine, theirs in zip(named["steps"], plain["steps"], strict=True):
        assert (mine["action"], mine["tool"], mine["verify"]) == (
            theirs["action"],
            theirs["tool"],
            theirs["verify"],
        )
    assert [s["tool"] for s in asked["steps"]] == ["dump", "upload"]


def test_an_answer_that_is_not_the_json_keeps_the_runs_names(store: Store):
    from waygraph.testing import ScriptedChatServer

    for n, goal in enumerate(BACKUP_GOALS):
        run_backup(store, n, goal)
    url = store.url
    store.close()
    wrong = {**NAMES, "steps": NAMES["steps"][:1]}
    for reply in ("Sure! Here are some names: Backup, Upload.", json.dumps(wrong)):
        with ScriptedChatServer([reply]) as server:
            result = suggest_named(url, server.base_url)
        assert result.exit_code == 0, result.output
        plan = json.loads(result.stdout)["suggestions"][0]["plan"]
        assert [s["name"] for s in plan["steps"]] == ["dump the database", "copy the dump offsite"]
        assert "kept the names from the runs" in result.stderr


def test_llm_needs_a_model(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'e.db'}"
    result = runner.invoke(app, ["library", "suggest", "--store", url, "--llm", "http://x/v1"])
    assert result.exit_code == 2 and "--llm URL and --model NAME go together" in result.output
