"""The dashboard's statistics: ``GET /api/stats``, the ``/stats`` page and a plan page's section.

The store is filled by driving two real plans through the Navigator with
scripted tool results (one with a hostile id), one run finishing per minute
of the store's clock; the figures below follow from the scripts.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from waygraph import Navigator
from waygraph.draw.svg import heat_colour, to_svg
from waygraph.learning import plan_stats
from waygraph.library import Library
from waygraph.model import Plan
from waygraph.server import create_app
from waygraph.store.memory import MemoryStore

EVIL_PLAN = '<svg onload=alert("plan")>'
EVIL_MESSAGE = "<img src=x onerror=alert(1)> deploy the app"
EVIL_OUTPUT = '<b>boom</b> & "quoted"'


def _plan(pid: str, trigger: str) -> Plan:
    return Plan.model_validate(
        {
            "id": pid,
            "triggers": [trigger],
            "trigger_threshold": 1,
            "graph": {
                "start": "start",
                "nodes": {
                    "start": {"type": "start"},
                    "work": {
                        "type": "task",
                        "action": "do it",
                        "verify": {"type": "exit_code_zero"},
                    },
                    "done": {"type": "exit"},
                    "help": {"type": "escalate", "reason": "stuck"},
                },
                "edges": [
                    {"from": "start", "to": "work"},
                    {"from": "work", "to": "done", "condition": "on_success"},
                    {"from": "work", "to": "help", "condition": "on_fail"},
                ],
            },
        }
    )


#: (plan's trigger, the run's tool results, reset at once) per run, in finishing order.
RUNS: list[tuple[str, list[tuple[str, int]], bool]] = [
    ("build the app", [("built", 0)], False),
    ("build the app", [(EVIL_OUTPUT, 1)], False),  # escalates from work
    ("build the app", [], True),  # a suspected false activation
    ("build the app", [("built", 0)], False),
    ("deploy the app", [("deployed", 0)], False),
    ("build the app", [], True),
    ("build the app", [("built", 0)], False),
]


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def fill(nav: Navigator, clock: Clock, start: float) -> None:
    for i, (trigger, results, reset) in enumerate(RUNS):
        clock.now = start + 60 * i
        session = f"s{i}"
        nav.turn(session, user_message=f"please {trigger}")
        for output, code in results:
            nav.turn(session, tool_output=output, exit_code=code)
        if reset:
            nav.reset(session)
    # The hostile plan's own false activation, with a hostile message.
    clock.now = start + 60 * len(RUNS)
    nav.turn("evil", user_message=EVIL_MESSAGE)
    nav.reset("evil")


@pytest.fixture
def filled() -> Iterator[tuple[TestClient, MemoryStore]]:
    # Runs finish over the last ten minutes of the real clock: inside ?since=1h, not 1m... 2m.
    start = time.time() - 600
    clock = Clock(start)
    store = MemoryStore(clock=clock)
    library = Library([_plan("build_app", "build the app"), _plan(EVIL_PLAN, "deploy the app")])
    nav = Navigator(library, store=store, strict=True)
    fill(nav, clock, start)
    clock.now = time.time()
    with TestClient(create_app(nav), base_url="http://127.0.0.1") as client:
        yield client, store


@pytest.fixture
def empty() -> Iterator[TestClient]:
    with TestClient(create_app(store="memory://"), base_url="http://127.0.0.1") as client:
        yield client


def plan_of(body: dict[str, Any], plan: str) -> dict[str, Any]:
    found: dict[str, Any] = next(p for p in body["plans"] if p["plan"] == plan)
    return found


# ---------------------------------------------------------------- the API


def test_api_stats_gives_the_figures_of_waygraph_stats(filled: tuple[TestClient, MemoryStore]):
    client, store = filled
    body = client.get("/api/stats").json()
    build = plan_of(body, "build_app")
    assert build["runs"] == 6 and build["running"] == 0
    assert build["counts"] == {
        "completed": 3,
        "escalated": 1,
        "expired": 0,
        "aborted": 2,
        "failed": 0,
    }
    assert build["shares"]["completed"] == 0.5 and build["shares"]["aborted"] == 0.3333
    assert build["false_activations"] == 2 and build["median_tool_results"] == 1.0
    work = next(n for n in build["nodes"] if n["node"] == "work")
    assert (work["attempts"], work["failures"], work["failure_rate"]) == (4, 1, 0.25)
    help_node = next(n for n in build["nodes"] if n["node"] == "help")
    assert work["escalations"] == 0 and help_node["escalations"] == 1  # counted where it ended
    assert work["failing_outputs"] == [{"line": EVIL_OUTPUT, "count": 1}]
    assert sum(b["runs"] for b in build["trend"]) == 6
    assert body["false_activations"] == 3
    messages = {a["message"] for a in body["suspected_false_activations"]}
    assert messages == {"please build the app", EVIL_MESSAGE}
    # The same model the CLI prints with --json, bar the clock.
    cli = plan_stats(store, now=body["now"]).model_dump(mode="json")
    assert body == cli


def test_api_stats_one_plan_and_a_period(filled: tuple[TestClient, MemoryStore]):
    client, _ = filled
    one = client.get("/api/stats", params={"plan": EVIL_PLAN, "since": "1h"}).json()
    assert [p["plan"] for p in one["plans"]] == [EVIL_PLAN]
    assert one["since"] is not None and one["since"] % 60 == 0
    assert client.get("/api/stats", params={"since": "1s"}).json()["plans"] == []


def test_api_stats_refuses_a_bad_period_and_a_plan_without_runs(
    filled: tuple[TestClient, MemoryStore],
):
    client, _ = filled
    for bad in ("soon", "0d", "7 days", "-1h", "99999999999w"):
        answer = client.get("/api/stats", params={"since": bad})
        assert answer.status_code == 422, bad
        assert answer.json()["error"] == "invalid_request"
        assert answer.json()["message"].startswith(f"since {bad!r} is "), answer.json()
    missing = client.get("/api/stats", params={"plan": "nope", "since": "7d"})
    assert missing.status_code == 404 and missing.json()["error"] == "runs_not_found"
    assert missing.json()["message"] == (
        f"no finished or running runs of plan 'nope' in the last 7d; "
        f"plans with runs: {', '.join(sorted(['build_app', EVIL_PLAN]))}"
    )
    doc = client.get("/openapi.json").json()["paths"]["/api/stats"]["get"]
    assert {"401", "404", "422"} <= set(doc["responses"]) and doc["tags"] == ["plans"]


def test_api_stats_of_an_empty_store(empty: TestClient):
    body = empty.get("/api/stats").json()
    assert body["plans"] == [] and body["false_activations"] == 0
    assert empty.get("/api/stats?plan=x").json()["message"].endswith("the store has no runs")


# ---------------------------------------------------------------- the page


def test_stats_page_shows_the_figures_charts_and_false_activations(
    filled: tuple[TestClient, MemoryStore],
):
    client, _ = filled
    page = client.get("/stats")
    assert page.status_code == 200
    text = page.text
    assert '<a href="/stats" class=active>Statistics</a>' in text
    row = re.search(r'<tr data-plan="build_app">.*?</tr>', text)
    assert row is not None
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row.group(0))
    plain = [re.sub(r"<[^>]+>", "", c) for c in cells]
    assert plain[:7] == ["build_app", "6", "3 (50%)", "1 (17%)", "0 (0%)", "2 (33%)", "0"]
    assert plain[8:10] == ["1", "2"]  # median tool results, false activations
    assert 'href="/plans/build_app#statistics"' in row.group(0)
    # One chart per plan, one bar per trend bucket, each with its runs and start as text.
    body = client.get("/api/stats").json()
    charts = re.findall(r'<svg [^>]*class="chart outcomes".*?</svg>', text)
    assert len(charts) == len(body["plans"]) == 2
    for chart, plan in zip(charts, body["plans"], strict=True):
        assert chart.count('<g class="bar"') == len(plan["trend"])
        assert chart.count('class="when"') == len(plan["trend"])
        assert sorted(map(int, re.findall(r'data-runs="(\d+)"', chart))) == sorted(
            b["runs"] for b in plan["trend"]
        )
        assert "<title id=" in chart and "<desc id=" in chart and 'role="img"' in chart
    build_chart = charts[[p["plan"] for p in body["plans"]].index("build_app")]
    assert build_chart.count('class="seg o-completed"') == sum(
        1 for b in plan_of(body, "build_app")["trend"] if b["counts"]["completed"]
    )
    assert 'fill="#2b8a3e"' in build_chart  # the dashboard's done green
    assert "Runs finished per slice of the period, oldest first." in build_chart
    for outcome in ("completed", "escalated", "expired", "aborted", "failed"):
        assert f'<span class="key o-{outcome}">' in text
    assert "Suspected false activations (3)" in text and "please build the app" in text


def test_stats_page_escapes_hostile_plan_message_and_output(
    filled: tuple[TestClient, MemoryStore],
):
    client, _ = filled
    for path in ("/stats", f"/stats?plan={quote(EVIL_PLAN)}", f"/plans/{quote(EVIL_PLAN)}"):
        text = client.get(path).text
        assert EVIL_PLAN not in text and "<svg onload" not in text, path
        assert "&lt;svg onload=alert(&quot;plan&quot;)&gt;" in text, path
    stats = client.get("/stats").text
    assert EVIL_MESSAGE not in stats and "&lt;img src=x onerror=alert(1)&gt;" in stats
    plan = client.get("/plans/build_app").text
    assert EVIL_OUTPUT not in plan and "&lt;b&gt;boom&lt;/b&gt; &amp; &quot;quoted&quot;" in plan


def test_plan_page_draws_the_plan_heat_coloured_with_its_node_table(
    filled: tuple[TestClient, MemoryStore],
):
    client, _ = filled
    text = client.get("/plans/build_app?since=1h").text
    section = text[text.index("<section class=card id=statistics>") :]
    assert "6 finished runs: 50% completed, 17% escalated, 33% aborted; 0 running." in section
    drawing = section[section.index("id=heat-drawing") : section.index("</svg>")]
    # Only judged nodes are coloured: work (1 of 4 results failed), not start or the exits.
    work = re.search(r'<g class="node t-task heat" data-node="work">.*?</g>', drawing, re.S)
    assert work is not None
    assert f'style="fill:{heat_colour(0.25)}"' in work.group(
        0
    ) and "failure rate: 25%" in work.group(0)
    assert drawing.count(' heat"') == 1
    assert "no results judged" in section and "over 50%" in section
    row = re.search(r'<tr data-node="work">.*?</tr>', section)
    assert row is not None
    cells = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row.group(0))]
    assert cells[:5] == ["work", "6", "25% (1/4)", "0.67", "0"]
    assert "1×" in cells[5]
    # The period chips keep to the plan's section.
    assert 'href="/plans/build_app?since=7d#statistics"' in section
    assert 'href="/stats?plan=build_app&amp;since=1h"' in section


# ---------------------------------------------------------------- empty and bad


def test_empty_store_says_so_on_the_page_and_the_plan(empty: TestClient):
    page = empty.get("/stats")
    assert page.status_code == 200
    assert "No guided runs in the store yet." in page.text and "<svg" not in page.text
    plan = empty.get("/plans/bugfix_workflow").text
    assert "No finished or running runs of this plan in the period." in plan
    assert "id=heat-drawing" not in plan
    one = empty.get("/stats?plan=bugfix_workflow&since=7d")
    assert "no finished or running runs of plan &#x27;bugfix_workflow&#x27; in the last 7d" in (
        one.text
    )


def test_a_period_with_no_runs_and_a_bad_period_on_the_pages(
    filled: tuple[TestClient, MemoryStore],
):
    client, _ = filled
    quiet = client.get("/stats?since=1s")
    assert quiet.status_code == 200 and "No guided runs finished in this period." in quiet.text
    bad = client.get("/stats?since=soon")
    assert bad.status_code == 422
    assert "since &#x27;soon&#x27; is not a duration" in bad.text
    assert 'data-since="soon"' in bad.text  # the chips still offer the good periods
    plan = client.get("/plans/build_app?since=soon")
    assert plan.status_code == 422 and "since &#x27;soon&#x27; is not a duration" in plan.text
    assert "<h2>Graph</h2>" in plan.text  # the plan itself is still shown


def test_heat_fills_only_the_nodes_given():
    plan = _plan("p", "go")
    svg = to_svg(plan, heat={"work": 0.6, "nowhere": 1.0})
    assert svg.count('class="shape" style="fill:') == 1
    assert f'style="fill:{heat_colour(0.6)}"' in svg and heat_colour(0.6) == "#ff6b6b"
    assert to_svg(plan) == to_svg(plan, heat={})
