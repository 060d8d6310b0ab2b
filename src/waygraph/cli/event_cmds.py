"""Event commands: ``waygraph worker``, ``waygraph planner``, ``waygraph events tail/send/ask``.

``worker`` and ``planner`` run the workers or planners a Python module
defines against a bus until Ctrl-C (or SIGTERM), then shut down cleanly
(``-v``: a line per handled event); ``events tail`` prints events as they
happen, ``events send`` publishes one, ``events ask`` publishes a goal and
prints its answer. The bus URL comes from
``--bus``, else ``WAYGRAPH_NATS_URL``, else ``nats://127.0.0.1:4222``.
"""

from __future__ import annotations

import fnmatch
import inspect
import json
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from waygraph.cli.app import app, console, err_console, friendly_errors, plain
from waygraph.cli.user_code import describe_error, load_user_module
from waygraph.errors import ConfigError

if TYPE_CHECKING:
    import asyncio

    from waygraph.events import Bus, Envelope

__all__ = ["events_app", "find_runnables", "run_until_stopped"]

T = TypeVar("T")

DEFAULT_BUS_URL = "nats://127.0.0.1:4222"

BusOption = Annotated[
    str,
    typer.Option(
        "--bus",
        help="Bus URL: nats://HOST:PORT (options may follow, e.g. ?stream_prefix=X) or memory://.",
        envvar="WAYGRAPH_NATS_URL",
        show_default=True,
    ),
]

#: Seconds to wait for NATS and PostgreSQL at start (kept in step with waygraph.events.startup).
DEFAULT_WAIT = 60.0

WaitOption = Annotated[
    float,
    typer.Option(
        "--wait",
        min=0,
        metavar="SECONDS",
        help="At start, wait this long for NATS (and the planner's PostgreSQL store) to "
        "answer, trying again with a line per try; 0: try once. Then exit 2.",
    ),
]

events_app = typer.Typer(
    help="Watch the event bus.", no_args_is_help=True, pretty_exceptions_enable=False
)
app.add_typer(events_app, name="events")


# ------------------------------------------------------------------ running


def run_until_stopped(main: Callable[[asyncio.Event], Awaitable[None]]) -> None:
    """Run ``main(stop)`` in a fresh event loop; SIGINT and SIGTERM set ``stop``.

    ``main`` should wait for ``stop`` and then close what it opened; a second
    Ctrl-C while it does cancels it.
    """
    # Imported here, not at the top: commands that never run a loop start faster.
    import asyncio

    async def runner() -> None:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        task = asyncio.current_task()
        signals = (signal.SIGINT, signal.SIGTERM)

        def on_signal() -> None:
            if stop.is_set() and task is not None:
                task.cancel()  # a second signal: stop waiting for a clean shutdown
            stop.set()

        for sig in signals:
            loop.add_signal_handler(sig, on_signal)
        try:
            await main(stop)
        finally:
            for sig in signals:
                loop.remove_signal_handler(sig)

    try:
        asyncio.run(runner())
    except (KeyboardInterrupt, asyncio.CancelledError):
        raise typer.Exit(130) from None


async def _open_bus(url: str, source: str) -> Bus:
    from waygraph.events import open_bus

    bus = open_bus(url, source=source)
    await bus.start()
    return bus


# --------------------------------------------------------------------- tail


def _event_line(event: Envelope) -> str:
    """One rich-markup line: time, topic, type, the ids that tie events together, data."""
    stamp = event.time.astimezone().strftime("%H:%M:%S.%f")[:-3]
    topic = event.topic.value if event.topic else "-"
    parts = [f"[dim]{stamp}[/]", f"[cyan]{topic:<19}[/]", f"[bold]{plain(event.type)}[/]"]
    for label, value in (
        ("corr", event.correlation_id),
        ("plan", event.plan_id),
        ("session", event.session_id),
        ("reply", event.response_event),
    ):
        if value:
            parts.append(f"[magenta]{label}[/]={plain(value)}")
    data = json.dumps(event.data, ensure_ascii=False, separators=(",", ":"), default=str)
    if len(data) > 160:
        data = data[:157] + "..."
    parts.append(plain(data))
    return " ".join(parts)


