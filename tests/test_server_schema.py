"""The OpenAPI document, fuzzed with schemathesis: no 5xx, every answer as documented.

Bounded (a few examples per operation) so it runs in seconds; the live
event stream never ends by design, so it is left to tests/test_server.py.
"""

from __future__ import annotations

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
    max_examples=12,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
def test_api_conforms_to_its_openapi_document(case):
    case.call_and_validate()
