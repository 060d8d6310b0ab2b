"""``file://DIR``: one JSON file per record, readable with any editor.

Layout of ``DIR``::

    records/<name>.json     one record: a header line, then its data
    events/<name>.jsonl     its events, one {"seq": n, "data": {...}} per line
    sessions.json           {session: current key}
    journal.json            present only while a make_current commit is applied
    .lock                   flock'ed by whoever commits

``<name>`` is the key with unsafe characters replaced, cut to 40 characters,
plus a 96-bit hash of the exact key, so distinct keys never share a file (not
even on case-insensitive file systems) and any key is a valid file name.

How a commit stays atomic across files (under an exclusive ``flock`` of
``.lock``, so processes never interleave, plus a thread lock, because flock
does not separate threads):

1. New events are appended to the events file and fsynced. Bytes past what
   the current record counts are a commit that never finished; they are cut
   off first. Readers only read as many bytes as the record counts, so
   appended events stay invisible until step 2.
2. The record file is written to a temporary file, fsynced and renamed over
   the old one (then the folder is fsynced): this rename is the commit.
   With ``make_current``, or when :meth:`~waygraph.store.Store.commit_all`
   writes several records, the new records and pointers are first written to
   ``journal.json`` the same way; that rename is the commit, and the records
   and ``sessions.json`` are then written and the journal removed. A journal
   left by a killed writer is replayed by the next commit or open.

Damage from outside (a truncated disk, an edited file) is contained: a
record file that cannot be parsed is renamed to ``NAME.corrupt-<UTC time>``
(with its events file) and treated as missing; a torn last line in an events
file is skipped. Both log a warning on the ``waygraph.store`` logger.

POSIX only (``fcntl``). Not safe on network file systems whose flock is
advisory-only across machines.

Example:
    >>> import tempfile
    >>> store = FileStore(tempfile.mkdtemp())
    >>> store.commit("run_1", {"n": 1}, 0, [{"type": "plan_activated"}], session="s1",
    ...              make_current=True)
    1
    >>> store.current("s1")
    'run_1'
"""

from __future__ import annotations

import builtins
import fcntl
import hashlib
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from waygraph.errors import StoreError
from waygraph.store._file_events import read_events
from waygraph.store.base import (
    Commit,
    MonotonicClock,
    Store,
    StoredEvent,
    StoredRecord,
    conflict,
    decode,
    encode,
    kind_matches,
    paging,
    read_record,
)

__all__ = ["FileStore", "file_name"]

logger = logging.getLogger("waygraph.store")

FORMAT = 1

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
_SLUG_CHARS = 40


def file_name(key: str) -> str:
    """The file name stem used for ``key``: readable prefix plus a hash of the key.

    Example:
        >>> file_name("run_1")
        'run_1-37ddff8ee13f1e57937fd048'
    """
    slug = _UNSAFE.sub("_", key)[:_SLUG_CHARS].strip(".") or "key"
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:24]
    return f"{slug}-{digest}"


def _utc_stamp() -> str:
    now = time.time()
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime(now)) + f".{int(now % 1 * 1e6):06d}Z"