@events_app.command("tail")
@friendly_errors
def tail(
    bus_url: BusOption = DEFAULT_BUS_URL,
    topic: Annotated[
        list[str] | None,
        typer.Option("--topic", "-t", help="Only this topic (repeatable). Default: every topic."),
    ] = None,
    event_type: Annotated[
        str,
        typer.Option("--type", help="Only event types matching this glob, e.g. 'web.*'."),
    ] = "*",
    as_json: Annotated[
        bool, typer.Option("--json", help="Print each event as one line of CloudEvents JSON.")
    ] = False,
    count: Annotated[
        int | None, typer.Option("--count", "-n", min=1, help="Stop after this many events.")
    ] = None,
) -> None:
    """Print events on the bus as they happen, until Ctrl-C.

    Only events published after the tail started are shown. With --json each
    line is the CloudEvents JSON of one event plus a "topic" key.
    """
    from waygraph.events import Topic

    topics = _topics(topic or [], Topic)

    async def main(stop: asyncio.Event) -> None:
        bus = await _open_bus(bus_url, "waygraph-tail")
        seen = 0
        try:

            async def show(event: Envelope) -> None:
                nonlocal seen
                if not fnmatch.fnmatchcase(event.type, event_type) or stop.is_set():
                    return
                if as_json:
                    line = {**event.to_wire(), "topic": event.topic.value if event.topic else None}
                    sys.stdout.write(json.dumps(line, ensure_ascii=False, default=str) + "\n")
                    sys.stdout.flush()
                else:
                    console.print(_event_line(event), highlight=False, soft_wrap=True)
                seen += 1
                if count is not None and seen >= count:
                    stop.set()

            for chosen in topics:
                await bus.subscribe(chosen, "*", show)
            names = ", ".join(t.value for t in topics)
            err_console.print(
                f"tailing {plain(names)} on {plain(bus_url)} (Ctrl-C to stop)",
                highlight=False,
                soft_wrap=True,
            )
            await stop.wait()
        finally:
            await bus.close()

    run_until_stopped(main)


def _topics(names: list[str], topic_type: Any) -> list[Any]:
    if not names:
        return list(topic_type)
    chosen = []
    for name in names:
        try:
            chosen.append(topic_type(name))
        except ValueError:
            known = ", ".join(t.value for t in topic_type)
            raise ConfigError(f"unknown topic {name!r}; topics: {known}") from None
    return chosen


# ----------------------------------------------------------- worker, planner


def find_runnables(
    module: ModuleType, attr: str | None, kind: type[T], options: dict[str, Any]
) -> list[T]:
    """The ``kind`` objects (Worker or Planner) ``module`` defines.

    With ``attr``: that attribute, which is an instance, a list or tuple, or
    a factory called with the keyword arguments it accepts among ``options``
    (``bus``, ``store``) that returns one or a list or tuple; the ``kind``
    objects in it are taken (a factory may return a planner and its workers
    together). Without: every module-level instance.
    """
    label = kind.__name__.lower()
    where = getattr(module, "__file__", None) or module.__name__
    if attr is None:
        found = _unique(v for v in vars(module).values() if isinstance(v, kind))
        if not found:
            raise ConfigError(
                f"{where}: defines no {kind.__name__} at module level; define one "
                f"(e.g. {label} = {kind.__name__}(...)) or name a factory as MODULE:ATTR"
            )
        return found
    if not hasattr(module, attr):
        names = sorted(k for k, v in vars(module).items() if isinstance(v, kind))
        hint = f"; candidates: {', '.join(names)}" if names else ""
        raise ConfigError(f"{where}: has no attribute {attr!r}{hint}")
    value = getattr(module, attr)
    if callable(value) and not isinstance(value, kind) and not isinstance(value, type):
        value = _call_factory(value, options, f"{where}:{attr}")
    items = list(value) if isinstance(value, (list, tuple, set)) else [value]
    # A factory may build a planner and its workers together: take the wanted kind.
    found = _unique(v for v in items if isinstance(v, kind))
    if not found:
        got = ", ".join(type(v).__name__ for v in items) or "nothing"
        raise ConfigError(
            f"{where}:{attr} is not a {kind.__name__} (got {got}); "
            f"give a {kind.__name__}, a list of them, or a function returning them"
        )
    return found


def _call_factory(factory: Callable[..., Any], options: dict[str, Any], where: str) -> Any:
    params: Mapping[str, inspect.Parameter]
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        params = {}
    takes_all = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    kwargs = {k: v for k, v in options.items() if takes_all or k in params}
    try:
        result = factory(**kwargs)
        if inspect.isawaitable(result):
            raise ConfigError(f"{where}: the factory must be a plain function, not async")
    except ConfigError:
        raise
    except Exception as exc:
        raise ConfigError(f"{where}(...) failed: {describe_error(exc)}") from None
    return result


def _unique(items: Any) -> list[Any]:
    seen: list[Any] = []
    for item in items:
        if not any(item is s for s in seen):
            seen.append(item)
    return seen


