"""``waygraph sessions`` over a real store: newest first, every stored run, any record kind."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli_helpers import wg
from waygraph.navigator import Navigator
from waygraph.store import open_store

PLAN = "bugfix_workflow"


def _rows(out) -> list[list[str]]:
    assert out.returncode == 0, out.stderr + out.stdout
    return [
        [cell.strip() for cell in line.split("│")[1:-1]]
        for line in out.stdout.splitlines()
        if line.startswith("│")
    ]


def _header(out) -> list[str]:
    line = next(line for line in out.stdout.splitlines() if line.startswith("┃"))
    return [cell.strip() for cell in line.split("┃")[1:-1]]


def test_list_is_newest_first_with_when_each_was_updated(tmp_path: Path):
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    with Navigator(store=store, strict=True) as nav:
        nav.start("alpha", PLAN)
        nav.start("beta", PLAN)
    out = wg("sessions", "list", "--store", store, "--json")
    rows = json.loads(out.stdout)["sessions"]
    assert json.loads(out.stdout)["store"] == store  # which store was read
    # beta started last: it comes first, though alpha sorts first by id.
    assert [r["session"] for r in rows] == ["beta", "alpha"]
    assert rows[0]["updated_at"] > rows[1]["updated_at"]
    assert isinstance(rows[0]["updated_at"], float) and rows[0]["kind"] == "guided"
    with Navigator(store=store, strict=True) as nav:
        nav.turn("alpha", tool_output="Traceback: boom", observation_id="o1")
    out = wg("sessions", "list", "--store", store)
    assert _header(out) == [
        "session",
        "plan",
        "status",
        "current node",
        "attempts",
        "turn",
        "updated",
    ]
    table = _rows(out)
    assert [r[0] for r in table] == ["alpha", "beta"]
    assert table[0][2:4] == ["running", "isolate"]
    assert all(r[-1].endswith(" s ago") for r in table)


def test_runs_a_reset_kept_are_listed_shown_and_replayed(tmp_path: Path):
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    with Navigator(store=store, strict=True) as nav:
        old = nav.start("s", PLAN).run["run_id"]
        nav.turn("s", tool_output="Traceback: boom", observation_id="o1")
    out = wg("sessions", "reset", "s", "--store", store)
    assert "sessions list --all" in out.stdout
    with Navigator(store=store, strict=True) as nav:
        new = nav.start("s", PLAN).run["run_id"]

    current = json.loads(wg("sessions", "list", "--store", store, "--json").stdout)["sessions"]
    assert [(r["run"], r["current"]) for r in current] == [(new, True)]
    every = json.loads(wg("sessions", "list", "--all", "--store", store, "--json").stdout)
    assert [(r["run"], r["status"]) for r in every["sessions"]] == [
        (new, "running"),
        (old, "aborted"),
    ]
    out = wg("sessions", "list", "--all", "--store", store)
    assert _header(out)[:2] == ["session", "run"]
    assert [r[1] for r in _rows(out)] == [new, old]

    shown = wg("sessions", "show", "s", "--run", old, "--store", store, "--json")
    record = json.loads(shown.stdout)
    assert (record["run_id"], record["status"], record["current_node"]) == (
        old,
        "aborted",
        "isolate",
    )
    shown = wg("sessions", "show", "s", "--run", old, "--store", store)
    assert shown.returncode == 0, shown.stderr
    assert "is aborted" in shown.stdout and "Path: start → reproduce → isolate" in shown.stdout
    events = json.loads(
        wg("sessions", "events", "s", "--run", old, "--store", store, "--json").stdout
    )
    assert events["run"] == old
    assert [e["type"] for e in events["events"]][-1] == "plan_aborted"
    assert events["events"][-1]["reason"] == "reset"


def test_list_pages_the_sessions_newest_first(tmp_path: Path):
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    with open_store(store) as opened:
        for i in range(7):
            opened.commit(
                f"r{i}",
                {"status": "running"},
                0,
                [],
                session=f"s{i}",
                status="running",
                make_current=True,
            )

    def page(*args: str) -> dict:
        out = wg("sessions", "list", "--store", store, "--json", *args)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    first = page("--limit", "3")
    assert [r["session"] for r in first["sessions"]] == ["s6", "s5", "s4"]
    assert (first["page"], first["limit"], first["more"]) == (1, 3, True)
    third = page("--limit", "3", "--page", "3")
    assert ([r["session"] for r in third["sessions"]], third["more"]) == (["s0"], False)
    assert len(page("--limit", "0")["sessions"]) == 7
    assert page("--limit", "3", "--page", "9")["sessions"] == []
    out = wg("sessions", "list", "--store", store, "--limit", "3", "--page", "2")
    assert [r[0] for r in _rows(out)] == ["s3", "s2", "s1"]
    assert "Rows 4-6, newest first; `--page 3` shows the next 3." in out.stdout
    out = wg("sessions", "list", "--store", store, "--limit", "3", "--page", "9")
    assert "Page 9 is past the last row." in out.stdout
    bad = wg("sessions", "list", "--store", store, "--page", "0")
    assert bad.returncode == 2 and "--page" in bad.stderr


def test_a_session_lists_its_current_run_when_an_older_run_changed_later(tmp_path: Path):
    # The newest guided record of the session is not the run it points to:
    # the row is still the current run, found through the pointer.
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    with open_store(store) as opened:
        opened.commit("old", {"status": "running"}, 0, [], session="s", status="running")
        opened.commit(
            "new", {"status": "running"}, 0, [], session="s", status="running", make_current=True
        )
        opened.commit("old", {"status": "aborted"}, 1, [], session="s", status="aborted")
    rows = json.loads(wg("sessions", "list", "--store", store, "--json").stdout)["sessions"]
    assert [(r["run"], r["current"]) for r in rows] == [("new", True)]


def test_a_missing_run_names_the_runs_there_are(tmp_path: Path):
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    with Navigator(store=store, strict=True) as nav:
        run = nav.start("s", PLAN).run["run_id"]
        nav.reset("s")
    out = wg("sessions", "show", "s", "--store", store)
    assert out.returncode == 1
    assert "No current run for session 's'" in out.stdout
    assert f"--run {run}" in out.stdout
    out = wg("sessions", "events", "s", "--run", "run_nope", "--store", store)
    assert out.returncode == 1
    assert "No run 'run_nope' in session 's'" in out.stdout and run in out.stdout
    out = wg("sessions", "show", "other", "--run", run, "--store", store)
    assert out.returncode == 1 and "it belongs to session 's'" in out.stdout
    assert "Traceback" not in out.stderr


def test_records_of_other_kinds_are_rows_with_their_kind(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    with Navigator(store=url, strict=True) as nav:
        nav.start("s", PLAN)
    with open_store(url) as store:
        store.commit(
            "dag_1",
            {"status": "running", "goal": "ship it"},
            0,
            [],
            kind="dag",
            session="p",
            status="running",
        )
    out = wg("sessions", "list", "--store", url)
    assert "kind" in _header(out)
    table = {r[0]: r for r in _rows(out)}
    assert table["p"][1] == "dag" and table["s"][1] == "guided"
    # A session with no guided run shows its newest record, named or not.
    for named in ((), ("--run", "dag_1")):
        out = wg("sessions", "show", "p", *named, "--store", url)
        assert out.returncode == 0, out.stderr
        assert "dag dag_1 of session p: status running" in out.stdout
        assert '"goal": "ship it"' in out.stdout
