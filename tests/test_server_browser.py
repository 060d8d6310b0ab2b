"""The dashboard in a real browser: ``waygraph serve`` started for real, headless Chromium.

Chromium is Debian's (``make browser`` installs it); when it is missing the
test is skipped with the reason, or fails under WAYGRAPH_REQUIRE_SERVICES=1.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import unavailable

CHROMIUM = "/usr/bin/chromium"
# The machine's network is closed: without these Chromium stalls on its own background traffic.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
CURRENT_FILL = "rgb(255, 243, 191)"  # draw.STATUS_COLOURS["current"]
DONE_FILL = "rgb(211, 249, 216)"  # draw.STATUS_COLOURS["done"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    env = {**os.environ, "WAYGRAPH_TOKEN": ""}
    env.pop("WAYGRAPH_TOKEN")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "waygraph",
            "serve",
            "--port",
            str(port),
            "--store",
            f"sqlite:///{tmp_path / 'browser.db'}",
            "--workspace",
            str(tmp_path / "ws"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while True:
        try:
            if httpx.get(f"{base}/api/health", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            output = proc.stdout.read().decode() if proc.stdout else ""
            proc.kill()
            pytest.fail(f"waygraph serve did not start: {output}")
        time.sleep(0.1)
    yield base
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture
def browser() -> Iterator[object]:
    if not Path(CHROMIUM).exists():
        unavailable(f"Chromium is not installed at {CHROMIUM} (run `make browser` as root)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        unavailable(f"playwright is not installed: {exc}")
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


def node_fill(page: object, node: str) -> str:
    return page.eval_on_selector(  # type: ignore[attr-defined]
        f'g.node[data-node="{node}"] .shape', "el => getComputedStyle(el).fill"
    )


@pytest.mark.slow
def test_dashboard_shows_a_session_appear_and_its_current_node_move(server, browser, tmp_path):
    turns: list[int] = []

    def post(body: dict[str, object]) -> None:
        answer = httpx.post(f"{server}/api/sessions/browser-1/turn", json=body, timeout=10)
        turns.append(answer.status_code)

    page = browser.new_page(viewport={"width": 1400, "height": 900})  # type: ignore[attr-defined]
    page.goto(f"{server}/")
    assert page.locator('tr[data-session="browser-1"]').count() == 0
    # A background task drives the session through the HTTP API while the page is open.
    starter = threading.Timer(
        0.5, post, [{"user_message": "the login is broken, fix bug", "domain": "bugfix"}]
    )
    starter.start()
    row = page.locator('tr[data-session="browser-1"]')
    row.wait_for(timeout=15_000)  # the table refreshes itself: no reload
    assert "reproduce" in row.inner_text() and "running" in row.inner_text()
    page.screenshot(path=str(tmp_path / "sessions.png"), full_page=True)

    row.locator("a").first.click()
    page.wait_for_selector('g.node[data-node="reproduce"]')
    assert node_fill(page, "reproduce") == CURRENT_FILL
    driver = threading.Timer(
        0.5, post, [{"tool_output": "AssertionError: login failed", "exit_code": 1}]
    )
    driver.start()
    page.wait_for_function(
        """([done, current]) => {
            const fill = n => getComputedStyle(
                document.querySelector(`g.node[data-node="${n}"] .shape`)).fill;
            return fill("reproduce") === done && fill("isolate") === current;
        }""",
        arg=[DONE_FILL, CURRENT_FILL],
        timeout=15_000,
    )  # changed by the live stream, without a reload
    assert page.locator("#f-node").inner_text() == "isolate"
    assert page.locator('#timeline li[data-seq="7"]').count() == 1
    # The verdict arrived live with the output it judged: one line, expandable to the excerpt.
    judged = page.locator('#timeline li[data-seq="5"] details.output')
    assert judged.locator("summary").inner_text() == "passed AssertionError: login failed"
    assert not judged.locator("pre").is_visible()
    judged.locator("summary").click()
    assert judged.locator("pre").is_visible()
    assert judged.locator("pre").inner_text() == "AssertionError: login failed"
    page.screenshot(path=str(tmp_path / "session.png"), full_page=True)
    starter.join()
    driver.join()
    assert turns == [200, 200]
    assert (tmp_path / "session.png").stat().st_size > 10_000


def scrolls_sideways(page: object) -> bool:
    return bool(
        page.evaluate(  # type: ignore[attr-defined]
            "document.documentElement.scrollWidth > document.documentElement.clientWidth"
        )
    )


@pytest.mark.slow
def test_no_page_scrolls_sideways_at_1400_px(server, browser):
    httpx.post(
        f"{server}/api/sessions/wide-1/turn",
        json={"user_message": "the login is broken, fix bug", "domain": "bugfix"},
        timeout=10,
    )
    page = browser.new_page(viewport={"width": 1400, "height": 900})  # type: ignore[attr-defined]
    plans = [p["id"] for p in httpx.get(f"{server}/api/plans", timeout=10).json()["plans"]]
    for path in ["/", "/plans", "/stats", "/sessions/wide-1", *(f"/plans/{p}" for p in plans)]:
        page.goto(f"{server}{path}")
        assert not scrolls_sideways(page), path


def _run_async(make: object) -> None:
    """asyncio.run in a thread of its own: Playwright's sync API owns this thread's loop."""
    import asyncio

    failure: list[BaseException] = []

    def target() -> None:
        try:
            asyncio.run(make())  # type: ignore[operator]
        except BaseException as exc:  # handed to the test's thread
            failure.append(exc)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join(30)
    if failure:
        raise failure[0]


def _stored_dag_run(url: str) -> str:
    """A generated run stopped while its second step runs: a done, b current, c pending."""
    import asyncio

    from waygraph.planning import Plan, PlanningAgent

    gate = asyncio.Event()
    started: list[str] = []

    async def work(name: str) -> str:
        started.append(name)
        if name == "b":
            await gate.wait()
        return name

    plan = Plan(
        goal="fetch and merge",
        steps=[
            {"id": "a", "action": "work", "parameters": {"name": "a"}},
            {"id": "b", "action": "work", "parameters": {"name": "b"}, "dependencies": ["a"]},
            {"id": "c", "action": "work", "parameters": {"name": "c"}, "dependencies": ["b"]},
        ],
    )

    async def run() -> None:
        agent = PlanningAgent(None, tools=[work], store=url)
        task = asyncio.ensure_future(agent.execute_plan(plan, run_id="dag_browser"))
        while "b" not in started:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.1)  # the commit of b's start lands
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    _run_async(run)
    return "dag_browser"


def _stored_event_plan(url: str) -> str:
    """A finished event-driven plan in session team-browser."""

    from waygraph.events import (
        InProcessBus,
        PlanContext,
        Planner,
        StateAction,
        StateConfig,
        StateTransition,
    )
    from waygraph.store import open_store

    machine = {
        "start": StateConfig(state_name="start", default_next="work"),
        "work": StateConfig(
            state_name="work",
            action=StateAction(event_type="job.work.requested"),
            transitions=[StateTransition(on_event="job.work.completed", to_state="done")],
        ),
        "done": StateConfig(state_name="done", is_terminal=True),
    }

    async def run() -> None:
        planner = Planner("jobs", bus=InProcessBus(), store=open_store(url))
        bus = planner.context.bus
        goal = bus.envelope("job.goal", {"n": 2}, correlation_id="c1", session_id="team-browser")
        plan = await PlanContext.create_from_goal(
            goal, state_machine=machine, context=planner.context
        )
        await plan.execute_next()
        await plan.execute_next(bus.envelope("job.work.completed", {}, correlation_id="c1"))
        await plan.finalize({"ok": True})

    _run_async(run)
    return "team-browser"


@pytest.mark.slow
def test_every_kind_of_run_is_drawn_and_told_on_its_page(server, browser, tmp_path):
    """A guided run, a generated plan's run and an event-driven plan, one screenshot each."""
    url = f"sqlite:///{tmp_path / 'browser.db'}"
    httpx.post(
        f"{server}/api/sessions/guided-1/turn",
        json={"user_message": "the login is broken, fix bug", "domain": "bugfix"},
        timeout=10,
    )
    dag = _stored_dag_run(url)
    event = _stored_event_plan(url)
    page = browser.new_page(viewport={"width": 1400, "height": 900})  # type: ignore[attr-defined]
    expected = {
        "guided-1": ({"reproduce": CURRENT_FILL}, "Entered reproduce"),
        dag: ({"a": DONE_FILL, "b": CURRENT_FILL}, "Step a completed"),
        event: ({"work": DONE_FILL, "done": DONE_FILL}, "Entered state work"),
    }
    for session, (fills, words) in expected.items():
        page.goto(f"{server}/sessions/{session}")
        page.wait_for_selector("g.node")
        for node, fill in fills.items():
            assert node_fill(page, node) == fill, (session, node)
        timeline = page.locator("#timeline").inner_text()
        assert words in timeline, (session, timeline)
        assert "{" not in timeline, (session, "a JSON dump in the timeline")
        if session == dag:
            assert page.locator("#f-node").inner_text() == "b"  # the steps running, in words
            page.goto(f"{server}/plans/fetch-and-merge")  # drawn from the stored run
            page.wait_for_selector('g.node[data-node="c"]')
            page.goto(f"{server}/sessions/{session}")
            page.wait_for_selector("g.node")
        shot = tmp_path / f"{session}.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000
    assert node_fill(page, "start") == DONE_FILL  # the event plan's path starts there

    # The fourth kind: a session plan a model declares, drawn as it grows.
    from waygraph.sessions import SessionPlanner

    planner = SessionPlanner(tmp_path / "ws", max_iterations=20, store=url)
    planner.on_user_message("chat-1", "Migrate the blog to Hugo")
    planner.after_model_reply("chat-1", "[Step] Export posts\n[Step] Convert\nExporting.", 1)
    planner.after_model_reply("chat-1", "Exported 12 posts. [done]", 1)
    page.goto(f"{server}/")
    page.locator("#session-plans a", has_text="chat-1").click()
    page.wait_for_selector('g.node[data-node="step_2"]')
    assert node_fill(page, "step_1") == DONE_FILL
    assert node_fill(page, "step_2") == CURRENT_FILL
    assert "Convert" in page.locator("ol.steps").inner_text()
    page.screenshot(path=str(tmp_path / "session-plan.png"), full_page=True)
    assert (tmp_path / "session-plan.png").stat().st_size > 10_000
    planner.after_model_reply("chat-1", "[Step] Check the links", 1)
    page.wait_for_selector('g.node[data-node="step_3"]', timeout=15_000)  # reloaded by itself

    # The same plan as a run record of kind session, on its session's page.
    planner.close()
    page.goto(f"{server}/sessions/chat-1")
    page.wait_for_selector('g.node[data-node="step_3"]')
    assert node_fill(page, "step_1") == DONE_FILL
    assert node_fill(page, "step_2") == CURRENT_FILL
    timeline = page.locator("#timeline").inner_text()
    assert "Declared step_3: Check the links" in timeline and "{" not in timeline
    assert page.locator("#f-node").inner_text() == "step_2: Convert"
    page.screenshot(path=str(tmp_path / "session-record.png"), full_page=True)
    assert (tmp_path / "session-record.png").stat().st_size > 10_000


