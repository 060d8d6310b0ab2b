"""Code tasks: fix bugs, refactor, write a module to an interface, call an API, upgrade a pin.

Every project here is standard-library Python tested with ``unittest``, so
the workspaces need nothing installed and no network.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from waygraph.eval.suite import Task, Verdict, register, sh, write
from waygraph.eval.workspace import init_repo, run_python, sha256_file, sha256_text

GITIGNORE = "__pycache__/\n*.pyc\n"


def _tests_pass(ws: Path, *names: str) -> Iterator[str]:
    ok, output = run_python(ws, "-m", "unittest", *names)
    if not ok:
        tail = output.strip().splitlines()[-1:] or ["no output"]
        yield f"the tests fail ({tail[0]})"


def _unchanged(ws: Path, originals: dict[str, str]) -> Iterator[str]:
    for name, text in originals.items():
        path = ws / name
        if not path.is_file():
            yield f"{name} was deleted"
        elif sha256_file(path) != sha256_text(text):
            yield f"{name} was edited (it must stay as it was)"


def _hidden(ws: Path, code: str, what: str) -> Iterator[str]:
    ok, output = run_python(ws, "-c", code)
    if not ok:
        last = output.strip().splitlines()[-1:] or ["no output"]
        yield f"{what}: {last[0]}"


# ------------------------------------------------------------------ fix-failing-test

PRICING_BUGGY = '''\
"""Prices and discounts for the shop."""


def apply_discount(price: float, percent: float) -> float:
    """The price after a discount of ``percent`` percent, rounded to cents."""
    return round(price - price * percent / 10, 2)


def total(prices: list[float], percent: float = 0) -> float:
    """The sum of ``prices`` after the discount."""
    return round(sum(apply_discount(p, percent) for p in prices), 2)
'''
PRICING_FIXED = PRICING_BUGGY.replace("percent / 10,", "percent / 100,")
PRICING_TESTS = """\
import unittest

from pricing import apply_discount, total


class PricingTest(unittest.TestCase):
    def test_no_discount(self):
        self.assertEqual(apply_discount(80.0, 0), 80.0)

    def test_ten_percent(self):
        self.assertEqual(apply_discount(80.0, 10), 72.0)

    def test_total(self):
        self.assertEqual(total([10.0, 20.0], 50), 15.0)


if __name__ == "__main__":
    unittest.main()
"""


def _setup_pricing(root: Path) -> Path:
    init_repo(
        root,
        {
            ".gitignore": GITIGNORE,
            "pricing.py": PRICING_BUGGY,
            "tests/__init__.py": "",
            "tests/test_pricing.py": PRICING_TESTS,
        },
    )
    return root


def _check_pricing(ws: Path) -> Verdict:
    problems = [*_unchanged(ws, {"tests/test_pricing.py": PRICING_TESTS})]
    problems += _tests_pass(ws)
    problems += _hidden(
        ws,
        "from pricing import apply_discount as d\n"
        "assert d(50.0, 20) == 40.0, d(50.0, 20)\n"
        "assert d(19.99, 15) == 16.99, d(19.99, 15)\n",
        "apply_discount gives wrong prices",
    )
    return Verdict.of(problems)


register(
    Task(
        id="fix-failing-test",
        plan="bugfix_workflow",
        request=(
            "The tests in this project are broken: `python3 -m unittest` fails on the "
            "discount. Please fix the bug in the code. Don't change the tests."
        ),
        setup=_setup_pricing,
        check=_check_pricing,
        solution=(
            sh("python3 -m unittest tests.test_pricing", "reproduce", expect_failure=True),
            sh("grep -n 'percent' pricing.py", "isolate"),
            write("pricing.py", PRICING_FIXED, "fix"),
            sh("python3 -m unittest tests.test_pricing", "test"),
            sh("python3 -m unittest", "verify_no_regression"),
        ),
        wrong_solution=(
            sh("sed -i 's/72.0/0.0/; s/15.0/-120.0/' tests/test_pricing.py && python3 -m unittest"),
        ),
        wrong_because="edits the test's expected values instead of the code",
        max_steps=12,
        tags=("python", "tests"),
    )
)

# ------------------------------------------------------------------ fix-reported-bug

TEXTUTIL_BUGGY = '''\
"""Text helpers."""


def slugify(text: str) -> str:
    """A URL-safe slug: lowercase words joined by single hyphens."""
    return "-".join(text.lower().split())
'''
TEXTUTIL_FIXED = '''\
"""Text helpers."""

import re


def slugify(text: str) -> str:
    """A URL-safe slug: lowercase words joined by single hyphens."""
    return "-".join(re.findall(r"[a-z0-9]+", text.lower()))
'''
TEXTUTIL_HARDCODED = '''\
"""Text helpers."""


def slugify(text: str) -> str:
    """A URL-safe slug: lowercase words joined by single hyphens."""
    if text == "Hello, World!":
        return "hello-world"
    return "-".join(text.lower().split())
'''
TEXTUTIL_TESTS = """\
import unittest