def _parse_record(raw: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """(document, None) for a well-formed record file, else (None, what is wrong)."""
    try:
        doc = decode(raw)
    except ValueError as exc:
        return None, f"not JSON: {exc}"
    if not isinstance(doc, dict):
        return None, "not a JSON object"
    checks = (
        ("key", str),
        ("kind", str),
        ("version", int),
        ("data", dict),
        ("events", dict),
        ("correlation_ids", list),
        ("updated_at", int | float),
    )
    for name, kind in checks:
        if not isinstance(doc.get(name), kind):
            return None, f"field {name!r} is missing or not a {getattr(kind, '__name__', kind)}"
    for name in ("session", "status", "plan"):
        if doc.get(name) is not None and not isinstance(doc[name], str):
            return None, f"field {name!r} is not a string"
    events = doc["events"]
    if not isinstance(events.get("count"), int) or not isinstance(events.get("bytes"), int):
        return None, "field 'events' lacks integer 'count' and 'bytes'"
    return doc, None


def _parse_journal(journal: Any) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(records as (key, text), pointers as (session, key)) of a journal, either layout.

    Raises ValueError, KeyError or TypeError for a journal that is not one.
    """
    if "records" in journal:
        records = [(r["key"], r["record"]) for r in journal["records"]]
        pointers = [(p[0], p[1]) for p in journal["pointers"]]
    else:
        # The single-record layout written before commit_all existed.
        records = [(journal["key"], journal["record"])]
        pointers = [(journal["session"], journal["key"])]
    for a, b in (*records, *pointers):
        if not isinstance(a, str) or not isinstance(b, str):
            raise TypeError("keys, records and sessions must be strings")
    for _, text in records:
        if _parse_record(text.encode())[0] is None:
            raise ValueError("a journalled record is malformed")
    return records, pointers


def _to_record(doc: dict[str, Any]) -> StoredRecord:
    return read_record(
        doc["key"],
        doc["kind"],
        doc["data"],
        doc["version"],
        doc.get("session"),
        doc.get("status"),
        doc.get("plan"),
        tuple(doc["correlation_ids"]),
        float(doc["updated_at"]),
    )


def _write_all(fd: int, data: bytes, offset: int) -> None:
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, offset)
        view = view[written:]
        offset += written


class FileStore(Store):
    """A store in a folder of JSON files; see the module docstring for the layout.

    Example:
        >>> import tempfile
        >>> store = FileStore(tempfile.mkdtemp())
        >>> store.commit("k", {"a": 1}, 0, [])
        1
        >>> store.get("k").data
        {'a': 1}
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        url: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.directory = Path(directory).expanduser().absolute()
        self.url = url if url is not None else f"file://{self.directory}"
        self._records = self.directory / "records"
        self._events = self.directory / "events"
        self._sessions = self.directory / "sessions.json"
        self._journal = self.directory / "journal.json"
        self._lock = threading.Lock()
        self._clock = MonotonicClock(clock)
        self._closed = False
        with self._errors(f"opening {self.directory}"):
            self._records.mkdir(parents=True, exist_ok=True)
            self._events.mkdir(exist_ok=True)
            self._pid = os.getpid()
            self._lock_fd = os.open(self.directory / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
            with self._writing():
                self._recover()
                for folder in (self.directory, self._records, self._events):
                    for leftover in folder.glob("*.tmp"):
                        leftover.unlink(missing_ok=True)

    # ------------------------------------------------------------ plumbing

    def _paths(self, key: str) -> tuple[Path, Path]:
        name = file_name(key)
        return self._records / f"{name}.json", self._events / f"{name}.jsonl"

    @contextmanager
    def _errors(self, doing: str) -> Iterator[None]:
        try:
            yield
        except OSError as exc:
            raise StoreError(f"{self.url}: {doing} failed: {exc}") from exc

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """Exclusive access: the thread lock, then the cross-process flock."""
        with self._lock:
            if self._closed:
                raise StoreError(f"{self.url}: the store is closed")
            if self._pid != os.getpid():
                # A forked child shares the parent's open lock file, and flock
                # would treat both as one owner; it needs its own.
                self._pid = os.getpid()
                self._lock_fd = os.open(self.directory / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"{self.url}: the store is closed")

    def _atomic_write(self, path: Path, data: bytes) -> None:
        tmp = path.with_name(path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            _write_all(fd, data, 0)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        # The rename is only durable once the folder entry is on disk.
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    def _quarantine(self, path: Path, reason: str, *companions: Path) -> None:
        """Move a damaged file (and its companions) aside; call while writing."""
        stamp = _utc_stamp()
        for victim in (path, *companions):
            target = victim.with_name(f"{victim.name}.corrupt-{stamp}")
            try:
                os.replace(victim, target)
            except FileNotFoundError:
                continue
            logger.warning(
                "%s: %s is damaged (%s); moved it to %s and treated it as missing",
                self.url,
                victim,
                reason,
                target.name,
            )

    # ------------------------------------------------------------ records

    def _read_doc(self, path: Path, *, writing: bool) -> dict[str, Any] | None:
        """The parsed record file at ``path``; a damaged one is moved aside and gives None."""
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        doc, problem = _parse_record(raw)
        if problem is None:
            return doc
        if not writing:
            # Re-check under the lock: only a file that stays damaged is moved,
            # never one that a writer replaced meanwhile.
            with self._writing():
                return self._read_doc(path, writing=True)
        self._quarantine(path, problem, self._events / f"{path.name.removesuffix('.json')}.jsonl")
        return None

    def _load(self, key: str, *, writing: bool) -> dict[str, Any] | None:
        path, _ = self._paths(key)
        doc = self._read_doc(path, writing=writing)
        if doc is not None and doc["key"] != key:
            raise StoreError(
                f"{self.url}: {path} holds key {doc['key']!r}, not {key!r}; "
                "was the file copied or renamed by hand?"
            )
        return doc

    def _recover(self) -> None:
        """Finish a journalled commit whose writer died after writing its journal."""
        try:
            raw = self._journal.read_bytes()
        except FileNotFoundError:
            return
        try:
            records, pointers = _parse_journal(decode(raw))
        except (ValueError, KeyError, TypeError) as exc:
            self._quarantine(self._journal, f"unreadable journal: {exc}")
            return
        for key, text in records:
            path, _ = self._paths(key)
            self._atomic_write(path, text.encode())
        self._set_pointers(pointers)
        self._journal.unlink()
        logger.info(
            "%s: completed an interrupted commit of %s",
            self.url,
            ", ".join(repr(k) for k, _ in records),
        )

    # ------------------------------------------------------------ pointers

    def _read_pointers(self, *, writing: bool) -> dict[str, str]:
        try:
            raw = self._sessions.read_bytes()
        except FileNotFoundError:
            return {}
        try:
            pointers = decode(raw)
            ok = isinstance(pointers, dict) and all(
                isinstance(k, str) and isinstance(v, str) for k, v in pointers.items()
            )
        except ValueError:
            ok = False
        if ok:
            return cast(dict[str, str], pointers)  # checked key by key just above
        if not writing:
            with self._writing():
                return self._read_pointers(writing=True)
        self._quarantine(self._sessions, "not a JSON object of session -> key")
        return {}

    def _set_pointer(self, session: str, key: str | None) -> None:
        pointers = self._read_pointers(writing=True)
        if key is None:
            if session not in pointers:
                return
            del pointers[session]
        else:
            if pointers.get(session) == key:
                return
            pointers[session] = key
        text = encode(dict(sorted(pointers.items())))
        self._atomic_write(self._sessions, text.encode())

    def _set_pointers(self, changes: Sequence[tuple[str, str]]) -> None:
        """Point each session at its key, in one write of ``sessions.json``."""
        if not changes:
            return
        pointers = self._read_pointers(writing=True)
        if all(pointers.get(session) == key for session, key in changes):
            return
        pointers.update(changes)
        text = encode(dict(sorted(pointers.items())))
        self._atomic_write(self._sessions, text.encode())

    # ------------------------------------------------------------ writes

    def _append_events(
        self, path: Path, committed: int, first_seq: int, texts: Sequence[str]
    ) -> int:
        """Append event lines after the committed bytes; return the new committed size."""
        payload = "".join(
            f'{{"seq":{first_seq + i},"data":{text}}}\n' for i, text in enumerate(texts)
        ).encode()
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            size = os.fstat(fd).st_size
            if size > committed:
                # Lines from a commit whose record never landed: not events.
                os.ftruncate(fd, committed)
                size = committed
            elif size < committed:
                logger.warning(
                    "%s: %s is %d bytes shorter than its record says; events were lost",
                    self.url,
                    path,
                    committed - size,
                )
            _write_all(fd, payload, size)
            os.fsync(fd)
        finally:
            os.close(fd)
        return size + len(payload)

    def _commit_all(self, commits: Sequence[Commit]) -> list[int]:
        what = ", ".join(repr(c.key) for c in commits)
        with self._errors(f"committing {what}"), self._writing():
            self._recover()
            olds = []
            # Every version is checked before anything is written: all or none.
            for c in commits:
                old = self._load(c.key, writing=True)
                actual = None if old is None else old["version"]
                if (c.expected_version == 0 and old is not None) or (
                    c.expected_version != 0 and actual != c.expected_version
                ):
                    raise conflict(self.url, c.key, c.expected_version, actual)
                olds.append(old)
            # Appended events stay invisible until the record that counts them lands.
            texts = [self._record_text(c, old) for c, old in zip(commits, olds, strict=True)]
            pointers = [
                (c.session, c.key) for c in commits if c.make_current and c.session is not None
            ]
            if len(commits) == 1 and not pointers:
                self._atomic_write(self._paths(commits[0].key)[0], texts[0].encode())
            else:
                records = [{"key": c.key, "record": t} for c, t in zip(commits, texts, strict=True)]
                journal = encode({"records": records, "pointers": pointers})
                self._atomic_write(self._journal, journal.encode())
                for c, text in zip(commits, texts, strict=True):
                    self._atomic_write(self._paths(c.key)[0], text.encode())
                self._set_pointers(pointers)
                self._journal.unlink()
        return [c.expected_version + 1 for c in commits]

    def _record_text(self, c: Commit, old: dict[str, Any] | None) -> str:
        """Append ``c``'s events; return the record file's new text (not yet written)."""
        _, events_path = self._paths(c.key)
        count = 0 if old is None else old["events"]["count"]
        size = 0 if old is None else old["events"]["bytes"]
        if c.events:
            size = self._append_events(events_path, size, count + 1, c.events)
            count += len(c.events)
        head = encode(
            {
                "format": FORMAT,
                "key": c.key,
                "kind": c.kind,
                "version": c.expected_version + 1,
                "session": c.session,
                "status": c.status,
                "plan": c.plan,
                "correlation_ids": list(c.correlation_ids),
                "updated_at": self._clock(),
                "events": {"count": count, "bytes": size},
            }
        )
        # The data is spliced in as already-encoded text: no second encoding.
        return f'{head[:-1]},\n"data":{c.data}}}\n'

    def clear_current(self, session: str) -> None:
        with self._errors(f"clearing the pointer of session {session!r}"), self._writing():
            self._recover()
            self._set_pointer(session, None)

    # ------------------------------------------------------------ reads

    def get(self, key: str) -> StoredRecord | None:
        self._check_open()
        with self._errors(f"reading {key!r}"):
            doc = self._load(key, writing=False)
        return None if doc is None else _to_record(doc)

    def _all_docs(self) -> list[dict[str, Any]]:
        docs = []
        for entry in os.scandir(self._records):
            if not entry.name.endswith(".json"):
                continue
            doc = self._read_doc(Path(entry.path), writing=False)
            if doc is None:
                continue
            if f"{file_name(doc['key'])}.json" != entry.name:
                logger.warning(
                    "%s: skipped %s: it holds key %r, which belongs in another file",
                    self.url,
                    entry.path,
                    doc["key"],
                )
                continue
            docs.append(doc)
        return docs

    def list(
        self,
        *,
        kind: str | None = None,
        session: str | None = None,
        status: str | None = None,
        plan: str | None = None,
        correlation_id: str | None = None,
        limit: int | None = None,
    ) -> list[StoredRecord]:
        _, limit = paging(0, limit)
        self._check_open()
        with self._errors("listing records"):
            docs = [
                doc
                for doc in self._all_docs()
                if kind_matches(kind, doc["kind"])
                and (session is None or doc.get("session") == session)
                and (status is None or doc.get("status") == status)
                and (plan is None or doc.get("plan") == plan)
                and (correlation_id is None or correlation_id in doc["correlation_ids"])
            ]
        docs.sort(key=lambda doc: doc["key"])
        docs.sort(key=lambda doc: doc["updated_at"], reverse=True)
        if limit is not None:
            docs = docs[:limit]
        return [_to_record(doc) for doc in docs]

    def events(
        self, key: str, after_seq: int = 0, limit: int | None = None
    ) -> builtins.list[StoredEvent]:
        after_seq, limit = paging(after_seq, limit)
        self._check_open()
        _, events_path = self._paths(key)
        with self._errors(f"reading the events of {key!r}"):
            doc = self._load(key, writing=False)
            if doc is None or limit == 0:
                return []
            committed, count = doc["events"]["bytes"], doc["events"]["count"]
            try:
                with open(events_path, "rb") as f:
                    raw = f.read(committed)
            except FileNotFoundError:
                raw = b""
        where = f"{self.url}: {events_path}"
        return read_events(
            raw, key, where, committed=committed, count=count, after_seq=after_seq, limit=limit
        )

    def current(self, session: str) -> str | None:
        self._check_open()
        with self._errors(f"reading the pointer of session {session!r}"):
            return self._read_pointers(writing=False).get(session)

    def sessions(self) -> builtins.list[str]:
        self._check_open()
        with self._errors("listing sessions"):
            names = set(self._read_pointers(writing=False))
            names.update(
                doc["session"] for doc in self._all_docs() if doc.get("session") is not None
            )
        return sorted(names)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._pid == os.getpid():
                os.close(self._lock_fd)
