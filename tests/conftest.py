"""Shared fixtures: external services tests may need.

A test that needs a service asks for it through :func:`require_service` (or a
fixture built on it, like ``postgres_url``). When the service is unreachable
the test is skipped with the reason, so a laptop without PostgreSQL still runs
the suite; with ``WAYGRAPH_REQUIRE_SERVICES=1`` (CI) it fails instead, so a
missing service can never turn into silently skipped coverage.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import shutil
import socket
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn
from urllib.parse import urlsplit

import pytest
from hypothesis import settings

if TYPE_CHECKING:
    from waygraph.sessions import SessionPlanner

# Property tests draw the same examples on every run, so a suite that passed
# passes again (CI must not fail on a draw nobody can reproduce); explore new
# draws with WAYGRAPH_HYPOTHESIS=explore, and keep what they find as a test.
settings.register_profile("stable", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("WAYGRAPH_HYPOTHESIS", "stable"))

DEFAULT_DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/test"


def _ram_temp_folder(folder: str = "/dev/shm", room: int = 2 << 30) -> str | None:
    """``folder`` when it is a RAM-backed file system this user may write with ``room``
    bytes free, else None."""
    try:
        stats = os.statvfs(folder)
    except OSError:
        return None
    if not os.access(folder, os.W_OK | os.X_OK) or stats.f_bavail * stats.f_frsize < room:
        return None
    return folder


# Tests' temporary files (tmp_path, the stores they open, their subprocesses'
# files) go to RAM when the machine has room there and TMPDIR is not set: every
# store commit is an fsync, and on a disk shared with other work the suite
# waited on them (a module's SQLite fixture took 3.5 s alone on disk, 1.3 s in
# RAM, 20 s on disk beside the rest of the suite). What the tests check (a
# process killed mid-write, concurrent writers, what a file holds) does not
# depend on the disk under the page cache; power loss is not simulated.
#: The temporary folder without that (on disk here), for tests that want a folder
#: where one normally is (tests/test_sandbox.py escapes from both). xdist's
#: workers inherit TMPDIR from the main process, and this with it.
DISK_TEMP = os.environ.get("WAYGRAPH_TEST_DISK_TEMP") or tempfile.gettempdir()
if "TMPDIR" not in os.environ and (_RAM := _ram_temp_folder()) is not None:
    os.environ["WAYGRAPH_TEST_DISK_TEMP"] = DISK_TEMP
    os.environ["TMPDIR"] = _RAM
    tempfile.tempdir = None  # tempfile reads TMPDIR again on next use

# The default store (Navigator, PlanningAgent, the CLI without --store) lives
# under the user's data folder: point it at a folder of this test session, so
# the suite never writes into (or reads from) a developer's real runs.
_DATA_HOME = tempfile.mkdtemp(prefix="waygraph-test-data-")
atexit.register(shutil.rmtree, _DATA_HOME, True)
os.environ["XDG_DATA_HOME"] = _DATA_HOME
os.environ.pop("WAYGRAPH_STORE", None)

# rich fixes a console's width for good when COLUMNS is set as the console is
# made, and the CLI makes its consoles on import. pytest-xdist sets COLUMNS=80
# and LINES=24 in its workers (and a developer's shell may export them), which
# would make the width a test passes to CliRunner(env={"COLUMNS": ...}) count
# in a serial run only. Without them every console measures the width where it
# prints: what the test asks for, else 80, the same on any worker and terminal.
os.environ.pop("COLUMNS", None)
os.environ.pop("LINES", None)


def services_required() -> bool:
    """True when ``WAYGRAPH_REQUIRE_SERVICES=1``: missing services fail tests."""
    return os.environ.get("WAYGRAPH_REQUIRE_SERVICES", "").strip() == "1"


def unavailable(reason: str) -> NoReturn:
    """Skip the running test for ``reason``, or fail it when services are required."""
    if services_required():
        pytest.fail(f"{reason} (WAYGRAPH_REQUIRE_SERVICES=1, so this is a failure)")
    pytest.skip(f"{reason} (set WAYGRAPH_REQUIRE_SERVICES=1 to fail instead)")


def require_service(name: str, host: str, port: int, *, timeout: float = 1.0) -> None:
    """Skip (or fail, see module docstring) unless ``host:port`` accepts TCP connections.

    Example::

        def test_talks_to_nats():
            require_service("NATS", "127.0.0.1", 4222)
    """
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return
    except OSError as exc:
        unavailable(f"{name} is not reachable at {host}:{port}: {exc}")


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL store URL in a schema of its own, dropped after the test session.

    The server comes from ``WAYGRAPH_DATABASE_URL`` (default
    ``postgresql://postgres@127.0.0.1:5432/test``). Tests that need an empty
    store each time should use keys of their own or truncate the tables.
    """
    base = os.environ.get("WAYGRAPH_DATABASE_URL", DEFAULT_DATABASE_URL)
    parts = urlsplit(base)
    require_service("PostgreSQL", parts.hostname or "127.0.0.1", parts.port or 5432)
    try:
        import psycopg
    except ImportError as exc:
        unavailable(f"psycopg is not installed: {exc}")
    schema = f"waygraph_test_{uuid.uuid4().hex[:12]}"
    joiner = "&" if parts.query else "?"
    yield f"{base}{joiner}schema={schema}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture
