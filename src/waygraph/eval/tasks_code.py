"""Code tasks: fix a failing test, fix a reported bug, refactor with the tests kept.

Every project here is standard-library Python tested with ``unittest``, so
the workspaces need nothing installed and no network. The other code tasks
are in :mod:`waygraph.eval.tasks_api` and :mod:`waygraph.eval.tasks_deps`.
"""

from __future__ import annotations

import ast
from pathlib import Path

from waygraph.eval.suite import EvalTask, TaskVerdict, register, sh, write
from waygraph.eval.workspace import (
    GITIGNORE,
    hidden_check,
    init_repo,
    tests_pass,
    unchanged_files,
)

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


def _check_pricing(ws: Path) -> TaskVerdict:
    problems = [*unchanged_files(ws, {"tests/test_pricing.py": PRICING_TESTS})]
    problems += tests_pass(ws)
    problems += hidden_check(
        ws,
        "from pricing import apply_discount as d\n"
        "assert d(50.0, 20) == 40.0, d(50.0, 20)\n"
        "assert d(19.99, 15) == 16.99, d(19.99, 15)\n",
        "apply_discount gives wrong prices",
    )
    return TaskVerdict.of(problems)


register(
    EvalTask(
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


def _check_textutil(ws: Path) -> TaskVerdict:
    problems = [*unchanged_files(ws, {"tests/test_textutil.py": TEXTUTIL_TESTS})]
    problems += tests_pass(ws)
    problems += hidden_check(
        ws,
        "from textutil import slugify as s\n"
        "cases = {'Hello, World!': 'hello-world', \"C'est la vie\": 'c-est-la-vie',\n"
        "         'Q&A: 2024 (draft)': 'q-a-2024-draft', 'a -- b': 'a-b',\n"
        "         'Already-slug': 'already-slug'}\n"
        "for given, want in cases.items():\n"
        "    assert s(given) == want, f'slugify({given!r}) = {s(given)!r}, want {want!r}'\n",
        "slugify is still wrong",
    )
    return TaskVerdict.of(problems)


register(
    EvalTask(
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
            # The bound test step counts a test runner's evidence only (issue 32).
            sh("python3 -m unittest -v", "test"),
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


def _check_report(ws: Path) -> TaskVerdict:
    problems = [*unchanged_files(ws, {"tests/test_report.py": REPORT_TESTS})]
    problems += tests_pass(ws)
    source = (ws / "report.py").read_text() if (ws / "report.py").is_file() else ""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return TaskVerdict.of([*problems, f"report.py does not parse: {exc.msg}"])
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
    problems += hidden_check(
        ws,
        "from report import format_price as f\nassert f(1234.5) == '$1,234.50', f(1234.5)\n",
        "format_price is wrong",
    )
    return TaskVerdict.of(problems)


register(
    EvalTask(
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
