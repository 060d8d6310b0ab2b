"""Event envelopes: CloudEvents 1.0 with waygraph's extension attributes, and the topics.

On the wire an envelope is the CloudEvents JSON format: the required
attributes ``id``, ``source``, ``specversion`` (always ``"1.0"``) and
``type``, the optional ``time``, ``subject``, ``datacontenttype`` and
``data`` (a JSON object), and extension attributes whose names are lowercase
letters and digits (``correlationid``, ``responseevent``, ...). Python uses
snake_case names (``correlation_id``, ``response_event``, ...) with the wire
names as aliases, so both spellings are accepted on input.

``topic`` is the topic an envelope travels on. It is not a CloudEvents
attribute and never appears in :meth:`Envelope.to_wire`; a bus sets it on the
envelopes it delivers. Envelopes are immutable: :meth:`Envelope.with_topic`
and ``model_copy(update=...)`` return new ones.

Example:
    >>> env = Envelope(source="waygraph/test", type="web.search.requested",
    ...                data={"query": "graphs"}, correlation_id="c1", id="e1",
    ...                time="2026-01-02T03:04:05Z")
    >>> wire = env.to_wire()
    >>> wire["correlationid"], wire["time"], "topic" in wire
    ('c1', '2026-01-02T03:04:05Z', False)
    >>> Envelope.from_wire(env.to_json(), topic="action-requests").topic
    <Topic.ACTION_REQUESTS: 'action-requests'>
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from waygraph.errors import EventFormatError

__all__ = [
    "CORE_ATTRIBUTES",
    "EXTENSION_ATTRIBUTES",
    "Envelope",
    "Topic",
    "new_event_id",
    "validate_wire",
]


class Topic(StrEnum):
    """The topics events travel on.

    ``action-requests`` carries goals and work for workers and planners,
    ``action-results`` their answers; the others carry facts, plan life-cycle
    events, notifications for people, and system events.
    """

    ACTION_REQUESTS = "action-requests"
    ACTION_RESULTS = "action-results"
    BUSINESS_FACTS = "business-facts"
    PLAN_EVENTS = "plan-events"
    NOTIFICATION_EVENTS = "notification-events"
    SYSTEM_EVENTS = "system-events"


#: CloudEvents context attributes waygraph understands, by wire name.
CORE_ATTRIBUTES: tuple[str, ...] = (
    "id",
    "source",
    "specversion",
    "type",
    "time",
    "subject",
    "datacontenttype",
    "dataschema",
)
#: waygraph's extension attributes: wire name -> Python name.
EXTENSION_ATTRIBUTES: dict[str, str] = {
    "correlationid": "correlation_id",
    "responseevent": "response_event",
    "responsetopic": "response_topic",
    "sessionid": "session_id",
    "tenantid": "tenant_id",
    "userid": "user_id",
    "goalid": "goal_id",
    "planid": "plan_id",
    "parenteventid": "parent_event_id",
    "traceparent": "traceparent",
}

# CloudEvents 1.0: attribute names are lowercase ASCII letters and digits.
_ATTRIBUTE_NAME = re.compile(r"[a-z0-9]+")
# RFC 3339 date-time: a full date, "T" (or a space, which RFC 3339 allows),
# a time with optional fraction, and a mandatory offset.
_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})")
_REQUIRED = ("id", "source", "specversion", "type")
_STRING_ATTRIBUTES = frozenset(
    {"id", "source", "type", "subject", "datacontenttype", "dataschema", *EXTENSION_ATTRIBUTES}
)


def new_event_id() -> str:
    """A fresh event id: 32 hex digits of a random UUID."""
    return uuid.uuid4().hex


def _now() -> datetime:
    return datetime.now(UTC)


class Envelope(BaseModel):
    """One event: CloudEvents 1.0 attributes, waygraph's extensions, the data and its topic.

    ``extensions`` keeps extension attributes other producers set that
    waygraph has no field for, so they survive a round trip.

    Example:
        >>> e = Envelope(source="waygraph", type="research.goal", data={"topic": "x"},
        ...              responseevent="research.done")
        >>> e.response_event, e.specversion, len(e.id)
        ('research.done', '1.0', 32)
    """

    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="forbid")

    id: str = Field(default_factory=new_event_id, min_length=1)
    source: str = Field(min_length=1)
    specversion: Literal["1.0"] = "1.0"
    type: str = Field(min_length=1)
    time: datetime = Field(default_factory=_now)
    subject: str | None = Field(default=None, min_length=1)
    datacontenttype: str = "application/json"
    dataschema: str | None = Field(default=None, min_length=1)
    data: dict[str, Any] = Field(default_factory=dict)
    correlation_id: str | None = Field(default=None, alias="correlationid")
    response_event: str | None = Field(default=None, alias="responseevent")
    response_topic: str | None = Field(default=None, alias="responsetopic")
    session_id: str | None = Field(default=None, alias="sessionid")
    tenant_id: str | None = Field(default=None, alias="tenantid")
    user_id: str | None = Field(default=None, alias="userid")
    goal_id: str | None = Field(default=None, alias="goalid")
    plan_id: str | None = Field(default=None, alias="planid")
    parent_event_id: str | None = Field(default=None, alias="parenteventid")
    traceparent: str | None = None
    extensions: dict[str, str | int | bool] = Field(default_factory=dict)
    topic: Topic | None = None

    @field_validator("time")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        # RFC 3339 needs an offset; a naive time is taken as UTC rather than local.
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value

    @field_validator("topic", mode="before")
    @classmethod
    def _topic(cls, value: Any) -> Any:
        return _topic_or_none(value)

    @field_validator("extensions")
    @classmethod
    def _extension_names(cls, value: dict[str, Any]) -> dict[str, Any]:
        for name in value:
            _check_extension_name(name)
            if name in EXTENSION_ATTRIBUTES or name in CORE_ATTRIBUTES or name == "data":
                raise ValueError(f"{name!r} is an attribute of its own, not an extension")
        return value

    @property
    def event_type(self) -> str:
        """The CloudEvents ``type`` (the name waygraph's APIs use for it)."""
        return self.type

    def with_topic(self, topic: Topic | str | None) -> Envelope:
        """This envelope travelling on ``topic`` (a copy; envelopes are immutable)."""
        return self.model_copy(update={"topic": _topic_or_none(topic)})

    def to_wire(self) -> dict[str, Any]:
        """The CloudEvents JSON format as a dict: wire names, no None values, RFC 3339 time.

        Example:
            >>> Envelope(source="s", type="t", id="1", time="2026-01-01T00:00:00+00:00",
            ...          plan_id="p").to_wire()
            {'id': '1', 'source': 's', 'specversion': '1.0', 'type': 't', \
'time': '2026-01-01T00:00:00Z', 'datacontenttype': 'application/json', 'data': {}, 'planid': 'p'}
        """
        wire: dict[str, Any] = {
            "id": self.id,
            "source": self.source,
            "specversion": self.specversion,
            "type": self.type,
            "time": _format_time(self.time),
        }
        if self.subject is not None:
            wire["subject"] = self.subject
        wire["datacontenttype"] = self.datacontenttype
        if self.dataschema is not None:
            wire["dataschema"] = self.dataschema
        wire["data"] = self.data
        for wire_name, name in EXTENSION_ATTRIBUTES.items():
            value = getattr(self, name)
            if value is not None:
                wire[wire_name] = value
        wire.update(self.extensions)
        return wire

    def to_json(self) -> bytes:
        """UTF-8 JSON bytes of :meth:`to_wire`; EventFormatError when data is not JSON-ready."""
        try:
            return json.dumps(
                self.to_wire(), separators=(",", ":"), ensure_ascii=False, allow_nan=False
            ).encode("utf-8", "surrogatepass")
        except (TypeError, ValueError) as exc:
            raise EventFormatError(
                f"event {self.id!r} ({self.type}): data is not JSON-ready: {exc}",
                attribute="data",
            ) from exc

    @classmethod
    def from_wire(
        cls, payload: Mapping[str, Any] | bytes | str, topic: Topic | str | None = None
    ) -> Envelope:
        """Parse the CloudEvents JSON format (a dict, or JSON text/bytes).

        Raises :class:`~waygraph.errors.EventFormatError` naming the attribute
        that breaks the format. A JSON ``null`` for an optional attribute is
        read as absent.

        Example:
            >>> Envelope.from_wire({"id": "1", "source": "s", "type": "t", "specversion": "1.0",
            ...                     "correlationid": "c"}).correlation_id
            'c'
            >>> Envelope.from_wire({"id": "1", "source": "s", "type": "t", "specversion": "0.3"})
            Traceback (most recent call last):
            ...
            waygraph.errors.EventFormatError: event attribute 'specversion': must be '1.0' \
(got '0.3')
        """
        wire = validate_wire(payload)
        fields: dict[str, Any] = {"topic": _topic_or_none(topic)}
        extensions: dict[str, Any] = {}
        for name, value in wire.items():
            if value is None:
                continue
            if name in EXTENSION_ATTRIBUTES:
                fields[EXTENSION_ATTRIBUTES[name]] = value
            elif name in CORE_ATTRIBUTES or name == "data":
                fields[name] = value
            else:
                extensions[name] = value
        if extensions:
            fields["extensions"] = extensions
        if "time" in fields:
            fields["time"] = _parse_time(fields["time"])
        try:
            return cls.model_validate(fields)
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(p) for p in error["loc"])
            raise EventFormatError(error["msg"], attribute=where or None) from None