def postgres_own_url(postgres_url: str) -> Iterator[str]:
    """A PostgreSQL store URL in a schema of this test alone, dropped after it.

    For tests whose assertions another test's rows or listeners in the
    session's schema could disturb.
    """
    import psycopg

    from waygraph.store.postgres import split_schema

    conninfo, _ = split_schema(postgres_url)
    schema = f"waygraph_own_{uuid.uuid4().hex[:10]}"
    joiner = "&" if "?" in conninfo else "?"
    yield f"{conninfo}{joiner}schema={schema}"
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


# ------------------------------------------------------------------ xdist workers
#
# A test marked ``alone`` measures behaviour under contention it makes itself
# (sixteen writer processes on one session): with another worker's tests
# beside it on a 2-core box its writers can lose every race for the store's
# whole retry budget. Under pytest-xdist it therefore takes the machine for
# itself: every test holds a shared lock on a file of this run from its setup
# (module fixtures included) to its teardown, a test marked ``alone`` an
# exclusive one. A second lock, taken briefly by everyone and held by an
# ``alone`` test while it waits, keeps the other worker from starting test
# after test and starving it.
_RUN_ID = os.environ.get("PYTEST_XDIST_TESTRUNUID")


@contextlib.contextmanager
def _flocked(path: Path, mode: int) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, mode)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Serialise ``alone`` tests against every other test of an xdist run (see above)."""
    if _RUN_ID is None:  # a serial run: nothing runs beside the test
        yield
        return
    base = Path(tempfile.gettempdir()) / f"waygraph-pytest-{_RUN_ID}"
    turnstile, room = base.with_suffix(".turnstile"), base.with_suffix(".room")
    if item.get_closest_marker("alone") is not None:
        with _flocked(turnstile, fcntl.LOCK_EX), _flocked(room, fcntl.LOCK_EX):
            yield
        return
    with _flocked(turnstile, fcntl.LOCK_EX):
        pass
    with _flocked(room, fcntl.LOCK_SH):
        yield


#: The modules that took longest in a run of the whole suite (docs/benchmarks.md,
#: "CLI start-up and the test suite"), slowest first. `make test` hands whole
#: modules to its workers in collection order (--dist loadfile
#: --no-loadscope-reorder): these go first, so that at the end of the run no
#: worker is still busy with one of them while the other has nothing left.
SLOWEST_FIRST = (
    "test_adversarial.py",
    "test_semantic_suite.py",
    "test_server_browser.py",
    "test_navigator_limits.py",
    "test_navigator_kills.py",
    "test_eval_models.py",
    "test_eval_liars.py",
    "test_cli_no_preflight.py",
    "test_adversarial_sources.py",
    "test_learning_stats.py",
    "test_cli_sessions.py",
    "test_store.py",
    "test_cli_library.py",
    "test_events_exactly_once.py",
    "test_loader_fuzz.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Move the modules of :data:`SLOWEST_FIRST` to the front, in its order; every
    other test keeps its place (the sort is stable, a module stays in one piece)."""
    rank = {name: i for i, name in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


@pytest.fixture(autouse=True)
def _forget_model_servers() -> Iterator[None]:
    """What a model server refused is remembered per URL (waygraph.chat); a port the
    OS hands out again must not carry one test's scripted server into the next."""
    from waygraph.chat import forget_endpoints

    forget_endpoints()
    yield
    forget_endpoints()


# ------------------------------------------------------------------ session plans


@pytest.fixture
def planner(tmp_path: Path) -> SessionPlanner:
    """A :class:`waygraph.sessions.SessionPlanner` on ``tmp_path`` with a clock that
    ticks one second per reading (tests/session_helpers.py). Modules with a planner
    of another kind define their own ``planner`` fixture, which takes precedence."""
    from tests.session_helpers import Clock
    from waygraph.sessions import SessionPlanner

    return SessionPlanner(tmp_path, clock=Clock())
