"""The built-in store backends the store tests open: one name each, an empty store on it.

Example::

    store = open_backend("sqlite", tmp_path, request)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from waygraph.store import Store, open_store

BACKENDS = ["memory", "file", "sqlite", "sqlite-full", "postgres"]


def empty_postgres(url: str) -> Store:
    """A store on the session's schema with every table emptied."""
    import psycopg

    from waygraph.store.postgres import split_schema

    store = open_store(url)
    conninfo, schema = split_schema(url)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(
            f'TRUNCATE "{schema}".records, "{schema}".record_correlations, '
            f'"{schema}".events, "{schema}".session_pointers, "{schema}".stats_runs, '
            f'"{schema}".stats_values, "{schema}".stats_nodes, "{schema}".stats_lines, '
            f'"{schema}".stats_counted, "{schema}".row_counts'
        )
    return store


def open_backend(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Store:
    """A new store of ``backend`` (one of :data:`BACKENDS`), files under ``tmp_path``."""
    if backend == "memory":
        return open_store("memory://")
    if backend == "file":
        return open_store(f"file://{tmp_path / 'files'}")
    if backend == "sqlite":
        return open_store(f"sqlite:///{tmp_path / 'wg.db'}")
    if backend == "sqlite-full":
        return open_store(f"sqlite:///{tmp_path / 'wg.db'}?synchronous=full")
    return empty_postgres(request.getfixturevalue("postgres_url"))