@pytest.mark.slow
def test_sessions_list_counts_pages_searches_and_stays_live(server, browser, tmp_path):
    from waygraph.library import load_library
    from waygraph.navigator import Navigator

    # A fleet written straight into the server's store by another process's Navigator.
    nav = Navigator(load_library(), store=f"sqlite:///{tmp_path / 'browser.db'}")
    for i in range(55):
        nav.turn(f"fleet-{i:03d}", user_message="the login is broken, fix bug", domain="bugfix")
    nav.close()
    page = browser.new_page(viewport={"width": 1400, "height": 900})  # type: ignore[attr-defined]
    page.goto(f"{server}/")
    assert page.locator("#sessions-count").inner_text() == "Showing 1–50 of 55"
    assert page.locator("#sessions-body tr").count() == 50
    assert page.locator("#page-older").is_visible() and not page.locator("#page-newer").is_visible()
    assert page.locator('#status-chips [data-chip="running"] .n').inner_text() == "55"
    assert not scrolls_sideways(page)

    # A new session: the count, the chips and the rows follow without a reload.
    httpx.post(
        f"{server}/api/sessions/fleet-new/turn",
        json={"user_message": "the login is broken, fix bug", "domain": "bugfix"},
        timeout=10,
    )
    page.wait_for_function(
        "() => document.querySelector('#sessions-count').textContent === 'Showing 1–50 of 56'",
        timeout=15_000,
    )
    assert page.locator('#status-chips [data-chip=""] .n').inner_text() == "56"
    assert page.locator("#sessions-body tr").first.get_attribute("data-session") == "fleet-new"

    page.locator("#page-older").click()
    page.wait_for_url("**/?page=2")
    assert page.locator("#sessions-count").inner_text() == "Showing 51–56 of 56"
    assert page.locator("#page-of").inner_text() == "Page 2 of 2"
    assert not page.locator("#page-older").is_visible()

    page.fill("#search input[name=q]", "FLEET-01")
    page.press("#search input[name=q]", "Enter")
    page.wait_for_url("**/?q=FLEET-01")
    assert page.locator("#sessions-count").inner_text() == "Showing 1–10 of 10"
    shown = page.locator("#sessions-body tr").evaluate_all(
        "rows => rows.map(r => r.dataset.session)"
    )
    assert shown == [f"fleet-{i:03d}" for i in range(19, 9, -1)]
    assert "q=FLEET-01" in (
        page.locator('#status-chips [data-chip="running"]').get_attribute("href") or ""
    )


