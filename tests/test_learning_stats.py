"""``waygraph stats``: statistics over stored guided runs, computed in the store.

The fixture drives the library's bugfix plan through the Navigator, 235 runs
with scripted tool results and patterned failures (the same failing test
line, the empty output of a bug that does not show), one run finishing per
minute of a fake clock, and one log_investigation run started by id, into
memory, file, SQLite and PostgreSQL stores; the figures below were worked
out from the scripts, and every store must give exactly them.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli_helpers import wg
from waygraph import Navigator
from waygraph.learning import Statistics, plan_stats
from waygraph.store import Store
from waygraph.store.files import FileStore
from waygraph.store.memory import MemoryStore
from waygraph.store.sqlite import SQLiteStore

#: The command every tool result reports: the bound test steps of the shipped
#: plans count only a test runner's evidence (issue 32).
RUNNER = "python -m pytest -q"

# Its module-scoped fixture takes seconds to build: one worker runs the whole module
# (make test distributes whole modules, --dist loadfile), so the fixture is built once;
# the group does so under --dist loadgroup where xdist can tag node ids (pytest < 9).
pytestmark = pytest.mark.xdist_group("learning_stats")

BUG = "I need to fix a bug in the login module"
T0 = 1_800_000_000.0  # a whole minute
FAILED_LINE = "FAILED tests/test_login.py::test_ok - AssertionError: 401 != 200"

OK = {
    "reproduce": ("Traceback (most recent call last):\nKeyError: 'user'", 1),
    "isolate": ("src/login.py:42 reads user before the check", 0),
    "fix": (" src/login.py | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)", 0),
    "test": ("3 passed in 0.1s", 0),
    "suite": ("120 passed in 2.0s", 0),
}
TEST_FAILS = (f"{FAILED_LINE}\n1 failed, 2 passed", 1)
NOTHING = ("", 0)

#: name -> (how many runs, the tool results in order, what ends the run)
SCRIPTS: dict[str, tuple[int, list[tuple[str, int]], str | None]] = {
    # Straight through: 5 results.
    "clean": (80, [OK["reproduce"], OK["isolate"], OK["fix"], OK["test"], OK["suite"]], None),
    # The test fails once, a second fix passes: 7 results.
    "retry": (
        60,
        [OK["reproduce"], OK["isolate"], OK["fix"], TEST_FAILS, OK["fix"], OK["test"], OK["suite"]],
        None,
    ),
    # The bug never shows: reproduce and gather_context print nothing, escalate.
    "no_repro": (30, [NOTHING, NOTHING], None),
    # Three fixes, the test fails after each: escalate_stuck.
    "stuck": (
        20,
        [OK["reproduce"], OK["isolate"], *[OK["fix"], TEST_FAILS] * 3],
        None,
    ),
    # Activated by mistake: reset at once (a suspected false activation).
    "reset": (20, [], "reset"),
    # Activated by mistake: the model chats until the plan expires (also suspected).
    "expire": (10, [], "expire"),
    # Reset after real progress: aborted, but not suspected.
    "reset_later": (10, [OK["reproduce"]], "reset"),
    # Still running when the statistics are read.
    "running": (5, [OK["reproduce"]], "leave"),
}


class Clock:
    """The stores' clock: each run finishes in its own minute."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


def drive_order() -> list[str]:
    """The scripts in the order :func:`drive` runs them: round robin until each is used up."""
    pending = {name: SCRIPTS[name][0] for name in SCRIPTS}
    order = []
    while any(pending.values()):
        for name in SCRIPTS:
            if pending[name]:
                order.append(name)
                pending[name] -= 1
    return order


