"""Code tasks: write a module to an interface, and call an API as its document says.

Standard-library Python tested with ``unittest``, like every code task.
"""

from __future__ import annotations

from pathlib import Path

from waygraph.eval.suite import EvalTask, TaskVerdict, register, sh, write
from waygraph.eval.workspace import (
    GITIGNORE,
    hidden_check,
    init_repo,
    tests_pass,
    unchanged_files,
)

# ------------------------------------------------------------------ implement-interface

INTERFACE_MD = """\
# ratelimit.py

A token bucket for rate limiting.

    class TokenBucket:
        def __init__(self, capacity: int, refill_per_second: float, clock=time.monotonic)

- The bucket starts full (`capacity` tokens).
- Tokens refill continuously at `refill_per_second`, never above `capacity`;
  `clock()` returns the current time in seconds.
- `allow(cost: int = 1) -> bool` takes `cost` tokens and returns True when
  enough are available; otherwise it takes nothing and returns False.
- `tokens` (a property) is the number of tokens available now, as a float.
"""
RATELIMIT_TESTS = """\
import unittest

from ratelimit import TokenBucket


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class TokenBucketTest(unittest.TestCase):
    def test_starts_full_and_empties(self):
        bucket = TokenBucket(3, 1.0, clock=Clock())
        self.assertEqual([bucket.allow() for _ in range(4)], [True, True, True, False])

    def test_refills_over_time(self):
        clock = Clock()
        bucket = TokenBucket(2, 0.5, clock=clock)
        self.assertTrue(bucket.allow(2))
        clock.now = 2.0
        self.assertTrue(bucket.allow())
        self.assertFalse(bucket.allow())
"""
RATELIMIT_GOOD = '''\
"""A token bucket for rate limiting (see INTERFACE.md)."""

from __future__ import annotations

import time
from collections.abc import Callable


class TokenBucket:
    """Allows ``capacity`` calls at once, refilled at ``refill_per_second``."""

    def __init__(
        self,
        capacity: int,
        refill_per_second: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.capacity = capacity
        self.refill_per_second = refill_per_second
        self._clock = clock
        self._tokens = float(capacity)
        self._last = clock()

    def _refill(self) -> None:
        now = self._clock()
        elapsed = max(0.0, now - self._last)
        self._tokens = min(self.capacity, self._tokens + elapsed * self.refill_per_second)
        self._last = now

    @property
    def tokens(self) -> float:
        self._refill()
        return self._tokens

    def allow(self, cost: int = 1) -> bool:
        self._refill()
        if cost > self._tokens:
            return False
        self._tokens -= cost
        return True
'''
RATELIMIT_NO_REFILL = '''\
"""A token bucket for rate limiting."""

import time


class TokenBucket:
    def __init__(self, capacity, refill_per_second, clock=time.monotonic):
        self.tokens = capacity

    def allow(self, cost=1):
        if cost > self.tokens:
            return False
        self.tokens -= cost
        return True
'''


def _setup_ratelimit(root: Path) -> Path:
    init_repo(
        root,
        {
            ".gitignore": GITIGNORE,
            "INTERFACE.md": INTERFACE_MD,
            "tests/__init__.py": "",
            "tests/test_ratelimit.py": RATELIMIT_TESTS,
        },
    )
    return root


def _check_ratelimit(ws: Path) -> TaskVerdict:
    if not (ws / "ratelimit.py").is_file():
        return TaskVerdict.of(["ratelimit.py does not exist"])
    problems = [*unchanged_files(ws, {"tests/test_ratelimit.py": RATELIMIT_TESTS})]
    problems += tests_pass(ws)
    problems += hidden_check(
        ws,
        "from ratelimit import TokenBucket\n"
        "t = [0.0]\n"
        "b = TokenBucket(4, 2.0, clock=lambda: t[0])\n"
        "assert b.tokens == 4, b.tokens\n"
        "assert not b.allow(5) and b.tokens == 4, 'a refused call must take nothing'\n"
        "assert b.allow(4) and b.tokens == 0\n"
        "t[0] = 1.0\n"
        "assert abs(b.tokens - 2.0) < 1e-9, b.tokens\n"
        "t[0] = 100.0\n"
        "assert b.tokens == 4, f'refill must stop at capacity, got {b.tokens}'\n",
        "TokenBucket does not follow INTERFACE.md",
    )
    return TaskVerdict.of(problems)


register(
    EvalTask(
        id="implement-interface",
        plan="codegen_module",
        request=(
            "Please create a module ratelimit.py and create the class TokenBucket in it, "
            "exactly as INTERFACE.md describes, so that the tests in tests/test_ratelimit.py "
            "pass."
        ),
        setup=_setup_ratelimit,
        check=_check_ratelimit,
        solution=(
            sh("ls -R . | grep -v '^\\./\\.git' | head -n 20 && cat INTERFACE.md", "survey"),
            sh(
                'f=ratelimit.py; test -e "$f" && echo "TARGET_EXISTS $f" || echo "TARGET_FREE $f"',
                "check_target",
            ),
            write("ratelimit.py", RATELIMIT_GOOD, "scaffold"),
            sh("python3 -c 'import ratelimit'", "implement"),
            sh("python3 -m unittest tests.test_ratelimit", "test"),
            sh("python3 -m py_compile ratelimit.py", "document"),
        ),
        wrong_solution=(write("ratelimit.py", RATELIMIT_NO_REFILL),),
        wrong_because="writes a bucket that never refills and does not run the tests",
        max_steps=12,
        tags=("python", "codegen"),
    )
)