#: Tool results of bugfix runs through the HTTP API: straight through, and a bug that never shows.
CLEAN = [
    ("Traceback (most recent call last):\nKeyError: 'user'", 1),
    ("src/login.py:42 reads user before the check", 0),
    (" src/login.py | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)", 0),
    ("3 passed in 0.1s", 0),
    ("120 passed in 2.0s", 0),
]
NO_REPRO = [("", 0), ("", 0)]


@pytest.mark.slow
def test_statistics_page_charts_outcomes_and_heats_the_plan(server, browser, tmp_path):
    bug = {"user_message": "the login is broken, fix bug", "domain": "bugfix"}
    for session, results in (("ok-1", CLEAN), ("ok-2", CLEAN), ("stuck-1", NO_REPRO)):
        assert httpx.post(f"{server}/api/sessions/{session}/turn", json=bug).status_code == 200
        for output, code in results:
            # The command a host reports: the bound test steps count only a runner.
            body = {"tool_output": output, "exit_code": code, "tool_args": "python -m pytest -q"}
            assert httpx.post(f"{server}/api/sessions/{session}/turn", json=body).is_success
    httpx.post(f"{server}/api/sessions/oops-1/turn", json=bug, timeout=10)
    assert httpx.delete(f"{server}/api/sessions/oops-1", timeout=10).status_code == 200
    stats = httpx.get(f"{server}/api/stats", timeout=10).json()  # as the page: every run
    (bugfix,) = stats["plans"]
    assert bugfix["counts"]["completed"] == 2 and bugfix["counts"]["escalated"] == 1

    page = browser.new_page(viewport={"width": 1400, "height": 900})  # type: ignore[attr-defined]
    page.goto(f"{server}/")
    page.locator("header nav a", has_text="Statistics").click()
    page.wait_for_url("**/stats")
    row = page.locator('#stats-plans tr[data-plan="bugfix_workflow"]')
    assert row.locator('td[data-outcome="completed"]').inner_text() == "2 (50%)"
    assert row.locator('td[data-outcome="aborted"]').inner_text() == "1 (25%)"
    chart = page.locator('figure[data-plan="bugfix_workflow"] svg.chart')
    assert chart.locator("g.bar").count() == len(bugfix["trend"])
    assert chart.locator("rect.o-completed").count() >= 1
    assert chart.locator("title").first.text_content() == (
        "Outcome shares of plan bugfix_workflow over the period"
    )
    assert "the login is broken, fix bug" in page.locator("#false-activations").inner_text()
    assert not scrolls_sideways(page)
    page.screenshot(path=str(tmp_path / "stats.png"), full_page=True)
    assert (tmp_path / "stats.png").stat().st_size > 10_000

    page.locator('#stats-plans tr[data-plan="bugfix_workflow"] a', has_text="nodes").click()
    page.wait_for_selector("#heat-drawing g.node")
    heat = '#heat-drawing g.node[data-node="{}"] .shape'

    def fill(node: str) -> str:
        return page.eval_on_selector(heat.format(node), "el => getComputedStyle(el).fill")

    assert fill("gather_context") == "rgb(255, 107, 107)"  # 1 of 1 results failed: over 50%
    assert fill("reproduce") == "rgb(255, 168, 168)"  # 1 of 3: 25-50%
    assert fill("isolate") == "rgb(235, 251, 238)"  # judged twice, never failed
    assert fill("start") == "rgb(231, 245, 255)"  # never judged: the start's own colour
    assert page.locator('#node-stats tr[data-node="reproduce"]').inner_text().split("\t")[2] == (
        "33% (1/3)"
    )
    assert not scrolls_sideways(page)
    page.screenshot(path=str(tmp_path / "plan-stats.png"), full_page=True)
    assert (tmp_path / "plan-stats.png").stat().st_size > 10_000