def validate_wire(payload: Mapping[str, Any] | bytes | str) -> dict[str, Any]:
    """Check an event against the CloudEvents 1.0 JSON format; return it as a dict.

    The rules checked: the payload is a JSON object; ``id``, ``source``,
    ``specversion`` and ``type`` are present, non-empty strings;
    ``specversion`` is ``"1.0"``; every attribute name is lowercase ASCII
    letters and digits; ``time`` is an RFC 3339 timestamp; ``subject``,
    ``datacontenttype``, ``dataschema`` and waygraph's extensions are strings;
    other extension values are strings, integers or booleans; ``data`` is a
    JSON object (waygraph's events carry JSON objects; ``data_base64`` is
    refused).

    Example:
        >>> validate_wire(b'{"id":"1","source":"s","type":"t","specversion":"1.0"}')["id"]
        '1'
    """
    if isinstance(payload, bytes | bytearray | memoryview):
        try:
            payload = bytes(payload).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise EventFormatError(f"the event is not UTF-8 text: {exc}") from None
    if isinstance(payload, str):
        try:
            payload = json.loads(payload)
        except json.JSONDecodeError as exc:
            raise EventFormatError(f"the event is not JSON: {exc}") from None
    if not isinstance(payload, Mapping):
        raise EventFormatError(
            f"an event is a JSON object, not {type(payload).__name__}", value=payload
        )
    wire = dict(payload)
    for name in _REQUIRED:
        if wire.get(name) is None:
            raise EventFormatError("is required", attribute=name)
    for name, value in wire.items():
        if not isinstance(name, str) or not _ATTRIBUTE_NAME.fullmatch(name):
            if name == "data_base64":
                raise EventFormatError(
                    "binary data is not supported; waygraph events carry a JSON object in 'data'",
                    attribute=name,
                )
            raise EventFormatError(
                "attribute names are lowercase letters a-z and digits 0-9 only",
                attribute=str(name),
            )
        if value is None:
            if name in _REQUIRED:
                raise EventFormatError("is required", attribute=name)
            continue
        if name in _STRING_ATTRIBUTES:
            if not isinstance(value, str):
                raise EventFormatError("must be a string", attribute=name, value=value)
            if not value and name in ("id", "source", "type", "subject"):
                raise EventFormatError("must not be empty", attribute=name, value=value)
        elif name == "specversion":
            if value != "1.0":
                raise EventFormatError("must be '1.0'", attribute=name, value=value)
        elif name == "time":
            if not isinstance(value, str) or not _RFC3339.fullmatch(value):
                raise EventFormatError(
                    "must be an RFC 3339 timestamp like '2026-01-02T03:04:05Z'",
                    attribute=name,
                    value=value,
                )
        elif name == "data":
            if not isinstance(value, Mapping):
                raise EventFormatError(
                    f"must be a JSON object (got a {type(value).__name__})", attribute=name
                )
        elif not isinstance(value, str | int | bool):
            raise EventFormatError(
                "extension values are strings, integers or booleans", attribute=name, value=value
            )
    return wire


def _check_extension_name(name: Any) -> None:
    if not isinstance(name, str) or not _ATTRIBUTE_NAME.fullmatch(name):
        raise ValueError(f"extension name {name!r} must be lowercase letters a-z and digits 0-9")


def _topic_or_none(value: Any) -> Topic | None:
    if value is None or isinstance(value, Topic):
        return value
    try:
        return Topic(value)
    except ValueError:
        known = ", ".join(t.value for t in Topic)
        raise EventFormatError(f"unknown topic {value!r}; use one of: {known}") from None


def _format_time(value: datetime) -> str:
    text = value.astimezone(UTC).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def _parse_time(text: str) -> datetime:
    try:
        return datetime.fromisoformat(text.replace("z", "Z").replace("t", "T"))
    except ValueError as exc:
        raise EventFormatError(f"not a valid time: {exc}", attribute="time", value=text) from None