# ------------------------------------------------------------------ api-get-user

API_MD = """\
# Directory service API

Local service; it needs no credential. Call it in Python through
`directory_service.request(method, path)`, which returns `(status, body)` with
the body as JSON text, or from the shell: `python3 directory_service.py GET /users/1`.

## GET /users/{id}

200: `{"id": 1, "name": "Ada Lovelace", "email": "ada@example.org"}`
404: `{"error": "no user 99"}` when the user does not exist.
500: `{"error": "..."}` when the service fails.
"""
DIRECTORY_SERVICE = '''\
"""A stand-in for the directory REST service (offline)."""

import json
import sys

USERS = {
    1: {"id": 1, "name": "Ada Lovelace", "email": "ada@example.org"},
    2: {"id": 2, "name": "Alan Turing", "email": "alan@example.org"},
}


def request(method: str, path: str) -> tuple[int, str]:
    parts = path.strip("/").split("/")
    if method != "GET" or len(parts) != 2 or parts[0] != "users" or not parts[1].isdigit():
        return 400, json.dumps({"error": f"bad request {method} {path}"})
    user_id = int(parts[1])
    if user_id == 500:
        return 500, json.dumps({"error": "database unavailable"})
    if user_id not in USERS:
        return 404, json.dumps({"error": f"no user {user_id}"})
    return 200, json.dumps(USERS[user_id])


if __name__ == "__main__":
    status, body = request(sys.argv[1], sys.argv[2])
    print(f"HTTP {status}")
    print(body)
'''
CLIENT_TESTS = """\
import unittest

from client import UserNotFound, get_user


class ClientTest(unittest.TestCase):
    def test_get_user(self):
        self.assertEqual(get_user(1)["name"], "Ada Lovelace")

    def test_missing_user(self):
        with self.assertRaises(UserNotFound):
            get_user(99)
"""
CLIENT_GOOD = '''\
"""Client for the directory service (API.md)."""

import json

import directory_service


class ApiError(Exception):
    """The directory service answered with an error status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


class UserNotFound(ApiError):
    """No user with that id (HTTP 404)."""


def get_user(user_id: int) -> dict:
    """GET /users/{id}: the user as a dict."""
    status, body = directory_service.request("GET", f"/users/{user_id}")
    data = json.loads(body)
    if status == 404:
        raise UserNotFound(status, data.get("error", "not found"))
    if not 200 <= status < 300:
        raise ApiError(status, data.get("error", "request failed"))
    return data


if __name__ == "__main__":
    user = get_user(1)
    print(f"status=200 user={user['name']}")
'''
CLIENT_NO_ERRORS = """\
import json

import directory_service


class UserNotFound(Exception):
    pass


class ApiError(Exception):
    pass


def get_user(user_id):
    status, body = directory_service.request("GET", f"/users/{user_id}")
    return json.loads(body)
"""


def _setup_api(root: Path) -> Path:
    init_repo(
        root,
        {
            ".gitignore": GITIGNORE,
            "API.md": API_MD,
            "directory_service.py": DIRECTORY_SERVICE,
            "tests/__init__.py": "",
            "tests/test_client.py": CLIENT_TESTS,
        },
    )
    return root


def _check_api(ws: Path) -> TaskVerdict:
    if not (ws / "client.py").is_file():
        return TaskVerdict.of(["client.py does not exist"])
    problems = [
        *unchanged_files(ws, {"tests/test_client.py": CLIENT_TESTS, "API.md": API_MD}),
        *unchanged_files(ws, {"directory_service.py": DIRECTORY_SERVICE}),
    ]
    problems += tests_pass(ws)
    problems += hidden_check(
        ws,
        "import client\n"
        "assert client.get_user(2)['email'] == 'alan@example.org'\n"
        "assert issubclass(client.UserNotFound, Exception)\n"
        "try:\n    client.get_user(500)\nexcept client.ApiError:\n    pass\n"
        "else:\n    raise AssertionError('get_user(500) must raise ApiError')\n"
        "try:\n    client.get_user(7)\nexcept client.UserNotFound:\n    pass\n"
        "else:\n    raise AssertionError('get_user(7) must raise UserNotFound')\n",
        "get_user does not handle the API's answers",
    )
    return TaskVerdict.of(problems)


register(
    EvalTask(
        id="api-get-user",
        plan="api_integration",
        request=(
            "Please integrate our directory REST API: add get_user(user_id) to a new client.py "
            "that calls GET /users/{id} on the directory service (see API.md) and returns the "
            "user. Raise UserNotFound on 404 and ApiError on other errors. The tests are in "
            "tests/test_client.py."
        ),
        setup=_setup_api,
        check=_check_api,
        solution=(
            sh("ls && cat API.md", "read_docs"),
            sh(
                "grep -q 'needs no credential' API.md && echo CREDENTIALS_OK "
                "|| echo CREDENTIALS_MISSING",
                "check_credentials",
            ),
            sh("python3 directory_service.py GET /users/1", "probe"),
            write("client.py", CLIENT_GOOD, "implement"),
            sh("python3 client.py", "test_call"),
            sh("python3 -m unittest && python3 client.py", "add_error_handling"),
        ),
        wrong_solution=(write("client.py", CLIENT_NO_ERRORS),),
        wrong_because="returns the error body as if it were a user: no status handling",
        max_steps=12,
        tags=("python", "api"),
    )
)
