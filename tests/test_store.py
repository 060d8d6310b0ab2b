"""The store backends: the shared contract on each (tests/store_contract.py), the store
URLs open_store understands, and the service helper the backends' tests rely on.

What is particular to each backend is in tests/test_store_<backend>.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.store_backends import BACKENDS, open_backend
from tests.store_contract import StoreContract
from waygraph.errors import ConfigError, StoreError
from waygraph.store import MemoryStore, SQLiteStore, Store, open_store
from waygraph.store.base import redact_url
from waygraph.store.files import FileStore


@pytest.fixture(
    params=[
        pytest.param(name, marks=[pytest.mark.services] if name == "postgres" else [])
        for name in BACKENDS
    ]
)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    opened = open_backend(request.param, tmp_path, request)
    yield opened
    opened.close()


class TestContract(StoreContract):
    """The shared contract, once per backend."""


# ---------------------------------------------------------------- open_store


def test_open_store_understands_every_url_form(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    memory = open_store("memory://")
    assert isinstance(memory, MemoryStore) and memory.url == "memory://"
    assert open_store("memory://") is not memory, "each memory:// is a private store"
    assert open_store(memory) is memory

    relative = open_store("sqlite:///rel.db")
    assert isinstance(relative, SQLiteStore) and relative.path == str(tmp_path / "rel.db")
    assert relative.url == "sqlite:///rel.db"
    absolute = open_store(f"sqlite:///{tmp_path / 'deep' / 'er' / 'abs.db'}")
    assert isinstance(absolute, SQLiteStore)
    assert absolute.path == str(tmp_path / "deep" / "er" / "abs.db")
    assert (tmp_path / "deep" / "er" / "abs.db").exists(), "parent folders are created"
    assert isinstance(open_store("sqlite:///:memory:"), SQLiteStore)
    plain = open_store("plain.db")
    assert isinstance(plain, SQLiteStore) and plain.path == str(tmp_path / "plain.db")
    as_path = open_store(tmp_path / "pathlike.db")
    assert isinstance(as_path, SQLiteStore) and as_path.path == str(tmp_path / "pathlike.db")

    rel_dir = open_store("file://rel/dir")
    assert isinstance(rel_dir, FileStore) and rel_dir.directory == tmp_path / "rel" / "dir"
    abs_dir = open_store(f"file://{tmp_path / 'abs'}")
    assert isinstance(abs_dir, FileStore) and abs_dir.directory == tmp_path / "abs"
    slashes = open_store(f"file:///{tmp_path / 'abs2'}")
    assert isinstance(slashes, FileStore) and slashes.directory == tmp_path / "abs2"
    for opened in (memory, relative, absolute, plain, as_path, rel_dir, abs_dir, slashes):
        opened.close()


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("ftp://host/x", "unknown scheme 'ftp'"),
        ("", "empty"),
        ("memory://named", "memory:// takes no path"),
        ("sqlite://host/x.db", "three slashes"),
        ("sqlite:x.db", "sqlite URLs start with sqlite://"),
        ("sqlite:///x.db?synchronous=sometimes", "synchronous must be one of normal, full"),
        ("sqlite:///x.db?bogus=1", "unknown option(s) bogus (known: synchronous, timeout, mode)"),
        ("sqlite:///x.db?timeout=soon", "timeout must be a number"),
        ("file://", "names its folder"),
        ("file:///tmp/x?fsync=0", "unknown option(s) fsync"),
        ("postgresql://u@h/db?schema=Bad-Name", "schema must be"),
    ],
)
def test_bad_urls_are_config_errors_that_say_why(
    url: str, says: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as err:
        open_store(url)
    assert says in str(err.value)
    assert isinstance(err.value, ValueError)


def test_an_unknown_scheme_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError) as err:
        open_store("redis://localhost")
    for scheme in ("memory://", "file://DIR", "sqlite:///PATH", "postgresql://"):
        assert scheme in str(err.value)
    with pytest.raises(ConfigError, match="URL string, a path or a Store"):
        open_store(42)  # type: ignore[arg-type]


def test_passwords_never_appear_in_urls_or_errors() -> None:
    assert redact_url("postgresql://app:s3cret@db:5432/runs?x=1") == (
        "postgresql://app:***@db:5432/runs?x=1"
    )
    assert redact_url("postgresql://app@db/runs") == "postgresql://app@db/runs"
    # Port 1 refuses at once: the error must name the server without the secret.
    with pytest.raises(StoreError) as err:
        open_store("postgresql://app:s3cret@127.0.0.1:1/runs")
    assert "s3cret" not in str(err.value) and "127.0.0.1:1" in str(err.value)


def test_io_trouble_is_a_store_error_naming_the_place(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(StoreError) as err:
        open_store(f"file://{blocker}/store")
    assert str(blocker) in str(err.value)
    folder = tmp_path / "a-folder.db"
    folder.mkdir()
    with pytest.raises(StoreError) as err:
        open_store(f"sqlite:///{folder}")
    assert str(folder) in str(err.value)


# ---------------------------------------------------------------- service helper


def test_an_unreachable_service_skips_unless_services_are_required(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.conftest import require_service

    monkeypatch.delenv("WAYGRAPH_REQUIRE_SERVICES", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"NATS is not reachable at 127\.0\.0\.1:1"):
        require_service("NATS", "127.0.0.1", 1)
    monkeypatch.setenv("WAYGRAPH_REQUIRE_SERVICES", "1")
    with pytest.raises(pytest.fail.Exception, match="WAYGRAPH_REQUIRE_SERVICES=1"):
        require_service("NATS", "127.0.0.1", 1)