from textutil import slugify


class SlugifyTest(unittest.TestCase):
    def test_words(self):
        self.assertEqual(slugify("Release Notes"), "release-notes")

    def test_spaces(self):
        self.assertEqual(slugify("  many   spaces "), "many-spaces")
"""


def _setup_textutil(root: Path) -> Path:
    init_repo(
        root,
        {
            ".gitignore": GITIGNORE,
            "textutil.py": TEXTUTIL_BUGGY,
            "tests/__init__.py": "",
            "tests/test_textutil.py": TEXTUTIL_TESTS,
        },
    )
    return root


def _check_textutil(ws: Path) -> Verdict:
    problems = [*_unchanged(ws, {"tests/test_textutil.py": TEXTUTIL_TESTS})]
    problems += _tests_pass(ws)
    problems += _hidden(
        ws,
        "from textutil import slugify as s\n"
        "cases = {'Hello, World!': 'hello-world', \"C'est la vie\": 'c-est-la-vie',\n"
        "         'Q&A: 2024 (draft)': 'q-a-2024-draft', 'a -- b': 'a-b',\n"
        "         'Already-slug': 'already-slug'}\n"
        "for given, want in cases.items():\n"
        "    assert s(given) == want, f'slugify({given!r}) = {s(given)!r}, want {want!r}'\n",
        "slugify is still wrong",
    )
    return Verdict.of(problems)


register(
    Task(
        id="fix-reported-bug",
        plan="bugfix_workflow",
        request=(
            "Bug report: slugify('Hello, World!') in textutil.py returns 'hello,-world!' "
            "instead of 'hello-world'. Punctuation handling is broken. Please fix the bug so "
            "slugify works for any text: lowercase letters and digits joined by single hyphens."
        ),
        setup=_setup_textutil,
        check=_check_textutil,
        solution=(
            sh(
                'python3 -c "from textutil import slugify; '
                "print(repr(slugify('Hello, World!')))\"",
                "reproduce",
            ),
            sh("grep -n -A 3 'def slugify' textutil.py", "isolate"),
            write("textutil.py", TEXTUTIL_FIXED, "fix"),
            sh(
                'python3 -c "from textutil import slugify; '
                "assert slugify('Hello, World!') == 'hello-world'; print('ok: hello-world')\"",
                "test",
            ),
            sh("python3 -m unittest", "verify_no_regression"),
        ),
        wrong_solution=(write("textutil.py", TEXTUTIL_HARDCODED),),
        wrong_because="special-cases the reported input instead of fixing the function",
        max_steps=12,
        tags=("python", "tests"),
    )
)

# ------------------------------------------------------------------ refactor-keep-tests

REPORT_BEFORE = '''\
"""Order reports."""


def line_item(name: str, amount: float) -> str:
    return name + ": $" + format(round(amount, 2), ",.2f")


def subtotal_line(amount: float) -> str:
    return "Subtotal: $" + format(round(amount, 2), ",.2f")


def total_line(amount: float, tax: float) -> str:
    return "Total: $" + format(round(amount + tax, 2), ",.2f")
'''
REPORT_AFTER = '''\
"""Order reports."""


def format_price(amount: float) -> str:
    """``amount`` as dollars with thousands separators and cents: $1,234.50."""
    return "$" + format(round(amount, 2), ",.2f")


def line_item(name: str, amount: float) -> str:
    return name + ": " + format_price(amount)


def subtotal_line(amount: float) -> str:
    return "Subtotal: " + format_price(amount)


def total_line(amount: float, tax: float) -> str:
    return "Total: " + format_price(amount + tax)
'''
REPORT_WRONG = REPORT_AFTER.replace('format(round(amount, 2), ",.2f")', 'f"{amount:.2f}"')
REPORT_TESTS = """\
import unittest

