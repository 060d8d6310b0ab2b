"""The event commands: ``waygraph events tail``, ``waygraph worker``, ``waygraph planner``.

The long-running commands run as real subprocesses against the shared NATS,
each test in streams of its own (the bus URL carries ``stream_prefix`` and
``subject_prefix``); error cases run in-process through typer's runner.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.bus_contract import async_test
from tests.test_events_nats import delete_streams, shared_nats_url, unique_prefixes
from waygraph.cli import app
from waygraph.events import Topic
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
