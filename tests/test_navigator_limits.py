"""Issue 13 for the Navigator: no silent drops under contention, clear errors for
bad input in strict mode, bounded sizes, and trimmed projections on every path."""

from __future__ import annotations

import json
import multiprocessing
import threading
from pathlib import Path
from typing import Any

import pytest

from waygraph import engine
from waygraph.errors import Conflict, InputError, WaygraphError
from waygraph.navigator import CACHE_SESSIONS, MAX_ID_CHARS, Navigator

HOLD = {
    "plans": {
        "hold": {
            "triggers": ["hold on"],
            "trigger_threshold": 1,
            "stale_after_turns": 100000,
            "repeat_limit": 0,
            "steps": [
                {
                    "name": "never passes",
                    "verify": {"type": "output_contains", "value": "zzz"},
                    "on_fail": "warn",
                }
            ],
        }
    }
}
WRITERS = 16
TURNS = 15


@pytest.fixture
def hold_library(tmp_path: Path) -> str:
    path = tmp_path / "hold.json"
    path.write_text(json.dumps(HOLD))
    return str(path)


def _writer(url: str, lib: str, session: str, worker: int, count: int, results: Any) -> None:
    nav = Navigator(lib, store=url)  # not strict: a dropped turn must say so in `error`
    errors = 0
    for i in range(count):
        g = nav.turn(session, tool_output="nope", observation_id=f"w{worker}-{i}")
        if g.error is not None:
            errors += 1
        elif g.run is None:
            errors += 1000  # silent drop: no error and no record
    nav.close()
    results.put(errors)


def _contend(url: str, lib: str, *, processes: bool) -> tuple[int, dict[str, Any]]:
    # A session of its own: the PostgreSQL schema is shared by the whole test run.
    session = f"shared-{'processes' if processes else 'threads'}"
    with Navigator(lib, store=url, strict=True) as starter:
        starter.turn(session, user_message="hold on")
    if processes:
        ctx = multiprocessing.get_context("spawn")
        results: Any = ctx.Queue()
        workers: list[Any] = [
            ctx.Process(target=_writer, args=(url, lib, session, w, TURNS, results))
            for w in range(WRITERS)
        ]
    else:
        import queue

        results = queue.Queue()
        workers = [
            threading.Thread(target=_writer, args=(url, lib, session, w, TURNS, results))
            for w in range(WRITERS)
        ]
    for w in workers:
        w.start()
    errors = sum(results.get(timeout=120) for _ in workers)
    for w in workers:
        w.join(60)
    # Closed: a PostgreSQL pool left to the garbage collector is joined from
    # one of its own threads ("cannot join current thread").
    with Navigator(lib, store=url) as reader:
        state = reader.state(session)
    assert state is not None
    return errors, state


@pytest.mark.slow
@pytest.mark.alone
@pytest.mark.parametrize("processes", [False, True], ids=["threads", "processes"])
def test_sixteen_writers_on_one_sqlite_session_lose_nothing(
    tmp_path: Path, hold_library: str, processes: bool
):
    url = f"sqlite:///{tmp_path / 'c.db'}"
    errors, state = _contend(url, hold_library, processes=processes)
    assert errors == 0
    assert state["attempts"] == 1 + WRITERS * TURNS


@pytest.mark.slow
@pytest.mark.services
@pytest.mark.alone
@pytest.mark.parametrize("processes", [False, True], ids=["threads", "processes"])
def test_sixteen_writers_on_one_postgres_session_lose_nothing(
    postgres_url: str, hold_library: str, processes: bool
):
    errors, state = _contend(postgres_url, hold_library, processes=processes)
    assert errors == 0
    assert state["attempts"] == 1 + WRITERS * TURNS


def test_a_turn_that_keeps_losing_reports_it_instead_of_returning_nothing(hold_library: str):
    nav = Navigator(hold_library, store="memory://", conflict_timeout=0.05)
    nav.turn("s", user_message="hold on")

    def always_conflict(*args: Any, **kwargs: Any) -> int:
        raise Conflict("another writer committed first")

    nav.store.commit_all = always_conflict  # type: ignore[method-assign]
    g = nav.turn("s", tool_output="nope", observation_id="x")
    assert g.error is not None and "was not applied" in g.error
    assert g.run is None and g.text is None
    strict = Navigator(hold_library, store="memory://", strict=True, conflict_timeout=0.05)
    strict.turn("s", user_message="hold on")
    strict.store.commit_all = always_conflict  # type: ignore[method-assign]
    with pytest.raises(Conflict, match=r"committed first for 0\.05s"):
        strict.turn("s", tool_output="nope")


def test_a_plain_turn_has_no_error(hold_library: str):
    nav = Navigator(hold_library, store="memory://")
    assert nav.turn("s", user_message="hold on").error is None


# ------------------------------------------------------------------ bad input, strict mode

