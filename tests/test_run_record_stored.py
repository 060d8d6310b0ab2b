"""Run records stored by the code before the typed record load as ``RunRecord`` (issue 38 item 2).

``tests/fixtures/run_records/records.json`` holds one record of each kind as
the code at the commit it names stored it (``make_run_records.py`` beside it).
Each must load with the core every kind carries, and what ``to_dict`` writes
back must keep every key and value it had.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from waygraph.errors import InputError
from waygraph.model.record import CORE_FIELDS, RunKind, RunRecord
from waygraph.store import StoredRecord

FIXTURE = Path(__file__).parent / "fixtures" / "run_records" / "records.json"
STORED: dict[str, dict[str, Any]] = json.loads(FIXTURE.read_text())["records"]


def stored(kind: str) -> StoredRecord:
    row = STORED[kind]
    return StoredRecord(
        key=row["key"],
        kind=kind,
        data=json.loads(json.dumps(row["data"])),
        version=1,
        session=row["session"],
        status=row["status"],
        plan=row["plan"],
        updated_at=1234.5,
    )


def test_the_fixture_holds_one_record_of_every_kind():
    assert set(STORED) == {k.value for k in RunKind}


@pytest.mark.parametrize("kind", sorted(STORED))
def test_a_stored_record_of_each_kind_loads_with_the_core_fields(kind: str):
    row = STORED[kind]
    rec = RunRecord.from_stored(stored(kind))
    assert rec.kind == kind and rec.kind is RunKind(kind)
    assert rec.run_id == row["key"]
    assert rec.plan == row["plan"]
    assert rec.status == row["status"]
    assert rec.session == row["session"]
    assert rec.updated_at == 1234.5
    assert isinstance(rec.total_nodes, int) and isinstance(rec.completed_nodes, int)
    assert rec.completed_nodes >= 0
    assert list(rec.path) == row["data"].get("path", [])


@pytest.mark.parametrize("kind", sorted(STORED))
def test_writing_a_loaded_record_back_keeps_every_key_and_value(kind: str):
    data = STORED[kind]["data"]
    written = RunRecord.from_stored(stored(kind)).to_dict()
    assert {k: written[k] for k in data} == data
    assert set(CORE_FIELDS) <= set(written)


def test_an_event_record_from_before_gets_its_run_id_and_counts_from_what_it_keeps():
    rec = RunRecord.from_stored(stored("event"))
    data = STORED["event"]["data"]
    assert rec.run_id == data["plan_id"]
    assert rec.completed_nodes == sum(
        1 for v in data["visited"].values() if v["outcome"] == "success"
    )
    assert rec.created_at == data["created_at"]


def test_a_record_that_is_not_a_run_is_refused_naming_it():
    with pytest.raises(InputError, match="run record 'p1': kind 'plan' is not a run kind"):
        RunRecord.from_dict({"run_id": "p1"}, kind="plan")


def test_a_core_field_of_the_wrong_type_is_refused_naming_the_field():
    data = dict(STORED["dag"]["data"], total_nodes="three")
    with pytest.raises(InputError, match="field 'total_nodes' must be a whole number"):
        RunRecord.from_dict(data)