def drive(store: Store, clock: Clock) -> None:
    """Every script's runs, one session each, one finishing per minute."""
    nav = Navigator(store=store, strict=True)
    order = drive_order()
    for i, name in enumerate(order):
        clock.now = T0 + 60 * i + 1
        session = f"{name}-{i}"
        _, results, end = SCRIPTS[name]
        nav.turn(session, user_message=BUG, domain="bugfix")
        for output, code in results:
            nav.turn(session, tool_output=output, exit_code=code, tool_args=RUNNER)
        if end == "reset":
            nav.reset(session)
        elif end == "expire":
            for _ in range(16):  # stale_after_turns: 15
                nav.turn(session, user_message="thanks, and how is the weather?")
    # One run started by id (no message to record), reset: suspected, message unknown.
    clock.now = T0 + 60 * len(order) + 1
    nav.start("by-id", "log_investigation")
    nav.reset("by-id")


def _memory(tmp: Path, clock: Clock) -> Store:
    return MemoryStore(clock=clock)


def _files(tmp: Path, clock: Clock) -> Store:
    return FileStore(tmp / "files", clock=clock)


def _sqlite(tmp: Path, clock: Clock) -> Store:
    return SQLiteStore(tmp / "stats.db", clock=clock)


@pytest.fixture(scope="module")
def postgres_stats_url(postgres_url: str) -> Iterator[str]:
    """A schema of this module's own: the statistics read every run in the store."""
    import psycopg

    from waygraph.store.postgres import split_schema

    conninfo, schema = split_schema(postgres_url)
    own = f"{schema}_stats_{uuid.uuid4().hex[:6]}"
    yield postgres_url.replace(f"schema={schema}", f"schema={own}")
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{own}" CASCADE')


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Statistics]:
    """The statistics of the driven runs from each local store, read at the end of the drive."""
    found = {}
    makers: dict[str, Callable[[Path, Clock], Store]] = {
        "memory": _memory,
        "files": _files,
        "sqlite": _sqlite,
    }
    for name, make in makers.items():
        clock = Clock()
        with make(tmp_path_factory.mktemp(name), clock) as store:
            drive(store, clock)
            found[name] = plan_stats(store, now=clock.now + 30)
    return found


def comparable(stats: Statistics) -> dict[str, Any]:
    """The statistics without the run ids, which each drive makes anew."""
    data = stats.model_dump(mode="json")
    for a in data["suspected_false_activations"]:
        a["run"] = "run_*"
    return data


STATS_TABLES = ("stats_runs", "stats_values", "stats_nodes", "stats_lines", "stats_counted")
RUNS = sum(count for count, _, end in SCRIPTS.values() if end != "leave")


def test_the_plan_figures_are_exact(stores: dict[str, Statistics]) -> None:
    stats = stores["sqlite"]
    assert [p.plan for p in stats.plans] == ["bugfix_workflow", "log_investigation"]
    bugfix = stats.plans[0]
    assert bugfix.runs == RUNS == 230
    assert bugfix.running == 5
    assert bugfix.counts == {
        "completed": 140,
        "escalated": 50,
        "expired": 10,
        "aborted": 30,
        "failed": 0,
    }
    assert bugfix.shares["completed"] == round(140 / 230, 4)
    # 80 runs took 5 results, 60 took 7: the median of 140 values is 5 then
    # 7 at positions 69 and 70 (0-based), so 5 and 5... no: sorted, 80 fives first.
    assert bugfix.median_tool_results == 5.0
    assert bugfix.median_turns == 5.0
    assert bugfix.false_activations == 30  # 20 reset at once + 10 expired
    logs = stats.plans[1]
    assert (logs.runs, logs.counts["aborted"], logs.false_activations) == (1, 1, 1)
    assert stats.false_activations == 31