LONG = "x" * (MAX_ID_CHARS + 1)
BAD_TURNS: list[tuple[str, dict[str, Any]]] = [
    ("session None", {"session_id": None}),
    ("session int", {"session_id": 7}),
    ("session empty", {"session_id": ""}),
    ("session NUL", {"session_id": "a\x00b"}),
    ("session surrogate", {"session_id": "a\udc80"}),
    ("session too long", {"session_id": LONG}),
    ("message bytes", {"user_message": b"fix bug"}),
    ("output int", {"tool_output": 5}),
    ("exit code str", {"tool_output": "x", "exit_code": "1"}),
    ("exit code bool", {"tool_output": "x", "exit_code": True}),
    ("exit code float", {"tool_output": "x", "exit_code": 1.5}),
    ("observation id too long", {"tool_output": "x", "observation_id": LONG}),
    ("observation id int", {"tool_output": "x", "observation_id": 3}),
    ("tool name too long", {"tool_output": "x", "tool_name": LONG}),
    ("domain list", {"user_message": "fix bug", "domain": ["bugfix"]}),
    ("allowed plans str", {"user_message": "fix bug", "allowed_plans": "bugfix_workflow"}),
    ("allowed plans int", {"user_message": "fix bug", "allowed_plans": 3}),
    ("allowed plans of ints", {"user_message": "fix bug", "allowed_plans": [1]}),
    ("bad source", {"tool_output": "x", "source": "robot"}),
]


@pytest.mark.parametrize(("case", "kwargs"), BAD_TURNS, ids=[c for c, _ in BAD_TURNS])
def test_strict_mode_raises_a_waygraph_error_for_every_bad_input(case: str, kwargs: dict[str, Any]):
    nav = Navigator(store="memory://", strict=True)
    nav.turn("s", user_message="I need to fix a bug in the login module")
    kwargs = dict(kwargs)
    session = kwargs.pop("session_id", "s")
    with pytest.raises(InputError) as info:
        nav.turn(session, **kwargs)
    assert isinstance(info.value, WaygraphError)
    # The session is untouched.
    assert nav.state("s")["turn"] == 1


@pytest.mark.parametrize(("case", "kwargs"), BAD_TURNS, ids=[c for c, _ in BAD_TURNS])
def test_lenient_mode_reports_bad_input_and_changes_nothing(case: str, kwargs: dict[str, Any]):
    nav = Navigator(store="memory://")
    nav.turn("s", user_message="I need to fix a bug in the login module")
    kwargs = dict(kwargs)
    session = kwargs.pop("session_id", "s")
    g = nav.turn(session, **kwargs)
    if case == "bad source":
        assert g.error is None  # a warning, and the result counts as a tool's
    else:
        assert g.error is not None and g.run is None
        assert nav.state("s")["turn"] == 1


def test_an_unexpected_error_in_strict_mode_is_a_waygraph_error(hold_library: str):
    nav = Navigator(hold_library, store="memory://", strict=True)
    nav.turn("s", user_message="hold on")

    def broken(*args: Any, **kwargs: Any) -> int:
        raise RuntimeError("disk on fire")

    nav.store.commit_all = broken  # type: ignore[method-assign]
    with pytest.raises(WaygraphError, match="disk on fire"):
        nav.turn("s", tool_output="nope")


# ------------------------------------------------------------------ sizes


def test_the_session_cache_is_bounded(hold_library: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr("waygraph.guided.sessions.CACHE_SESSIONS", 50)
    nav = Navigator(hold_library, store="memory://")
    for i in range(200):
        nav.turn(f"s{i}", user_message="hold on")
    assert len(nav._cache) == 50
    # Evicted sessions still work: they are read back from the store.
    g = nav.turn("s0", tool_output="nope")
    assert g.run["attempts"] == 2
    assert CACHE_SESSIONS >= 1000


def test_a_huge_user_message_is_matched_on_its_start(hold_library: str):
    nav = Navigator(hold_library, store="memory://")
    g = nav.turn("s", user_message="hold on " + "word " * 2_000_000)
    assert g.run is not None and g.run["plan_id"] == "hold"


def test_a_huge_tool_output_keeps_the_record_small(hold_library: str):
    nav = Navigator(hold_library, store="memory://")
    nav.turn("s", user_message="hold on")
    g = nav.turn("s", tool_output="y" * 5_000_000, tool_args="z" * 100_000)
    assert len(json.dumps(g.run)) < 20_000


# ------------------------------------------------------------------ projections


def test_reset_keeps_the_event_projection_trimmed(hold_library: str):
    nav = Navigator(hold_library, store="memory://", strict=True)
    nav.turn("s", user_message="hold on")
    for i in range(engine.MAX_EVENTS + 5):
        nav.turn("s", tool_output="nope", observation_id=f"o{i}")
    key = nav.store.current("s")
    nav.reset("s")
    record = nav.store.get(key).data
    assert record["status"] == "aborted"
    assert len(record["events"]) == engine.MAX_EVENTS
    assert record["events"][-1]["type"] == "plan_aborted"


def test_a_library_that_does_not_load_leaves_no_store_open(tmp_path):
    # The library is loaded before the store is opened: nothing to close, no file made.
    db = tmp_path / "runs.db"
    with pytest.raises(WaygraphError):
        Navigator(tmp_path / "no-such-library", store=f"sqlite:///{db}", strict=True)
    assert not db.exists()