@pytest.mark.slow
def test_a_person_answers_a_waiting_run_from_its_page(server, browser, tmp_path):
    from tests.answer_plans import PROMPT, library
    from waygraph.navigator import Navigator

    # Started by an agent's own Navigator: the server finds the plans in the store.
    with Navigator(library(), store=f"sqlite:///{tmp_path / 'browser.db'}") as nav:
        nav.start("gate-1", "deploy_gate")
        nav.start("confirm-1", "migration")
    page = browser.new_page(viewport={"width": 1400, "height": 900})  # type: ignore[attr-defined]
    page.goto(f"{server}/")
    waiting = page.locator("#sessions-body .tag.waiting")
    assert waiting.count() == 2 and waiting.first.inner_text() == "waiting for the user"

    page.goto(f"{server}/sessions/gate-1")
    box = page.locator("#answer")
    assert box.is_visible() and page.locator("#answer-prompt").inner_text() == PROMPT
    assert page.locator("#answer-choices button").all_inner_texts() == ["[Y] Yes", "[N] No"]
    assert not page.locator("#answer-form").is_visible()
    assert page.locator("#f-waiting").inner_text() == "the user"
    assert node_fill(page, "ok") == CURRENT_FILL
    page.screenshot(path=str(tmp_path / "waiting.png"), full_page=True)
    page.locator("#answer-choices button", has_text="[Y] Yes").click()
    # The answer goes through the API; the live stream moves the page on, no reload.
    page.wait_for_function(
        "() => document.querySelector('#f-node').textContent === 'deploy'", timeout=15_000
    )
    page.wait_for_selector("#answer", state="hidden", timeout=15_000)
    assert page.locator("#f-waiting").inner_text() == "the agent"
    assert page.locator("#answer-error").is_hidden()
    page.wait_for_function(
        """([done, current]) => {
            const fill = n => getComputedStyle(
                document.querySelector(`g.node[data-node="${n}"] .shape`)).fill;
            return fill("ok") === done && fill("deploy") === current;
        }""",
        arg=[DONE_FILL, CURRENT_FILL],
        timeout=15_000,
    )
    # The timeline follows the event stream, which may arrive after the facts' refresh.
    answered = page.locator("#timeline li", has_text="The user answered")
    answered.wait_for(timeout=15_000)
    assert "The user answered “[Y] Yes” at ok: chose '[Y] Yes' → deploy" in answered.inner_text()

    # A manual check: a text field and Send; words without CONFIRMED leave it waiting.
    page.goto(f"{server}/sessions/confirm-1")
    assert page.locator("#answer-choices button").count() == 0
    assert page.locator("#answer-form input").get_attribute("placeholder") == "CONFIRMED"
    page.screenshot(path=str(tmp_path / "confirm.png"), full_page=True)
    page.fill("#answer-form input", "CONFIRMED")
    page.locator("#answer-form button").click()
    page.wait_for_function(
        "() => document.querySelector('#f-node').textContent === 'notes'", timeout=15_000
    )
    page.wait_for_selector("#answer", state="hidden", timeout=15_000)
    page.screenshot(path=str(tmp_path / "answered.png"), full_page=True)
    assert (tmp_path / "answered.png").stat().st_size > 10_000
    page.goto(f"{server}/")
    assert page.locator("#sessions-body .tag.waiting").count() == 0