def test_the_node_figures_are_exact(stores: dict[str, Statistics]) -> None:
    nodes = {n.node: n for n in stores["sqlite"].plans[0].nodes}
    test = nodes["test"]
    # Results at test: clean 80x1 pass; retry 60x(1 fail + 1 pass); stuck 20x3 fails.
    assert (test.attempts, test.failures) == (80 + 120 + 60, 60 + 60)
    assert test.runs == 80 + 60 + 20
    assert test.failure_rate == round(120 / 260, 4)
    assert test.mean_attempts == round(260 / 160, 4)
    assert [(o.line, o.count) for o in test.failing_outputs] == [(FAILED_LINE, 120)]
    fix = nodes["fix"]
    assert (fix.runs, fix.attempts, fix.failures) == (160, 80 + 120 + 60, 0)
    reproduce = nodes["reproduce"]
    # Every run but the by-id one entered reproduce; 30 printed nothing.
    assert reproduce.runs == 235 - 5
    assert [(o.line, o.count) for o in reproduce.failing_outputs] == [("(no output)", 30)]
    assert nodes["escalate_no_repro"].escalations == 30
    assert nodes["escalate_stuck"].escalations == 20
    # Most failures first.
    assert [n.node for n in stores["sqlite"].plans[0].nodes][:3] == [
        "test",
        "gather_context",
        "reproduce",
    ]


def test_suspected_false_activations_carry_the_activating_message(
    stores: dict[str, Statistics],
) -> None:
    stats = stores["sqlite"]
    listed = stats.suspected_false_activations
    assert len(listed) == 20  # the newest 20 of 31
    assert listed[0].plan == "log_investigation" and listed[0].message is None
    assert {a.message for a in listed[1:]} == {BUG}
    assert {a.status for a in listed[1:]} == {"aborted", "expired"}
    assert [a.finished_at for a in listed] == sorted((a.finished_at for a in listed), reverse=True)


def test_the_trend_splits_the_period_into_equal_buckets(stores: dict[str, Statistics]) -> None:
    bugfix = stores["sqlite"].plans[0]
    # 236 minutes, counted per hour (the period is longer than 4 hours): 4 buckets of an hour.
    assert [(b.start, b.end) for b in bugfix.trend] == [
        (T0 + 3600 * i, T0 + 3600 * (i + 1)) for i in range(4)
    ]
    # One run a minute; the 5 still running started in the first hour (round robin).
    assert [b.runs for b in bugfix.trend] == [55, 60, 60, 55]
    assert sum(b.runs for b in bugfix.trend) == 230
    assert all(sum(b.counts.values()) == b.runs for b in bugfix.trend)


def test_every_store_gives_the_same_figures(stores: dict[str, Statistics]) -> None:
    expected = comparable(stores["sqlite"])
    assert comparable(stores["memory"]) == expected
    assert comparable(stores["files"]) == expected


def test_postgres_gives_the_same_figures_and_counts_old_runs_on_open(
    postgres_stats_url: str, stores: dict[str, Statistics]
) -> None:
    import psycopg

    from waygraph.store.postgres import PostgresStore, split_schema

    clock = Clock()
    with PostgresStore(postgres_stats_url, clock=clock) as store:
        drive(store, clock)
        found = plan_stats(store, now=clock.now + 30)
    assert comparable(found) == comparable(stores["sqlite"])
    # As waygraph left the tables before schema 3: no statistics tables.
    conninfo, schema = split_schema(postgres_stats_url)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        for table in STATS_TABLES:
            conn.execute(f'DROP TABLE "{schema}".{table}')
        conn.execute(f"UPDATE \"{schema}\".meta SET value = '2' WHERE name = 'schema_version'")
    with PostgresStore(postgres_stats_url) as store:
        assert comparable(plan_stats(store, now=clock.now + 30)) == comparable(found)


def test_since_keeps_the_runs_finished_from_that_minute(tmp_path: Path) -> None:
    clock = Clock()
    found = []
    for make in (_memory, _sqlite):
        with make(tmp_path / make.__name__, clock) as store:
            drive(store, clock)
            now = clock.now + 30
            # The last 100 minutes: runs 135..234 and the by-id run.
            stats = plan_stats(store, since=now - 100 * 60, now=now)
            assert stats.since == T0 + 60 * 135
            assert sum(p.runs for p in stats.plans) == 101
            bugfix = stats.plans[0]
            assert bugfix.running == 0  # the running ones were last written earlier
            # Counted per minute: 101 minutes in 8 buckets of 13.
            assert [b.end - b.start for b in bugfix.trend] == [13 * 60.0] * 8
            assert sum(b.runs for b in bugfix.trend) == bugfix.runs
            only = plan_stats(store, plan="log_investigation", now=now)
            assert [p.plan for p in only.plans] == ["log_investigation"]
            # A period of 5 hours starting mid-hour: minutes, then hours.
            long = plan_stats(store, since=now - 5 * 3600, now=now)
            assert sum(p.runs for p in long.plans) == 1 + sum(
                1 for i in range(235) if i >= 235 - 300 and _script(i) != "running"
            )
            found.append(comparable(long))
    assert found[0] == found[1]