from report import line_item, subtotal_line, total_line


class ReportTest(unittest.TestCase):
    def test_line_item(self):
        self.assertEqual(line_item("Desk", 1234.5), "Desk: $1,234.50")

    def test_subtotal(self):
        self.assertEqual(subtotal_line(99.999), "Subtotal: $100.00")

    def test_total(self):
        self.assertEqual(total_line(1000, 0.5), "Total: $1,000.50")
"""


def _setup_report(root: Path) -> Path:
    init_repo(
        root,
        {
            ".gitignore": GITIGNORE,
            "report.py": REPORT_BEFORE,
            "tests/__init__.py": "",
            "tests/test_report.py": REPORT_TESTS,
        },
    )
    return root


def _check_report(ws: Path) -> Verdict:
    problems = [*_unchanged(ws, {"tests/test_report.py": REPORT_TESTS})]
    problems += _tests_pass(ws)
    source = (ws / "report.py").read_text() if (ws / "report.py").is_file() else ""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return Verdict.of([*problems, f"report.py does not parse: {exc.msg}"])
    names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    if "format_price" not in names:
        problems.append("report.py has no top-level function format_price")
    calls = sum(
        1
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "format_price"
    )
    if calls < 3:
        problems.append(f"format_price is called {calls} times; the three formatters must use it")
    if source.count(",.2f") > 1:
        problems.append("the price formatting is still written out more than once")
    problems += _hidden(
        ws,
        "from report import format_price as f\nassert f(1234.5) == '$1,234.50', f(1234.5)\n",
        "format_price is wrong",
    )
    return Verdict.of(problems)


register(
    Task(
        id="refactor-keep-tests",
        plan="refactor_safe",
        request=(
            "Please refactor report.py: the price formatting is copy-pasted in three places. "
            "Extract it into one function format_price(amount) and use it everywhere. The "
            "tests must stay green."
        ),
        setup=_setup_report,
        check=_check_report,
        solution=(
            sh("LC_ALL=C git status", "check_status"),
            sh("python3 -m unittest", "baseline_tests"),
            sh("grep -n '2f' report.py", "plan_refactor"),
            write("report.py", REPORT_AFTER, "apply_refactor"),
            sh("git diff --stat", "apply_refactor"),
            sh("python3 -m unittest", "retest"),
            sh(
                "git add report.py && git commit -q -m 'refactor: extract format_price' "
                "&& git show --stat --format=%s HEAD",
                "commit_refactor",
            ),
        ),
        wrong_solution=(write("report.py", REPORT_WRONG),),
        wrong_because="extracts the function but drops the thousands separator, untested",
        max_steps=14,
        tags=("python", "refactor"),
    )
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


def _check_ratelimit(ws: Path) -> Verdict:
    if not (ws / "ratelimit.py").is_file():
        return Verdict.of(["ratelimit.py does not exist"])
    problems = [*_unchanged(ws, {"tests/test_ratelimit.py": RATELIMIT_TESTS})]
    problems += _tests_pass(ws)
    problems += _hidden(
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
    return Verdict.of(problems)


register(
    Task(
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


def _check_api(ws: Path) -> Verdict:
    if not (ws / "client.py").is_file():
        return Verdict.of(["client.py does not exist"])
    problems = [
        *_unchanged(ws, {"tests/test_client.py": CLIENT_TESTS, "API.md": API_MD}),
        *_unchanged(ws, {"directory_service.py": DIRECTORY_SERVICE}),
    ]
    problems += _tests_pass(ws)
    problems += _hidden(
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
    return Verdict.of(problems)


register(
    Task(
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

# ------------------------------------------------------------------ upgrade-pinned-dependency

TINYFMT_1 = '''\
"""tinyfmt 1.0.0"""

__version__ = "1.0.0"


def fmt(template, **values):
    return template.format(**values)
'''
TINYFMT_2 = '''\
"""tinyfmt 2.0.0"""

__version__ = "2.0.0"


def render(template, values):
    """Fill ``template`` from the mapping ``values``."""
    return template.format_map(values)
'''
TINYFMT_CHANGES = """\
# tinyfmt changes