def _check_bus(runnable: Any, bus_url: str, label: str) -> None:
    """Refuse a worker/planner bound to a bus other than the one --bus names."""
    from waygraph.events import InProcessBus

    bus = runnable.bus
    if isinstance(bus, InProcessBus) and not bus_url.startswith("memory://"):
        raise ConfigError(
            f"{label} {runnable.name!r} was built with an in-process bus, so --bus {bus_url} "
            "cannot reach it; build it with bus=None (it then uses --bus via "
            "WAYGRAPH_NATS_URL) or expose a factory taking bus= (MODULE:ATTR)"
        )
    servers = getattr(bus, "servers", None)
    wanted = bus_url.partition("?")[0].split(",")
    if servers is not None and [s.strip() for s in wanted] != servers:
        err_console.print(
            f"[yellow]note:[/] {plain(label)} {plain(repr(runnable.name))} uses its own bus "
            f"{plain(', '.join(servers))}, not --bus {plain(bus_url)}",
            highlight=False,
            soft_wrap=True,
        )


def _serve(kind_name: str, target: str, bus_url: str, store: str | None, wait: float) -> None:
    from waygraph.events import Planner, Worker, open_bus
    from waygraph.events.planner import default_plan_store_url
    from waygraph.events.startup import wait_for_bus, wait_for_store

    def say(line: str) -> None:
        err_console.print(f"{plain(kind_name)}: {plain(line)}", highlight=False, soft_wrap=True)

    kind: type[Any] = Planner if kind_name == "planner" else Worker
    # Set while the module is imported and run: workers and planners built
    # with bus=None (and the planner's default store) read these.
    settings = {"WAYGRAPH_NATS_URL": bus_url}
    if store is not None:
        settings["WAYGRAPH_DATABASE_URL"] = store

    async def main(stop: asyncio.Event) -> None:
        # The store first: a module-level Planner opens it while the module is
        # imported. The bus after the module, so a broken module fails at once.
        if kind is Planner and not await wait_for_store(
            store or default_plan_store_url(), wait, say, stop
        ):
            return
        module, attr = load_user_module(target)
        # A factory may build a planner and its workers together, so workers
        # pass store= too (None: the planner's default).
        options: dict[str, Any] = {"bus": open_bus(bus_url), "store": store}
        runnables = find_runnables(module, attr, kind, options)
        for runnable in runnables:
            _check_bus(runnable, bus_url, kind_name)
        if not await wait_for_bus(bus_url, wait, say, stop):
            return
        started: list[Any] = []
        try:
            for runnable in runnables:
                await runnable.start()
                started.append(runnable)
                what = runnable.task_types if kind is Worker else runnable.goal_types
                err_console.print(
                    f"{plain(kind_name)} {plain(runnable.name)}: "
                    f"{plain('answering' if kind is Worker else 'planning')} "
                    f"{plain(', '.join(what) or '(nothing registered)')} on {plain(bus_url)}",
                    highlight=False,
                    soft_wrap=True,
                )
            err_console.print(
                f"{len(started)} {plain(kind_name)}(s) running; Ctrl-C to stop",
                highlight=False,
                soft_wrap=True,
            )
            await stop.wait()
            err_console.print(
                f"stopping {plain(kind_name)}(s) ...", highlight=False, soft_wrap=True
            )
        finally:
            buses = _unique([r.bus for r in started] + [options["bus"]])
            for runnable in reversed(started):
                await runnable.close()
            for bus in buses:
                await bus.close()

    saved = {name: os.environ.get(name) for name in settings}
    os.environ.update(settings)
    try:
        run_until_stopped(main)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@app.command("worker")
@friendly_errors
def worker_command(
    target: Annotated[
        str,
        typer.Argument(
            metavar="MODULE[:ATTR]",
            help="A module (dotted name or .py path) defining Worker objects, or MODULE:ATTR "
            "naming one, a list, or a function taking bus= that returns them.",
        ),
    ],
    bus_url: BusOption = DEFAULT_BUS_URL,
    verbose: VerboseOption = False,
    wait: WaitOption = DEFAULT_WAIT,
) -> None:
    """Run the workers a Python module defines against a bus until Ctrl-C.

    Each worker answers its task types in a queue group named after it, so
    several processes running the same worker share the work.
    """
    _show_activity(verbose)
    _serve("worker", target, bus_url, None, wait)


@app.command("planner")
@friendly_errors
def planner_command(
    target: Annotated[
        str,
        typer.Argument(
            metavar="MODULE[:ATTR]",
            help="A module (dotted name or .py path) defining Planner objects, or MODULE:ATTR "
            "naming one, a list, or a function taking bus= and store= that returns them.",
        ),
    ],
    bus_url: BusOption = DEFAULT_BUS_URL,
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            help="Plan store URL: sqlite:///PATH, postgresql://... (many planner processes "
            "share one). Default: WAYGRAPH_DATABASE_URL, else the user data folder.",
        ),
    ] = None,
    verbose: VerboseOption = False,
    wait: WaitOption = DEFAULT_WAIT,
) -> None:
    """Run the planners a Python module defines against a bus until Ctrl-C.

    Planner processes sharing one store (PostgreSQL) and bus split the goals
    and events between them; each plan moves on in one process at a time.
    """
    _show_activity(verbose)
    _serve("planner", target, bus_url, store, wait)