def _script(i: int) -> str:
    """The script of the ``i``-th run of :func:`drive`."""
    return drive_order()[i]


def test_a_rewound_run_is_counted_once(tmp_path: Path) -> None:
    clock = Clock()
    with SQLiteStore(tmp_path / "rewind.db", clock=clock) as store:
        nav = Navigator(store=store, strict=True)
        nav.turn("s", user_message=BUG, domain="bugfix")
        for output, code in SCRIPTS["stuck"][1]:
            nav.turn("s", tool_output=output, exit_code=code, tool_args=RUNNER)
        assert plan_stats(store).plans[0].counts["escalated"] == 1
        nav.rewind("s")  # back to cause_found: running again, no longer counted
        before = plan_stats(store).plans[0]
        assert (before.runs, before.running) == (0, 1)
        for output, code in SCRIPTS["clean"][1][2:]:
            nav.turn("s", tool_output=output, exit_code=code, tool_args=RUNNER)
        after = plan_stats(store).plans[0]
        assert (after.runs, after.counts["completed"], after.running) == (1, 1, 0)
        now = clock.now
        assert comparable(plan_stats(store, now=now)) == comparable(
            plan_stats(_scan(store), now=now)
        )


def _scan(store: Store) -> Store:
    """The same store read by the default scan, not the counters."""

    class Scan:
        def __getattr__(self, name: str) -> Any:
            return getattr(store, name)

        def run_tallies(self, **kwargs: Any) -> Any:
            return Store.run_tallies(store, **kwargs)

    return Scan()  # type: ignore[return-value]


def test_a_schema_2_file_gets_its_finished_runs_counted_on_open(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    clock = Clock()
    with SQLiteStore(path, clock=clock) as store:
        drive(store, clock)
        expected = comparable(plan_stats(store, now=clock.now + 30))
    # As waygraph wrote the file before schema 3: no statistics tables.
    conn = sqlite3.connect(path)
    for table in STATS_TABLES:
        conn.execute(f"DROP TABLE {table}")
    conn.execute("UPDATE meta SET value = '2' WHERE name = 'schema_version'")
    conn.commit()
    conn.close()
    with SQLiteStore(path) as store:
        assert comparable(plan_stats(store, now=clock.now + 30)) == expected


def test_the_cli_prints_the_model_as_json_and_tables(tmp_path: Path) -> None:
    clock = Clock()
    with SQLiteStore(tmp_path / "cli.db", clock=clock) as store:
        drive(store, clock)
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    out = wg("stats", "--store", url, "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert Statistics.model_validate(data).plans[0].counts["completed"] == 140
    out = wg("stats", "--store", url, "--plan", "bugfix_workflow")
    assert out.returncode == 0, out.stderr
    assert "Nodes of bugfix_workflow" in out.stdout and FAILED_LINE[:40] in out.stdout
    assert "Suspected false activations (30" in out.stdout


def test_the_cli_refuses_a_bad_since_and_names_an_unknown_plan(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    out = wg("stats", "--store", url, "--since", "yesterday")
    assert out.returncode == 2
    assert "--since 'yesterday' is not a duration" in out.stderr
    out = wg("stats", "--store", url, "--plan", "nope", "--since", "7d")
    assert out.returncode == 2
    assert "no finished or running runs of plan 'nope' in the last 7d" in out.stderr
