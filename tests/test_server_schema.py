"""The OpenAPI document, fuzzed with schemathesis: no 5xx, every answer as documented.

Bounded (a few examples per operation) so it runs in seconds; the live
event stream never ends by design, so it is left to tests/test_server.py.
"""

from __future__ import annotations

import os

import schemathesis
from hypothesis import HealthCheck, settings

from waygraph.navigator import Navigator
from waygraph.server import create_app

navigator = Navigator(store="memory://", strict=True)
# A session that exists, so fuzzed requests reach past the 404 of unknown sessions.
navigator.turn("chat-1", user_message="please fix bug in the login page", domain="bugfix")
# The body limit answers 413 before validation; it has its own tests, so here it is out
# of the way and oversized fields meet their documented limits (422).
app = create_app(navigator, max_body=64 * 1024 * 1024)

schema = schemathesis.openapi.from_asgi("/openapi.json", app).exclude(
    path="/api/sessions/{session_id}/stream"
)


@schema.parametrize()
@settings(
    # Fuzz wider by hand with WAYGRAPH_FUZZ_EXAMPLES=500 WAYGRAPH_HYPOTHESIS=explore
    # (a finding becomes a test of its own).
    max_examples=int(os.environ.get("WAYGRAPH_FUZZ_EXAMPLES", "12")),
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
def test_api_conforms_to_its_openapi_document(case):
    case.call_and_validate()


def _schemas(node: object):
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _schemas(value)
    elif isinstance(node, list):
        for value in node:
            yield from _schemas(value)


def test_every_limit_the_api_enforces_is_in_the_document():
    # Bug: exit_code's bounds sat after a validator, so pydantic wrote them as
    # "ge"/"le" (not JSON Schema) and clients were told any integer was fine;
    # the fuzzer then found a documented-valid exit code the API refused.
    doc = app.openapi()
    stray = [s for s in _schemas(doc) if {"ge", "le", "gt", "lt"} & s.keys() and "type" in s]
    assert stray == []
    turn = doc["components"]["schemas"]["TurnRequest"]["properties"]["exit_code"]
    bounds = next(s for s in turn["anyOf"] if s.get("type") == "integer")
    assert (bounds["minimum"], bounds["maximum"]) == (-(2**31), 2**32 - 1)
