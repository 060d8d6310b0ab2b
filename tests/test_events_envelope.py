"""Envelopes against the CloudEvents 1.0 JSON format, written from the spec's rules.

The check below is independent of ``waygraph.events.envelope.validate_wire``:
it restates the rules of CloudEvents 1.0 (core spec, "Context Attributes")
and its JSON format, so a bug shared by the writer and the reader cannot hide.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from waygraph.errors import EventFormatError
from waygraph.events import Envelope, Topic
from waygraph.events.envelope import EXTENSION_ATTRIBUTES, validate_wire

RFC3339 = re.compile(
    r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$", re.IGNORECASE
)


def assert_cloudevents_json(text: bytes) -> dict[str, Any]:
    """The CloudEvents 1.0 JSON format rules, as the spec states them."""
    event = json.loads(text)
    assert isinstance(event, dict), "an event is a JSON object"
    for name in ("id", "source", "specversion", "type"):
        assert isinstance(event.get(name), str) and event[name], f"{name} is a non-empty string"
    assert event["specversion"] == "1.0"
    for name, value in event.items():
        assert re.fullmatch(r"[a-z0-9]+", name) or name == "data", f"attribute name {name!r}"
        assert value is not None, f"{name}: absent attributes are left out, not null"
    if "time" in event:
        assert RFC3339.match(event["time"]), "time is RFC 3339"
    if "subject" in event:
        assert isinstance(event["subject"], str) and event["subject"]
    if "data" in event:
        assert event.get("datacontenttype", "application/json").endswith("json")
    assert "data_base64" not in event or "data" not in event
    for name, value in event.items():
        if name not in ("data", "id", "source", "specversion", "type", "time"):
            # Extension/optional attribute values: CloudEvents types in JSON.
            assert isinstance(value, str | int | bool), f"{name} has a CloudEvents type"
    return event


def full_envelope(**overrides: Any) -> Envelope:
    fields: dict[str, Any] = {
        "id": "evt-1",
        "source": "waygraph/planners/research",
        "type": "web.search.requested",
        "time": datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC),
        "subject": "plan-1",
        "data": {"query": "graphs", "n": [1, 2.5, None, True], "nested": {"é": "ü"}},
        "correlation_id": "corr-1",
        "response_event": "web.search.completed",
        "response_topic": "action-results",
        "session_id": "session-1",
        "tenant_id": "tenant-1",
        "user_id": "user-1",
        "goal_id": "goal-1",
        "plan_id": "plan-1",
        "parent_event_id": "evt-0",
        "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    }
    return Envelope(**{**fields, **overrides})


def test_wire_names_and_values() -> None:
    wire = full_envelope().to_wire()
    assert wire == {
        "id": "evt-1",
        "source": "waygraph/planners/research",
        "specversion": "1.0",
        "type": "web.search.requested",
        "time": "2026-01-02T03:04:05.123456Z",
        "subject": "plan-1",
        "datacontenttype": "application/json",
        "data": {"query": "graphs", "n": [1, 2.5, None, True], "nested": {"é": "ü"}},
        "correlationid": "corr-1",
        "responseevent": "web.search.completed",
        "responsetopic": "action-results",
        "sessionid": "session-1",
        "tenantid": "tenant-1",
        "userid": "user-1",
        "goalid": "goal-1",
        "planid": "plan-1",
        "parenteventid": "evt-0",
        "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    }
    assert set(EXTENSION_ATTRIBUTES) <= set(wire)


def test_defaults_and_round_trip() -> None:
    env = Envelope(source="s", type="t")
    assert len(env.id) == 32 and env.specversion == "1.0" and env.data == {}
    assert env.time.tzinfo is not None and env.topic is None
    assert assert_cloudevents_json(env.to_json()).keys() == {
        "id",
        "source",
        "specversion",
        "type",
        "time",
        "datacontenttype",
        "data",
    }
    full = full_envelope(topic=Topic.ACTION_REQUESTS)
    back = Envelope.from_wire(full.to_json(), topic="action-requests")
    assert back == full
    assert Envelope.from_wire(full.to_wire()).topic is None


def test_snake_case_names_and_wire_aliases_both_work() -> None:
    a = Envelope(source="s", type="t", correlation_id="c", plan_id="p")
    b = Envelope(source="s", type="t", correlationid="c", planid="p")
    assert (a.correlation_id, a.plan_id) == (b.correlation_id, b.plan_id) == ("c", "p")
    assert a.event_type == "t"


def test_topic_is_not_a_cloudevents_attribute_and_envelopes_are_immutable() -> None:
    env = full_envelope(topic="action-results")
    assert env.topic is Topic.ACTION_RESULTS
    assert "topic" not in env.to_wire()
    moved = env.with_topic(Topic.PLAN_EVENTS)
    assert moved.topic is Topic.PLAN_EVENTS and env.topic is Topic.ACTION_RESULTS
    with pytest.raises(Exception, match="frozen"):
        env.type = "other"  # type: ignore[misc]


def test_times_are_rfc3339_in_utc() -> None:
    local = datetime(2026, 5, 6, 7, 8, 9, tzinfo=timezone(timedelta(hours=2)))
    assert Envelope(source="s", type="t", time=local).to_wire()["time"] == "2026-05-06T05:08:09Z"
    naive = Envelope(source="s", type="t", time=datetime(2026, 1, 1))
    assert naive.to_wire()["time"] == "2026-01-01T00:00:00Z"
    parsed = Envelope.from_wire(
        {
            "id": "1",
            "source": "s",
            "type": "t",
            "specversion": "1.0",
            "time": "2026-01-01t10:00:00+01:00",
        }
    )
    assert parsed.time == datetime(2026, 1, 1, 9, 0, tzinfo=UTC)


def test_other_producers_extensions_survive_a_round_trip() -> None:
    wire = {
        "id": "1",
        "source": "s",
        "type": "t",
        "specversion": "1.0",
        "priority": 3,
        "urgent": True,
        "region": "eu1",
        "correlationid": None,
    }
    env = Envelope.from_wire(wire)
    assert env.extensions == {"priority": 3, "urgent": True, "region": "eu1"}
    assert env.correlation_id is None
    out = assert_cloudevents_json(env.to_json())
    assert out["priority"] == 3 and out["urgent"] is True and "correlationid" not in out
    with pytest.raises(ValueError, match="lowercase"):
        Envelope(source="s", type="t", extensions={"Bad_Name": "x"})
    with pytest.raises(ValueError, match="attribute of its own"):
        Envelope(source="s", type="t", extensions={"planid": "x"})


BASE = {"id": "1", "source": "s", "type": "t", "specversion": "1.0"}


@pytest.mark.parametrize(
    ("wire", "attribute", "words"),
    [
        ({k: v for k, v in BASE.items() if k != "id"}, "id", "required"),
        ({k: v for k, v in BASE.items() if k != "source"}, "source", "required"),
        ({k: v for k, v in BASE.items() if k != "type"}, "type", "required"),
        ({k: v for k, v in BASE.items() if k != "specversion"}, "specversion", "required"),
        ({**BASE, "specversion": "0.3"}, "specversion", "'1.0'"),
        ({**BASE, "id": ""}, "id", "empty"),
        ({**BASE, "type": 7}, "type", "string"),
        ({**BASE, "time": "yesterday"}, "time", "RFC 3339"),
        ({**BASE, "time": "2026-01-01T00:00:00"}, "time", "RFC 3339"),
        ({**BASE, "correlationId": "c"}, "correlationId", "lowercase"),
        ({**BASE, "correlation_id": "c"}, "correlation_id", "lowercase"),
        ({**BASE, "data": [1, 2]}, "data", "JSON object"),
        ({**BASE, "data_base64": "AAAA"}, "data_base64", "binary"),
        ({**BASE, "planid": 5}, "planid", "string"),
        ({**BASE, "weight": 1.5}, "weight", "strings, integers or booleans"),
        ({**BASE, "nested": {"a": 1}}, "nested", "strings, integers or booleans"),
    ],
)
def test_from_wire_names_the_attribute_that_breaks_the_format(
    wire: dict[str, Any], attribute: str, words: str
) -> None:
    with pytest.raises(EventFormatError) as caught:
        Envelope.from_wire(wire)
    assert caught.value.attribute == attribute
    assert words in str(caught.value)
    assert f"event attribute {attribute!r}" in str(caught.value)


@pytest.mark.parametrize(
    ("payload", "words"),
    [
        (b"\xff\xfe", "UTF-8"),
        ("{not json", "not JSON"),
        ("[1]", "JSON object"),
        (b"null", "JSON object"),
    ],
)
def test_from_wire_refuses_what_is_not_an_event(payload: Any, words: str) -> None:
    with pytest.raises(EventFormatError, match=words):
        Envelope.from_wire(payload)


def test_unknown_topic_and_unserialisable_data_are_clear_errors() -> None:
    with pytest.raises(EventFormatError, match="unknown topic 'nope'"):
        Envelope.from_wire(BASE, topic="nope")
    env = Envelope(source="s", type="t", data={"when": datetime(2026, 1, 1)})
    with pytest.raises(EventFormatError, match="'data'"):
        env.to_json()
    with pytest.raises(EventFormatError, match="'data'"):
        Envelope(source="s", type="t", data={"x": float("nan")}).to_json()


_text = st.text(min_size=1, max_size=20)
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**12), 10**12) | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=60, deadline=None)
@given(
    source=_text,
    event_type=_text,
    data=st.dictionaries(st.text(max_size=8), _json, max_size=4),
    extensions=st.dictionaries(
        st.sampled_from(sorted(EXTENSION_ATTRIBUTES)), st.text(max_size=12), max_size=5
    ),
    topic=st.none() | st.sampled_from(list(Topic)),
)
def test_any_envelope_is_valid_cloudevents_json_and_round_trips(
    source: str,
    event_type: str,
    data: dict[str, Any],
    extensions: dict[str, str],
    topic: Topic | None,
) -> None:
    env = Envelope.model_validate(
        {"source": source, "type": event_type, "data": data, "topic": topic, **extensions}
    )
    text = env.to_json()
    assert_cloudevents_json(text)
    assert validate_wire(text) == json.loads(text)
    assert Envelope.from_wire(text, topic) == env
