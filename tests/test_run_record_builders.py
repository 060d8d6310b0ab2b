"""Every driver builds its record with its kind's builder: same core, no key lost (issue 38 item 2).

The scenario that captured ``tests/fixtures/run_records/records.json`` is run
again with today's code: each kind's record must still have every key the
captured one has, and every core field with its type.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from waygraph.model.record import CORE_FIELDS, RunKind, RunRecord
from waygraph.store import open_store

MAKER = Path(__file__).parent / "fixtures" / "run_records" / "make_run_records.py"


def _maker() -> Any:
    spec = importlib.util.spec_from_file_location("make_run_records", MAKER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    maker = _maker()
    store = open_store("memory://")
    maker.drive(store, tmp_path_factory.mktemp("ws"))
    found: dict[str, dict[str, Any]] = {}
    for rec in store.list(limit=1000):
        if rec.kind in {k.value for k in RunKind}:
            found.setdefault(rec.kind, rec.data)
    return found


@pytest.fixture(scope="module")
def captured() -> dict[str, dict[str, Any]]:
    return {
        k: v["data"]
        for k, v in json.loads(MAKER.with_name("records.json").read_text())["records"].items()
    }


@pytest.mark.parametrize("kind", [k.value for k in RunKind])
def test_todays_record_keeps_every_key_the_captured_one_has(kind, records, captured):
    assert set(captured[kind]) - set(records[kind]) == set()


@pytest.mark.parametrize("kind", [k.value for k in RunKind])
def test_every_kind_writes_the_core_fields_with_their_types(kind, records):
    data = records[kind]
    assert set(CORE_FIELDS) <= set(data), set(CORE_FIELDS) - set(data)
    assert data["kind"] == kind
    assert isinstance(data["run_id"], str) and isinstance(data["plan"], str)
    assert isinstance(data["total_nodes"], int) and isinstance(data["completed_nodes"], int)
    assert 0 <= data["completed_nodes"] <= data["total_nodes"]
    assert RunRecord.from_dict(data).to_dict() == data


@pytest.mark.parametrize("kind", [k.value for k in RunKind])
def test_the_sessions_row_of_every_kind_shows_its_progress(kind, records):
    from waygraph.describe import record_row
    from waygraph.store import StoredRecord

    data = records[kind]
    row = record_row(StoredRecord(key=data["run_id"], kind=kind, data=data, version=1))
    assert (row["total_nodes"], row["completed_nodes"]) == (
        data["total_nodes"],
        data["completed_nodes"],
    )
