"""What the installed Agent-Zero extension files call.

Each installed file passes its extension instance, its own ``__file__`` and
its ``execute`` keyword arguments to one function here:

- :func:`prepare_tool_call` (``tool_execute_before``): remembers the call's
  arguments (shown back to the model in the list of what it tried, and the
  command a ``command_matches`` check reads) and, for ``code_execution_tool``
  terminal commands, appends ``echo "__waygraph_exit__=$?"`` so the
  command's real exit status is printed last (also when the command prints
  the marker itself: only the last marker line counts);
- :func:`verify_tool_result` (``tool_execute_after``): takes that status out
  of ``response.message`` (before the model or anything else reads it) and
  reports the result with its exit code and arguments to the Navigator,
  once. The text of the ``response`` tool (and any tool in ``reply_tools``)
  is the model's own words: reported as a claim (``source="model"``), never
  as evidence; a final answer that asks the user something (its last
  sentence ends with ``?``) is a question the run waits on, not a claim;
- :func:`inject_guidance` (``message_loop_prompts_after``): while a plan
  runs, gives it agent 0's new user message, once: a person's words, which
  alone confirm a ``manual`` check, pick a ``human`` node's choice or answer
  the model's question (a subordinate's "user" is its superior agent, a
  model, and is not heard). Else counts the iteration as a turn of the
  running plan when no tool result did. Then puts the guidance into
  ``loop_data.extras_temporary`` under the configured key, in time for this
  iteration's prompt. With no plan running and no classifier in the tree
  (see :mod:`.neighbours`), matches the user's message to a plan here, so its
  guidance is in this iteration too;
- :func:`select_plan` (``before_main_llm_call``, ``_15_``, where the HTN
  selector ran): after a belief-state tracker and an org dispatcher have
  written this message's domain and allow-list, matches with them (a plan
  the allow-list forbids never starts); its guidance reaches the next
  iteration's prompt, because Agent-Zero builds the prompt before this hook.
  Mirrors the run on ``agent._htn_state`` (with ``awaiting: "user"`` while
  the run waits for a person).

The config is found by walking up from the extension file to
``usr/waygraph/config.json``; the Navigator built from it is cached per
process and rebuilt when the config file changes (:mod:`.setups`).
One model iteration with a tool result costs one load, one commit and one
render: the verify hook's turn leaves its record and guidance on
``loop_data`` (:mod:`.views`) for the guidance and selector hooks after it.
Run state lives in the configured store under the session
``agent-zero:<context id>:<agent number>``, so it survives restarts. Every
failure is logged as a warning in the agent's log (and Python's
``waygraph.agent_zero`` logger) and the agent goes on without guidance;
nothing here raises into Agent-Zero. Plan events are logged as ``[HTN] ...``
lines, as the HTN selector logged them, and an escalation sets
``agent._org_pace_level`` for the org dispatcher's PACE.

Example (with stand-ins for Agent-Zero's objects)::

    runtime.inject_guidance(extension, "/a0/python/extensions/message_loop_prompts_after/x.py",
                            {"loop_data": loop_data})
    loop_data.extras_temporary["waygraph_plan"]   # the guidance text
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import threading
import uuid
from typing import Any

from waygraph.guided.versions import plan_version
from waygraph.integrations.agent_zero import org, reading, views
from waygraph.integrations.agent_zero.loglines import event_line
from waygraph.integrations.agent_zero.reading import EXIT_MARKER
from waygraph.integrations.agent_zero.setups import (
    RETRY_SECONDS,
    HookSetup,
    forget_all,
    setup_of,
)
from waygraph.model import Plan
from waygraph.navigator import Guidance

__all__ = [
    "EXIT_MARKER",
    "RETRY_SECONDS",
    "inject_guidance",
    "prepare_tool_call",
    "reset",
    "select_plan",
    "verify_tool_result",
]

log = logging.getLogger("waygraph.agent_zero")

_ARGS_KEY = "_waygraph_tool_args"
#: In ``agent.data``: (run id, whether a result was reported since the last prompt).
_TURNED_KEY = "_waygraph_turned"
#: Log lines start as the HTN selector's did, so log readers keep working.
PREFIX = "[HTN]"

HTN_STATE_ATTR = "_htn_state"
#: The record ``agent._htn_state`` was last made from (the same object: no new mirror).
_MIRRORED_ATTR = "_waygraph_mirrored"
PACE_LEVEL_ATTR = "_org_pace_level"


#: In ``agent.data``: the token of the user message last given to the
#: Navigator (it activated a plan, or a running plan heard it). The same
#: message is never a person's words twice, nor starts a plan again in its
#: monologue; kept on the agent, so a reloaded runtime does not hear it again.
_HEARD_KEY = "_waygraph_heard"

_lock = threading.Lock()
#: Per session, the same for an agent without a ``data`` dict.
_consumed: dict[str, Any] = {}
#: Per config, the library error last written to an agent's log (reported once).
_library_errors: dict[str, str | None] = {}
#: Not any library error: a root no agent's log has heard about yet.
_UNSEEN = object()


def reset() -> None:
    """Forget cached Navigators and failures (for tests, or after changing files by hand)."""
    forget_all()
    with _lock:
        _consumed.clear()
        _library_errors.clear()


# ---------------------------------------------------------------- the four hooks


def prepare_tool_call(extension: Any, hook_file: str, kwargs: dict[str, Any]) -> None:
    """``tool_execute_before``: remember the arguments; mark terminal commands."""
    _guarded(extension, hook_file, _prepare, kwargs)


def verify_tool_result(extension: Any, hook_file: str, kwargs: dict[str, Any]) -> None:
    """``tool_execute_after``: verify ``kwargs["response"].message`` against the current node."""
    _guarded(extension, hook_file, _verify, kwargs)


def inject_guidance(extension: Any, hook_file: str, kwargs: dict[str, Any]) -> None:
    """``message_loop_prompts_after``: match plans, take a turn, inject the guidance."""
    _guarded(extension, hook_file, _inject, kwargs)


def select_plan(extension: Any, hook_file: str, kwargs: dict[str, Any]) -> None:
    """``before_main_llm_call``: match after the classifiers; mirror ``agent._htn_state``."""
    _guarded(extension, hook_file, _select, kwargs)


#: The line appended to a terminal command: its exit status, printed last.
_STATUS_LINE = f'echo "{EXIT_MARKER}=$?"'


def _prepare(setup: HookSetup, agent: Any, kwargs: dict[str, Any]) -> None:
    tool_args = kwargs.get("tool_args")
    name = kwargs.get("tool_name")
    # Always replaced: a call whose result never came back must not lend its
    # command to the next tool's result (command_matches reads it).
    _remember_args(agent, name, dict(tool_args) if isinstance(tool_args, dict) else None)
    if not isinstance(tool_args, dict):
        return
    code = tool_args.get("code")
    if (
        setup.config.exit_codes
        and name == "code_execution_tool"
        and tool_args.get("runtime") == "terminal"
        and isinstance(code, str)
        and code.strip()
        # Appended even when the command prints the marker itself: the last
        # marker line is the status, and ours runs last.
        and not code.rstrip().endswith(_STATUS_LINE)
    ):
        # The same dict is what the tool runs with: the status prints last.
        tool_args["code"] = f"{code.rstrip()}\n{_STATUS_LINE}"


def _remember_args(agent: Any, tool_name: Any, tool_args: dict[str, Any] | None) -> None:
    data = getattr(agent, "data", None)
    if isinstance(data, dict):
        data[_ARGS_KEY] = (tool_name, tool_args)


def _take_args(agent: Any, tool_name: Any) -> dict[str, Any] | None:
    """The arguments remembered for this call (None when they were another tool's)."""
    data = getattr(agent, "data", None)
    found = data.pop(_ARGS_KEY, None) if isinstance(data, dict) else None
    if not isinstance(found, tuple) or len(found) != 2 or found[0] != tool_name:
        return None
    args = found[1]
    return args if isinstance(args, dict) else None


def _take_exit_code(response: Any, output: str) -> tuple[str, int | None]:
    """The output without the status marker, and the status it printed (None: none)."""
    if EXIT_MARKER not in output:
        return output, None
    kept, code = reading.exit_status(output)
    if isinstance(response, dict):
        response["message"] = kept
    else:
        # Not contextlib.suppress: this runs on every tool result, and try is free.
        try:  # noqa: SIM105
            response.message = kept
        except (AttributeError, TypeError):
            pass  # a response that cannot be changed: the model sees the marker line
    return kept, code


def _new_id_prefix() -> None:
    global _id_prefix
    # 64 random bits per process (and per forked child): ids never repeat
    # across processes or restarts; the counter keeps them apart within one.
    _id_prefix = f"a0-{uuid.uuid4().hex[:16]}-"


_id_prefix = ""
_new_id_prefix()
if hasattr(os, "register_at_fork"):  # POSIX; elsewhere a child process starts afresh
    os.register_at_fork(after_in_child=_new_id_prefix)
_id_counter = itertools.count(1)


def _observation_id() -> str:
    """A fresh observation id: one call of the verify hook is one result, counted once."""
    return f"{_id_prefix}{next(_id_counter):x}"


def _verify(setup: HookSetup, agent: Any, kwargs: dict[str, Any]) -> None:
    response = kwargs.get("response")
    output = reading.tool_output(response)
    if output is None:
        return
    tool_name = kwargs.get("tool_name")
    name = str(tool_name) if tool_name else None
    tool_args = _take_args(agent, tool_name)
    if name in setup.config.reply_tools:
        # The model's own words to the user: a claim, never evidence. The
        # response tool ends the model's work: a final claim.
        turn: dict[str, Any] = {"source": "model", "final": name == "response"}
    else:
        output, exit_code = _take_exit_code(response, output)
        turn = {"exit_code": exit_code, "tool_args": tool_args}
    session = reading.session_id(agent)
    guidance = setup.navigator.turn(
        session,
        tool_output=output,
        tool_name=name,
        # One call of this hook is one result: a fresh id can never be counted twice.
        observation_id=_observation_id(),
        **turn,
    )
    loop_data = getattr(agent, "loop_data", None)
    # The next prompt's hooks read the run from this turn (Agent-Zero keeps
    # the monologue's LoopData on the agent).
    views.keep(setup.navigator, loop_data, session, guidance)
    if guidance.text and guidance.run is not None and guidance.run.get("status") != "running":
        # The next prompt must say the plan ended; the guidance hook only
        # repeats text for running plans. Extras set after this iteration's
        # prompt was built reach the next one.
        _put_extras(loop_data, setup.config.extras_key, guidance.text)
    if guidance.run is not None:
        _note_turn(agent, guidance.run.get("run_id"), True)
    _after_turn(setup, agent, guidance)


def _inject(setup: HookSetup, agent: Any, kwargs: dict[str, Any]) -> None:
    loop_data = kwargs.get("loop_data")
    key = setup.config.extras_key
    session = reading.session_id(agent)
    nav = setup.navigator
    view = views.take(setup.navigator, loop_data, session)
    record = view.record if view is not None else nav.state(session)
    if record is not None and record.get("status") == "running":
        turned = _hear_message(setup, agent, session, loop_data) or _count_iteration(
            setup, agent, session, record, loop_data
        )
        if turned is not None:
            if turned.run is not None and turned.run.get("status") != "running":
                if turned.text:  # the turn ended the run (staleness)
                    _put_extras(loop_data, key, turned.text)
                return
            view = views.take(setup.navigator, loop_data, session)
        if view is None:
            # Read from the store: keep it for the plan selector after this hook.
            text = nav.context(session)
            if text:
                view = views.View(nav, session, record, text)
        if view is not None:
            _put_extras(loop_data, key, view.text)
            views.remember(loop_data, view)
        _mirror(setup, agent, view.record if view is not None else record)
        return
    _, text = _activate(setup, agent, loop_data, record, org.INJECT)
    if text:
        _put_extras(loop_data, key, text)


def _select(setup: HookSetup, agent: Any, kwargs: dict[str, Any]) -> None:
    # After the classifiers: the domain and allow-list are this message's. The
    # prompt is built already, so a plan started here guides from the next iteration.
    loop_data = kwargs.get("loop_data")
    session = reading.session_id(agent)
    view = views.take(setup.navigator, loop_data, session)
    record = view.record if view is not None else setup.navigator.state(session)
    if record is None or record.get("status") != "running":
        record, text = _activate(setup, agent, loop_data, record, org.SELECT)
        if text:
            _put_extras(loop_data, setup.config.extras_key, text)
        # The iteration ends here: its view must not outlive it (the model call
        # and the next tool result come first, and the tool's turn makes a new one).
        views.take(setup.navigator, loop_data, session)
    _mirror(setup, agent, record)


# ---------------------------------------------------------------- shared steps


def _activate(
    setup: HookSetup,
    agent: Any,
    loop_data: Any,
    record: dict[str, Any] | None,
    here: tuple[int, str],
) -> tuple[dict[str, Any] | None, str | None]:
    """Match the user's message (once per message) with the classifiers' values.

    ``record`` is the session's run as just read (not running, or None): what
    is returned when there is no new message to match, or when a classifier
    (the org dispatcher, a belief-state tracker) has not run for it before the
    hook at ``here``: then the plan waits for a later hook, never runs unchecked.
    """
    session = reading.session_id(agent)
    message, token = _fresh_message(agent, session, loop_data)
    if message is None or not org.may_start(setup.root, agent, session, token, here):
        return record, None
    guidance = setup.navigator.turn(
        session,
        user_message=message,
        domain=reading.belief_domain(agent),
        allowed_plans=reading.allowed_plans(agent),
    )
    views.keep(setup.navigator, loop_data, session, guidance)
    _note_activation(agent, session, token, guidance)
    if guidance.run is not None and guidance.active:
        _note_turn(agent, guidance.run.get("run_id"), None)
    _after_turn(setup, agent, guidance)
    return guidance.run, guidance.text if guidance.active else None


def _hear_message(setup: HookSetup, agent: Any, session: str, loop_data: Any) -> Guidance | None:
    """A new user message while a plan runs: a person's words, this iteration's turn.

    The running plan hears it (a ``manual`` check's confirmation, a ``human``
    node's choice, the answer to the model's question) in time for this
    iteration's prompt. Only agent 0 talks to a person: a subordinate's
    "user" is its superior agent, a model, whose words never answer for a
    person. Returns None when there is nothing new to hear.
    """
    if getattr(agent, "number", 0) != 0:
        return None
    message, token = _fresh_message(agent, session, loop_data)
    if message is None:
        return None
    guidance = setup.navigator.turn(session, user_message=message)
    _consume(agent, session, token)
    views.keep(setup.navigator, loop_data, session, guidance)
    if guidance.run is not None:
        # This prompt has had its turn: the next one without a result counts one.
        _note_turn(agent, guidance.run.get("run_id"), False)
    _after_turn(setup, agent, guidance)
    return guidance


def _note_turn(agent: Any, run_id: Any, turned: bool | None) -> None:
    data = getattr(agent, "data", None)
    if isinstance(data, dict):
        data[_TURNED_KEY] = (run_id, turned)


def _count_iteration(
    setup: HookSetup, agent: Any, session: str, record: dict[str, Any], loop_data: Any
) -> Guidance | None:
    """One message-loop iteration is one turn: take an empty one when no result came in.

    Returns that turn's guidance (its view is kept for the hooks after it),
    or None when no turn was needed.
    """
    data = getattr(agent, "data", None)
    if not isinstance(data, dict):
        return None
    run_id = record.get("run_id")
    last = data.get(_TURNED_KEY)
    data[_TURNED_KEY] = (run_id, False)
    if last != (run_id, False):
        return None  # the first prompt of this run, or a result was reported since the last
    guidance = setup.navigator.turn(session)
    views.keep(setup.navigator, loop_data, session, guidance)
    _after_turn(setup, agent, guidance)
    return guidance


def _fresh_message(agent: Any, session: str, loop_data: Any) -> tuple[str | None, Any]:
    """The user's message, unless the Navigator already has it (see :data:`_HEARD_KEY`)."""
    text, token = reading.user_message(loop_data)
    if text is None:
        return None, None
    data = getattr(agent, "data", None)
    if isinstance(data, dict):
        seen = data.get(_HEARD_KEY)
    else:
        with _lock:
            seen = _consumed.get(session)
    if seen is not None and (seen is token or (isinstance(token, str) and seen == token)):
        return None, None
    return text, token


def _note_activation(agent: Any, session: str, token: Any, guidance: Guidance) -> None:
    if any(e.get("type") == "plan_activated" for e in guidance.events):
        _consume(agent, session, token)


def _consume(agent: Any, session: str, token: Any) -> None:
    if token is None:
        return
    data = getattr(agent, "data", None)
    if isinstance(data, dict):
        data[_HEARD_KEY] = token
    else:
        with _lock:
            _consumed[session] = token


def _put_extras(loop_data: Any, key: str, text: str) -> None:
    extras = getattr(loop_data, "extras_temporary", None)
    if extras is not None:
        extras[key] = text


def _after_turn(setup: HookSetup, agent: Any, guidance: Guidance) -> None:
    """Log the turn's plan events, set the PACE level on escalation, mirror the run."""
    record = guidance.run or {}
    # The plan gives the step names document 000's log lines use.
    plan = _plan_for(setup, record) if guidance.events and record else None
    escalated = False
    for event in guidance.events:
        line = event_line(PREFIX, event, record, plan)
        if line is not None:
            _agent_log(agent, *line)
        if event.get("type") == "plan_escalated":
            escalated = True
            _set_attr(agent, PACE_LEVEL_ATTR, event.get("pace_level") or "contingent")
    if guidance.run is not None:
        _mirror(setup, agent, guidance.run)
    if escalated:
        # Document 003: an immediate SALUTE report, reading the escalated mirror.
        org.emit_salute(setup.root, agent, getattr(agent, "loop_data", None))
    _report_library_error(setup, agent)


def _plan_for(setup: HookSetup, record: dict[str, Any]) -> Plan | None:
    """``navigator.plan_for(record)``, remembered per plan version (a content hash)."""
    version = record.get("plan_version")
    known = setup.plans.get(version) if isinstance(version, str) else None
    if known is not None and known.id == record.get("plan_id"):
        return known
    plan = setup.navigator.plan_for(record)
    # Only a plan whose content is that version is the same plan next time.
    if plan is not None and isinstance(version, str) and plan_version(plan) == version:
        setup.plans[version] = plan
    return plan


def _report_library_error(setup: HookSetup, agent: Any) -> None:
    """A library that stopped loading is said once in the agent's log, and its repair too."""
    error = setup.navigator.library_error
    if _library_errors.get(setup.key, _UNSEEN) == error:
        return  # the usual case, without the lock
    with _lock:
        if _library_errors.get(setup.key) == error:
            return
        _library_errors[setup.key] = error
    if error is not None:
        _agent_log(
            agent,
            "warning",
            f"{PREFIX} Plan library does not load; keeping the last good one: {error}",
        )
    else:
        _agent_log(agent, "info", f"{PREFIX} Plan library loads again")


def _mirror(setup: HookSetup, agent: Any, record: dict[str, Any] | None) -> None:
    """``agent._htn_state``: the run record while a plan runs (or its escalated end,
    until the next plan starts), absent otherwise.

    The record carries the fields documents 000 and 003 give the selector's
    state (``current_step``, ``steps_completed``, ``turns_since_progress``,
    ``current_node``, ``visited``, ...), which the supervisor and SALUTE read;
    ``total_nodes``, ``path`` and ``visited`` as document 003 shows them (:mod:`.org`).
    """
    if (
        record is not None
        and getattr(agent, _MIRRORED_ATTR, None) is record
        and hasattr(agent, HTN_STATE_ATTR)
    ):
        return  # an iteration's hooks pass the same record up to three times
    shown = record is not None and record.get("status") in ("running", "escalated")
    plan = _plan_for(setup, record) if shown and record is not None else None
    state = org.htn_state(record, plan)
    if state is not None:
        _set_attr(agent, HTN_STATE_ATTR, state)
        _set_attr(agent, _MIRRORED_ATTR, record)
    elif hasattr(agent, HTN_STATE_ATTR):
        with contextlib.suppress(AttributeError):
            delattr(agent, HTN_STATE_ATTR)


def _set_attr(agent: Any, name: str, value: Any) -> None:
    try:
        setattr(agent, name, value)
    except (AttributeError, TypeError):
        log.debug("cannot set %s on %r", name, agent)


def _agent_log(agent: Any, kind: str, text: str) -> None:
    """A line in the agent's log (the Agent-Zero UI); never raises."""
    try:
        agent.context.log.log(type=kind, content=text)
    except Exception:
        log.debug("agent log unavailable", exc_info=True)
    (log.warning if kind == "warning" else log.info)("%s", text)


# ---------------------------------------------------------------- setup and guarding


def _guarded(extension: Any, hook_file: str, body: Any, kwargs: dict[str, Any]) -> None:
    agent = getattr(extension, "agent", None)
    try:
        setup = setup_of(hook_file)
    except Exception as exc:
        _agent_log(agent, "warning", f"[waygraph] cannot start: {exc}; going on without guidance")
        return
    if setup is None:
        return  # a failure already reported: quiet until it is time to retry
    try:
        body(setup, agent, kwargs)
    except Exception as exc:
        log.debug("waygraph hook failed", exc_info=True)
        _agent_log(
            agent,
            "warning",
            f"{PREFIX} Error (passthrough): {type(exc).__name__}: {exc}",
        )