@pytest.mark.slow
def test_a_pipeline_run_is_drawn_and_its_gate_answered_on_its_page(server, browser, tmp_path):
    """A run `waygraph run --store` saved: drawn from its stored plan, its human gate answered."""
    from tests.test_pipeline_sessions import waiting_run

    records = waiting_run(f"sqlite:///{tmp_path / 'browser.db'}")
    cp, plan = records.load("pl_gate")
    page = browser.new_page(viewport={"width": 1400, "height": 900})  # type: ignore[attr-defined]
    page.goto(f"{server}/")
    row = page.locator('#sessions-body tr[data-session="pl_gate"]')
    assert "pipeline" in row.inner_text() and "waiting for the user" in row.inner_text()

    page.goto(f"{server}/sessions/pl_gate")
    page.wait_for_selector('g.node[data-node="review"]')
    assert node_fill(page, "build") == DONE_FILL
    assert node_fill(page, "review") == CURRENT_FILL
    assert node_fill(page, "done") not in (DONE_FILL, CURRENT_FILL)
    timeline = page.locator("#timeline").inner_text()
    assert "Step build completed" in timeline and "Asked the user at review" in timeline
    assert page.locator("#f-waiting").inner_text() == "the user"
    assert page.locator("#answer-choices button").all_inner_texts() == ["[Y] Yes", "[N] No"]
    page.screenshot(path=str(tmp_path / "pipeline-run.png"), full_page=True)
    assert (tmp_path / "pipeline-run.png").stat().st_size > 10_000

    page.locator("#answer-choices button", has_text="[Y] Yes").click()
    page.wait_for_selector("#answer", state="hidden", timeout=15_000)
    assert records.answered("pl_gate", cp.waiting["id"])["choice"] == "[Y] Yes"
    # The runner takes the answer and checkpoints the gate: the page follows by itself.
    done = (*cp.completed_nodes, "review")
    outcomes = {**cp.node_outcomes, "review": cp.node_outcomes["build"]}
    moved = {"completed_nodes": done, "node_outcomes": outcomes, "current_node": "review"}
    moved |= {"next_node": "done", "waiting": None, "status": "running"}
    records.save(cp.model_copy(update=moved), plan)
    page.wait_for_function(
        """([done, current]) => {
            const fill = n => getComputedStyle(
                document.querySelector(`g.node[data-node="${n}"] .shape`)).fill;
            return fill("review") === done && fill("done") === current;
        }""",
        arg=[DONE_FILL, CURRENT_FILL],
        timeout=15_000,
    )
    page.locator("#timeline li", has_text="Step review completed").wait_for(timeout=15_000)
    assert "The user answered “[Y] Yes” at review" in page.locator("#timeline").inner_text()
    assert page.locator("#f-status").inner_text() == "running"
    page.screenshot(path=str(tmp_path / "pipeline-run-answered.png"), full_page=True)
    assert (tmp_path / "pipeline-run-answered.png").stat().st_size > 10_000