## 2.0.0
- `fmt(template, **values)` is removed: use `render(template, values)` with a dict.
"""
APP_OLD = '''\
"""The app: greetings."""

import tinyfmt


def greeting(name: str) -> str:
    return tinyfmt.fmt("Hello, {name}!", name=name)
'''
APP_NEW = '''\
"""The app: greetings."""

import tinyfmt


def greeting(name: str) -> str:
    return tinyfmt.render("Hello, {name}!", {"name": name})
'''
CHECK_PY = '''\
"""Checks the app against the pinned tinyfmt from vendor/ (offline)."""

import re
import sys
from pathlib import Path

root = Path(__file__).resolve().parent
pins = dict(re.findall(r"^([a-z0-9_-]+)==(\\S+)$", (root / "requirements.txt").read_text(), re.M))
version = pins.get("tinyfmt")
package = root / "vendor" / f"tinyfmt-{version}"
if not package.is_dir():
    print(f"check FAILED: tinyfmt=={version} is not in vendor/")
    sys.exit(1)
sys.path.insert(0, str(package))
sys.path.insert(0, str(root))
import tinyfmt  # noqa: E402

try:
    import app  # noqa: E402

    result = app.greeting("Ada")
except Exception as exc:
    print(f"check FAILED: {type(exc).__name__}: {exc}")
    sys.exit(1)
if tinyfmt.__version__ != version or result != "Hello, Ada!":
    print(f"check FAILED: tinyfmt {tinyfmt.__version__}, greeting {result!r}")
    sys.exit(1)
print(f"check passed: tinyfmt {version}, greeting ok")
'''
PIP_PY = '''\
"""An offline stand-in for pip: packages are the folders vendor/<name>-<version>."""

import re
import sys
from pathlib import Path

root = Path(__file__).resolve().parent.parent


def pins():
    text = (root / "requirements.txt").read_text()
    return dict(re.findall(r"^([a-z0-9_-]+)==(\\S+)$", text, re.M))


def versions(name):
    found = [p.name.split("-", 1)[1] for p in (root / "vendor").glob(f"{name}-*")]
    return sorted(found, key=lambda v: tuple(int(x) for x in v.split(".")))


def main(args):
    if args[:2] == ["list", "--outdated"]:
        rows = [(n, v, versions(n)[-1]) for n, v in pins().items() if versions(n)[-1] != v]
        if not rows:
            return 0
        print(f"{'Package':<10} {'Version':<8} Latest")
        print(f"{'-' * 10} {'-' * 8} {'-' * 6}")
        for name, current, latest in rows:
            print(f"{name:<10} {current:<8} {latest}")
        return 0
    if args[:1] == ["freeze"]:
        for name, version in pins().items():
            print(f"{name}=={version}")
        return 0
    if args[:2] == ["install", "-r"]:
        for name, version in pins().items():
            if version not in versions(name):
                print(f"ERROR: No matching distribution found for {name}=={version}")
                return 1
        print("Successfully installed " + " ".join(f"{n}-{v}" for n, v in pins().items()))
        return 0
    if args[:1] == ["check"]:
        print("No broken requirements found.")
        return 0
    print("usage: pip.py list --outdated | freeze | install -r requirements.txt | check")
    return 2


sys.exit(main(sys.argv[1:]))
'''


def _setup_dependency(root: Path) -> Path:
    init_repo(
        root,
        {
            ".gitignore": GITIGNORE,
            "requirements.txt": "tinyfmt==1.0.0\n",
            "app.py": APP_OLD,
            "check.py": CHECK_PY,
            "tools/pip.py": PIP_PY,
            "vendor/tinyfmt-1.0.0/tinyfmt.py": TINYFMT_1,
            "vendor/tinyfmt-2.0.0/tinyfmt.py": TINYFMT_2,
            "vendor/tinyfmt-2.0.0/CHANGES.md": TINYFMT_CHANGES,
        },
    )
    return root


def _check_dependency(ws: Path) -> Verdict:
    problems = [
        *_unchanged(
            ws,
            {
                "check.py": CHECK_PY,
                "vendor/tinyfmt-1.0.0/tinyfmt.py": TINYFMT_1,
                "vendor/tinyfmt-2.0.0/tinyfmt.py": TINYFMT_2,
            },
        )
    ]
    pins = ws / "requirements.txt"
    requirements = pins.read_text() if pins.is_file() else ""
    if not re.search(r"^tinyfmt==2\.0\.0$", requirements, re.M):
        problems.append("requirements.txt does not pin tinyfmt==2.0.0")
    ok, output = run_python(ws, "check.py")
    if not ok:
        problems.append(f"check.py fails: {output.strip()[-200:]}")
    return Verdict.of(problems)


register(
    Task(
        id="upgrade-pinned-dependency",
        plan="dependency_update",
        request=(
            "Please update dependencies: upgrade tinyfmt to 2.0.0 in requirements.txt and keep "
            "`python3 check.py` passing. We are offline: packages are the folders in vendor/, "
            "and tools/pip.py stands in for pip (python3 tools/pip.py list --outdated, "
            "freeze, install -r requirements.txt, check)."
        ),
        setup=_setup_dependency,
        check=_check_dependency,
        solution=(
            sh(
                "python3 tools/pip.py list --outdated && cat vendor/tinyfmt-2.0.0/CHANGES.md "
                "&& grep -n fmt app.py",
                "audit",
            ),
            sh(
                "cp requirements.txt requirements.txt.bak && python3 tools/pip.py freeze > "
                "pip-freeze.before.txt && sha256sum requirements.txt.bak pip-freeze.before.txt",
                "backup_lockfile",
            ),
            write("app.py", APP_NEW, "perform_update"),
            sh(
                "sed -i 's/^tinyfmt==1.0.0$/tinyfmt==2.0.0/' requirements.txt && "
                "python3 tools/pip.py install -r requirements.txt",
                "perform_update",
            ),
            sh("python3 tools/pip.py check", "check_consistency"),
            sh("python3 check.py", "run_tests"),
            sh(
                "rm requirements.txt.bak pip-freeze.before.txt && git add requirements.txt "
                "app.py && git commit -q -m 'deps: upgrade tinyfmt to 2.0.0' && "
                "git show --stat --format=%s HEAD",
                "commit",
            ),
        ),
        wrong_solution=(sh("sed -i 's/1.0.0/2.0.0/' requirements.txt && echo upgraded"),),
        wrong_because="bumps the pin without adapting the code to the new API or running the check",
        max_steps=14,
        tags=("python", "dependencies"),
    )
)