# ------------------------------------------------------- -v, send and ask


def _show_activity(verbose: bool) -> None:
    """With -v, print one line per event a worker or planner handled to stderr."""
    if not verbose:
        return
    import logging

    from waygraph.events import activity

    class LineFormatter(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            return activity.format_line(record)

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(LineFormatter())
    activity.LOGGER.addHandler(handler)
    activity.LOGGER.setLevel(logging.INFO)
    activity.LOGGER.propagate = False


VerboseOption = Annotated[
    bool,
    typer.Option(
        "--verbose",
        "-v",
        help="Print one line per handled event to stderr: time, who, event type, "
        "correlation (and goal) id, outcome.",
    ),
]


def _data_option(text: str) -> dict[str, Any]:
    """``--data`` as a JSON object, or a ConfigError naming the flag."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"--data is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno}); "
            """give an object, e.g. --data '{"topic": "graphs"}'"""
        ) from None
    if not isinstance(data, dict):
        raise ConfigError(
            f"--data must be a JSON object (got a JSON {type(data).__name__}); "
            """e.g. --data '{"topic": "graphs"}'"""
        )
    return data


DataOption = Annotated[
    str, typer.Option("--data", "-d", help="The event's data: a JSON object.", show_default=True)
]


def _print_json(value: Any, *, indent: int | None) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=indent, default=str) + "\n")
    sys.stdout.flush()


@events_app.command("send")
@friendly_errors
def send(
    event_type: Annotated[str, typer.Argument(metavar="TYPE", help="The event type.")],
    data: DataOption = "{}",
    bus_url: BusOption = DEFAULT_BUS_URL,
    topic: Annotated[
        str, typer.Option("--topic", "-t", help="The topic to publish on.")
    ] = "business-facts",
    correlation_id: Annotated[
        str | None, typer.Option("--correlation-id", help="The event's correlation id.")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the sent event as CloudEvents JSON.")
    ] = False,
) -> None:
    """Publish one event and exit.

    Prints the event's id and topic (with --json the whole event). Events
    go on business-facts unless --topic says otherwise.
    """
    from waygraph.cli.app import plain
    from waygraph.events import Topic

    payload = _data_option(data)
    [chosen] = _topics([topic], Topic)

    async def main(stop: asyncio.Event) -> None:
        bus = await _open_bus(bus_url, "waygraph-cli")
        try:
            event = bus.envelope(event_type, payload, correlation_id=correlation_id)
            await bus.publish(event, chosen)
        finally:
            await bus.close()
        if as_json:
            _print_json({**event.to_wire(), "topic": chosen.value}, indent=None)
        else:
            console.print(
                f"sent {plain(event.type)} on {plain(chosen.value)} (id {plain(event.id)})",
                highlight=False,
                soft_wrap=True,
            )

    run_until_stopped(main)


@events_app.command("ask")
@friendly_errors
def ask(
    event_type: Annotated[str, typer.Argument(metavar="TYPE", help="The goal or request type.")],
    response_event: Annotated[
        str, typer.Option("--response-event", "-r", help="The event type the answer comes as.")
    ],
    data: DataOption = "{}",
    bus_url: BusOption = DEFAULT_BUS_URL,
    timeout: Annotated[
        float, typer.Option("--timeout", min=0.001, help="Seconds to wait for the answer.")
    ] = 30.0,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the whole answer as one line of CloudEvents JSON.")
    ] = False,
) -> None:
    """Publish a goal (or request) on action-requests and print its answer.

    Waits for --response-event with the goal's correlation id on
    action-results and prints the answer's data as JSON (with --json the
    whole event). Exit 0 when the answer is not a failure, 1 when its data
    has "status": "failed" or an "error", 2 when no answer arrives in time.
    """
    from waygraph.errors import EventTimeoutError

    payload = _data_option(data)
    answer: Envelope | None = None

    async def main(stop: asyncio.Event) -> None:
        nonlocal answer
        bus = await _open_bus(bus_url, "waygraph-cli")
        try:
            answer = await bus.ask(event_type, payload, response_event, timeout=timeout)
        except EventTimeoutError as exc:
            raise ConfigError(
                f"{exc}; is a planner or worker for {event_type!r} running on {bus_url}?"
            ) from None
        finally:
            await bus.close()

    run_until_stopped(main)
    assert answer is not None
    if as_json:
        _print_json({**answer.to_wire(), "topic": "action-results"}, indent=None)
    else:
        _print_json(answer.data, indent=2)
    if answer.data.get("status") == "failed" or "error" in answer.data:
        raise typer.Exit(1)
