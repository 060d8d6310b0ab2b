"""The event commands: ``waygraph events tail/send/ask``, ``waygraph worker``, ``waygraph planner``.

The long-running commands run as real subprocesses against the shared NATS,
each test in streams of its own (the bus URL carries ``stream_prefix`` and
``subject_prefix``); error cases run in-process through typer's runner.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.bus_contract import async_test
from tests.test_events_nats import delete_streams, shared_nats_url, unique_prefixes
from waygraph.cli import app
from waygraph.events import Envelope, Topic
from waygraph.events.nats_bus import NatsBus

WORKER_MODULE = """
from waygraph.events import Worker

worker = Worker("echo")


@worker.on_task("echo.requested")
async def echo(task, context):
    return {"echo": task.data, "from": "cli"}
"""


@pytest.fixture
def bus_url() -> Iterator[str]:
    """A bus URL on the shared NATS with streams of this test's own, deleted after."""
    url = shared_nats_url()
    stream_prefix, subject_prefix = unique_prefixes()
    yield f"{url}?stream_prefix={stream_prefix}&subject_prefix={subject_prefix}"
    asyncio.run(delete_streams(url, stream_prefix))


class Command:
    """A ``waygraph`` subprocess whose stdout and stderr the test reads line by line."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.stderr: list[str] = []

    @classmethod
    async def start(cls, *args: str, cwd: Path | None = None) -> Command:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "waygraph",
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
        )
        return cls(process)

    async def wait_for_stderr(self, text: str, timeout: float = 20.0) -> None:
        assert self.process.stderr is not None

        async def scan() -> None:
            while True:
                line = await self.process.stderr.readline()  # type: ignore[union-attr]
                if not line:
                    raise AssertionError(f"exited before printing {text!r}: {self.stderr}")
                self.stderr.append(line.decode())
                if text in self.stderr[-1]:
                    return

        await asyncio.wait_for(scan(), timeout)

    async def stdout_line(self, timeout: float = 10.0) -> str:
        assert self.process.stdout is not None
        return (await asyncio.wait_for(self.process.stdout.readline(), timeout)).decode()

    async def finish(self, timeout: float = 20.0) -> tuple[int, str]:
        """Wait for exit; return the exit code and the rest of stderr."""
        _, rest = await asyncio.wait_for(self.process.communicate(), timeout)
        return int(self.process.returncode or 0), "".join(self.stderr) + rest.decode()

    def kill(self) -> None:
        if self.process.returncode is None:
            self.process.kill()


@async_test(timeout=60)
async def test_tail_prints_an_event_published_by_someone_else_as_json(bus_url: str) -> None:
    tail = await Command.start(
        "events", "tail", "--bus", bus_url, "--json", "--topic", "business-facts", "--count", "1"
    )
    try:
        await tail.wait_for_stderr("tailing business-facts")
        async with NatsBus(bus_url, source="test/cli") as bus:
            sent = bus.envelope("order.placed", {"order": 7}, correlation_id="c-7")
            await bus.publish(sent, Topic.BUSINESS_FACTS)
        line = json.loads(await tail.stdout_line())
        code, _ = await tail.finish()
    finally:
        tail.kill()
    assert code == 0  # --count 1 reached
    assert line["id"] == sent.id
    assert (line["type"], line["data"], line["topic"]) == (
        "order.placed",
        {"order": 7},
        "business-facts",
    )
    assert line["correlationid"] == "c-7" and line["specversion"] == "1.0"


@async_test(timeout=60)
async def test_tail_filters_by_type_glob_and_prints_one_readable_line_per_event(
    bus_url: str,
) -> None:
    tail = await Command.start("events", "tail", "--bus", bus_url, "--type", "web.*", "-n", "1")
    try:
        await tail.wait_for_stderr("tailing action-requests, action-results")
        async with NatsBus(bus_url, source="test/cli") as bus:
            await bus.publish(bus.envelope("order.placed", {"n": 1}), Topic.BUSINESS_FACTS)
            await bus.request("web.search.requested", {"query": "graphs"}, "web.search.completed")
        line = await tail.stdout_line()
        code, _ = await tail.finish()
    finally:
        tail.kill()
    assert code == 0
    assert "action-requests" in line and "web.search.requested" in line
    assert "reply=web.search.completed" in line and '{"query":"graphs"}' in line
    assert "order.placed" not in line


@async_test(timeout=60)
async def test_worker_answers_a_request_and_stops_cleanly_on_sigint(
    bus_url: str, tmp_path: Path
) -> None:
    module = tmp_path / "echo_worker.py"
    module.write_text(textwrap.dedent(WORKER_MODULE))
    worker = await Command.start("worker", str(module), "--bus", bus_url)
    try:
        await worker.wait_for_stderr("1 worker(s) running")
        assert any("worker echo: answering echo.requested" in line for line in worker.stderr)
        async with NatsBus(bus_url, source="test/cli") as bus:
            answer = await bus.ask("echo.requested", {"x": 1}, "echo.completed", timeout=10)
        worker.process.send_signal(signal.SIGINT)
        code, stderr = await worker.finish()
    finally:
        worker.kill()
    assert answer.data == {"echo": {"x": 1}, "from": "cli"}
    assert code == 0
    assert "stopping worker(s)" in stderr and "Traceback" not in stderr


@async_test(timeout=60)
async def test_worker_from_a_dotted_module_and_a_factory(bus_url: str, tmp_path: Path) -> None:
    (tmp_path / "myworkers.py").write_text(
        textwrap.dedent(
            """
            from waygraph.events import Worker

            def build(bus):
                worker = Worker("adder", bus=bus)

                @worker.on_task("math.add")
                async def add(task, context):
                    return {"sum": task.data["a"] + task.data["b"]}

                return [worker]
            """
        )
    )
    worker = await Command.start("worker", "myworkers:build", "--bus", bus_url, cwd=tmp_path)
    try:
        await worker.wait_for_stderr("1 worker(s) running")
        async with NatsBus(bus_url, source="test/cli") as bus:
            answer = await bus.ask("math.add", {"a": 2, "b": 3}, "math.added", timeout=10)
        worker.process.send_signal(signal.SIGTERM)
        code, _ = await worker.finish()
    finally:
        worker.kill()
    assert answer.data == {"sum": 5}
    assert code == 0


@pytest.mark.parametrize(
    ("module_text", "target", "message"),
    [
        (None, "{dir}/missing.py", "no such Python file"),
        (None, "no_such_module_xyz", "no module 'no_such_module_xyz'"),
        ("raise RuntimeError('broken on import')\n", "{file}", "RuntimeError: broken on import"),
        ("def f(:\n", "{file}", "SyntaxError"),
        ("x = 1\n", "{file}", "defines no Worker"),
        (WORKER_MODULE, "{file}:nope", "has no attribute 'nope'; candidates: worker"),
        (WORKER_MODULE, "{file}:echo", "{file}:echo(...) failed"),
        ("x = 1\n", "{file}:x", "is not a Worker"),
        (
            "from waygraph.events import InProcessBus, Worker\n"
            "w = Worker('w', bus=InProcessBus())\n",
            "{file}",
            "built with an in-process bus",
        ),
    ],
)
def test_bad_modules_are_one_clear_error_without_a_traceback(
    tmp_path: Path, module_text: str | None, target: str, message: str
) -> None:
    file = tmp_path / "user_module.py"
    if module_text is not None:
        file.write_text(textwrap.dedent(module_text))
    target = target.format(dir=tmp_path, file=file)
    result = CliRunner().invoke(
        app, ["worker", target, "--bus", "nats://127.0.0.1:4222"], catch_exceptions=False
    )
    assert result.exit_code == 2
    assert "error:" in result.output and message.format(file=file) in result.output
    assert "Traceback" not in result.output


def test_tail_refuses_an_unknown_topic() -> None:
    result = CliRunner().invoke(app, ["events", "tail", "--topic", "nope"])
    assert result.exit_code == 2
    assert "unknown topic 'nope'" in result.output and "action-requests" in result.output


def test_an_unreachable_bus_is_a_clear_error() -> None:
    result = CliRunner().invoke(app, ["events", "tail", "--bus", "nats://127.0.0.1:1"])
    assert result.exit_code == 2
    assert "cannot connect to NATS at nats://127.0.0.1:1" in result.output
    assert "Traceback" not in result.output


# ------------------------------------------------- send, ask, -v, bad machines

ECHO_PLANNER = """
from waygraph.events import Planner, StateAction, StateConfig, StateTransition
from waygraph.events.failures import PermanentError

SM = {
    "start": StateConfig(state_name="start", default_next="echoing"),
    "echoing": StateConfig(
        state_name="echoing",
        action=StateAction(event_type="echo.requested", data={"echo": "{goal_data.text}"}),
        transitions=[StateTransition(on_event="echo.completed", to_state="done")],
    ),
    "done": StateConfig(state_name="done", is_terminal=True),
}

planner = Planner("echo-planner")
planner.on_goal("echo.goal", state_machine=SM)


@planner.on_goal("refuse.goal")
async def refuse(goal, context):
    raise PermanentError("refused: " + goal.data["why"])
"""


async def run_cli(*args: str, timeout: float = 30.0) -> tuple[int, str, str]:
    """Run ``waygraph ARGS`` to the end: exit code, stdout, stderr."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "waygraph",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout)
    return int(process.returncode or 0), out.decode(), err.decode()


@async_test(timeout=60)
async def test_events_send_publishes_one_event_a_subscriber_sees(bus_url: str) -> None:
    got: list[Envelope] = []
    async with NatsBus(bus_url, source="test/cli") as bus:

        async def seen(event: Envelope) -> None:
            got.append(event)

        await bus.subscribe(Topic.BUSINESS_FACTS, "order.placed", seen)
        code, out, err = await run_cli(
            "events", "send", "order.placed", "--data", '{"order": 7}', "--bus", bus_url
        )
        assert (code, err) == (0, "")
        for _ in range(100):
            if got:
                break
            await asyncio.sleep(0.05)
    [event] = got
    assert (event.type, event.data, event.source) == ("order.placed", {"order": 7}, "waygraph-cli")
    assert out.strip() == f"sent order.placed on business-facts (id {event.id})"


@async_test(timeout=90)
async def test_events_ask_prints_the_answer_and_v_logs_each_handled_event(
    bus_url: str, tmp_path: Path
) -> None:
    (tmp_path / "echo_planner.py").write_text(textwrap.dedent(ECHO_PLANNER))
    (tmp_path / "echo_worker.py").write_text(textwrap.dedent(WORKER_MODULE))
    store = f"sqlite:///{tmp_path / 'plans.db'}"
    planner = await Command.start(
        "planner", str(tmp_path / "echo_planner.py"), "--bus", bus_url, "--store", store, "-v"
    )
    worker = await Command.start("worker", str(tmp_path / "echo_worker.py"), "--bus", bus_url, "-v")
    try:
        await planner.wait_for_stderr("1 planner(s) running")
        await worker.wait_for_stderr("1 worker(s) running")
        ask = ("events", "ask", "--bus", bus_url, "--timeout", "20")
        code, out, err = await run_cli(
            *ask, "echo.goal", "--data", '{"text": "hi"}', "--response-event", "echo.done", "--json"
        )
        assert (code, err) == (0, ""), out
        answer = json.loads(out)
        assert answer["type"] == "echo.done"
        assert answer["data"]["status"] == "completed"
        assert answer["data"]["result"]["results"]["echoing"]["echo"] == {"echo": "hi"}
        corr = answer["correlationid"]

        code, out, err = await run_cli(
            *ask, "refuse.goal", "-d", '{"why": "no budget"}', "-r", "refuse.done"
        )
        assert (code, err) == (1, "")
        refused = json.loads(out)
        assert refused["status"] == "failed"
        assert refused["error"] == {"type": "PermanentError", "message": "refused: no budget"}

        # -v: one line per handled event, with time, who, type, ids and outcome.
        await planner.wait_for_stderr("refuse.goal")
        goal_line = next(line for line in planner.stderr if " echo.goal " in line)
        assert f"corr={corr}" in goal_line and goal_line.rstrip().endswith("planned")
        assert "planner echo-planner" in goal_line
        assert re.match(r"\d\d:\d\d:\d\d\.\d\d\d ", goal_line)
        step = next(line for line in planner.stderr if " echo.completed " in line)
        assert step.rstrip().endswith("echoing -> done")
        assert "failed, answered: PermanentError: refused: no budget" in planner.stderr[-1]
        await worker.wait_for_stderr("echo.requested")
        task_line = worker.stderr[-1]
        assert "worker echo" in task_line and "goal=" in task_line
        assert task_line.rstrip().endswith("completed, answered echo.completed")
        for command in (planner, worker):
            command.process.send_signal(signal.SIGINT)
            code, rest = await command.finish()
            assert code == 0 and "Traceback" not in rest
    finally:
        planner.kill()
        worker.kill()


@async_test(timeout=60)
async def test_events_ask_without_an_answer_and_with_bad_data_exit_2(bus_url: str) -> None:
    code, out, err = await run_cli(
        "events", "ask", "nobody.goal", "-r", "nobody.done", "--timeout", "0.5", "--bus", bus_url
    )
    assert (code, out) == (2, "")
    assert err.startswith("error: no 'nobody.done' on action-results for 'nobody.goal'")
    assert "is a planner or worker for 'nobody.goal' running" in err
    assert len(err.strip().splitlines()) == 1
    for command in ("send", "ask"):
        extra = ("-r", "x.done") if command == "ask" else ()
        code, out, err = await run_cli(
            "events", command, "x.goal", *extra, "--data", "{topic: 1}", "--bus", bus_url
        )
        assert (code, out) == (2, "")
        assert err.startswith("error: --data is not valid JSON: Expecting property name")
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_planner_module_with_a_typo_in_its_machine_is_one_line_exit_2(tmp_path: Path) -> None:
    module = tmp_path / "typo_planner.py"
    module.write_text(textwrap.dedent(ECHO_PLANNER).replace('to_state="done"', 'to_state="dnoe"'))
    result = subprocess.run(
        [sys.executable, "-m", "waygraph", "planner", str(module), "--bus", "memory://"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "WAYGRAPH_DATABASE_URL": "memory://"},
    )
    assert result.returncode == 2
    assert result.stdout == "" and "Traceback" not in result.stderr
    [line] = result.stderr.strip().splitlines()
    assert (
        "planner 'echo-planner', goal 'echo.goal', state 'echoing', "
        "field 'transitions[0].to_state': unknown target state 'dnoe'"
    ) in line
    # Said at the user's line that registered the machine, not inside waygraph.
    assert line.endswith(f"({module}:16)")


def test_a_planner_with_a_goal_type_but_no_handler_does_not_start(tmp_path: Path) -> None:
    module = tmp_path / "no_handler.py"
    module.write_text(
        "from waygraph.events import Planner\n"
        "planner = Planner('p')\n"
        "planner.on_goal('x.goal')  # the @ was forgotten\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "waygraph", "planner", str(module), "--bus", "memory://"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "WAYGRAPH_DATABASE_URL": "memory://"},
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == (
        "error: planner 'p', goal 'x.goal': on_goal('x.goal') was called but no handler was "
        "registered; decorate an async function with it, or pass state_machine= to run a machine"
    )
