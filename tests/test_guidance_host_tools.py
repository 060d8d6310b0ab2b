"""The guidance names the host's tools (``tools=``), and a plan's hint reads as an example."""

from __future__ import annotations

import dataclasses
import re

import pytest

import waygraph
from waygraph import engine, render
from waygraph.async_navigator import AsyncNavigator
from waygraph.errors import ConfigError
from waygraph.hooks import Hooks, open_navigator
from waygraph.model import Plan
from waygraph.render.style import TOOL_NEEDS, GuidanceStyle, HostTools

LIBRARY = waygraph.load_library()
HOST = ["run_command", "write_file"]
BUG = "I need to fix a bug in the login module"


def shipped_plans() -> list[Plan]:
    plans = list(LIBRARY)
    assert len(plans) >= 10
    return plans


def at_node(plan: Plan, node_id: str) -> engine.Run:
    """A run of ``plan`` standing at ``node_id``, as the model sees it on arrival."""
    run, _ = engine.start(plan, run_id="r", turn=1)
    return dataclasses.replace(run, current_node=node_id)


def work_nodes(plan: Plan) -> list[str]:
    return [n.id for n in plan.graph.nodes.values() if n.type in ("task", "decision", "human")]


def test_a_mapping_names_the_hosts_tool_and_never_the_plans():
    nav = waygraph.Navigator(store="memory://", tools={"code_execution_tool": "run_command"})
    text = nav.turn("s", user_message=BUG, domain="bugfix").text or ""
    assert "    Tool: run_command" in text.splitlines()
    assert "code_execution_tool" not in text
    # The next node's guidance too, after a real turn.
    text = nav.turn("s", tool_output="AssertionError: login failed", exit_code=1).text or ""
    assert "Tool: run_command" in text and "code_execution_tool" not in text


def test_without_tools_the_plans_own_names_are_shown():
    text = waygraph.Navigator(store="memory://").start("s", "bugfix_workflow").text or ""
    assert "    Tool: code_execution_tool" in text.splitlines()


@pytest.mark.parametrize("style", ["full", "compact"])
def test_with_a_list_no_tool_the_host_lacks_is_named_at_any_node_of_any_shipped_plan(style: str):
    guide = GuidanceStyle.of(style, tools=HOST)
    checked = 0
    for plan in shipped_plans():
        lacking = {n.tool for n in plan.graph.nodes.values() if n.tool} - set(HOST)
        for node_id in work_nodes(plan):
            text = render.context(plan, at_node(plan, node_id), style=guide)
            for name in lacking:
                assert f"Tool: {name}" not in text, (plan.id, node_id, name)
                if "_" in name:  # an identifier, never an ordinary word of the plan's prose
                    assert name not in text, (plan.id, node_id, name)
            checked += 1
    assert checked > 50


def test_a_plan_tool_the_host_lacks_is_described_by_what_the_step_needs():
    plan = LIBRARY["bugfix_workflow"]
    text = render.context(plan, at_node(plan, "fix"), style=GuidanceStyle.of(tools=HOST))
    assert "    Tool: one that runs a shell command" in text.splitlines()
    # Agent-Zero's "response" tool: the step is the model's own reply.
    report = LIBRARY["log_investigation"]
    text = render.context(report, at_node(report, "report"), style=GuidanceStyle.of(tools=HOST))
    assert "    Tool: none: write it in your reply to the user" in text.splitlines()


def test_a_tool_neither_the_host_nor_the_table_knows_leaves_the_line_out():
    plan = Plan.model_validate(
        {
            "id": "p",
            "steps": [
                {"name": "Probe", "action": "Probe the device", "tool": "zx_probe_tool"},
            ],
        }
    )
    run, _ = engine.start(plan, run_id="r", turn=1)
    text = render.context(plan, run, style=GuidanceStyle.of(tools=HOST))
    assert "zx_probe_tool" not in text and "Tool:" not in text
    assert "Action: Probe the device" in text
    assert "zx_probe_tool" not in TOOL_NEEDS


def test_a_mapping_value_is_a_host_tool_so_a_plan_tool_of_that_name_is_shown():
    tools = HostTools.of({"code_execution_tool": "shell", "write_file": "write_file"})
    assert tools is not None
    assert tools.name_for("code_execution_tool") == "shell"
    assert tools.name_for("write_file") == "write_file"
    assert tools.name_for("shell") == "shell"
    assert tools.name_for("response") is None


def test_the_hint_is_shown_as_an_example_with_its_placeholders_and_file_paths_marked():
    plan = LIBRARY["bugfix_workflow"]
    lines = render.context(plan, at_node(plan, "isolate")).splitlines()
    hint = next(line for line in lines if "Hint" in line)
    assert hint.startswith("    Hint (example, adapt it): grep -n 'def <function>'")
    assert hint.endswith("— replace <function>, <file>, <module>, … with yours")
    lines = render.context(plan, at_node(plan, "reproduce")).splitlines()
    hint = next(line for line in lines if "Hint" in line)
    assert "e.g. python -m pytest -q tests/test_login.py -x" in hint
    assert hint.endswith("— tests/test_login.py is only an example name")


def test_a_hint_without_placeholders_or_file_paths_gets_only_the_example_label():
    plan = LIBRARY["bugfix_workflow"]
    lines = render.context(plan, at_node(plan, "fix")).splitlines()
    assert "    Hint (example, adapt it): Edit the file, then run git diff --stat" in lines


@pytest.mark.parametrize(
    ("hint", "marked"),
    [
        ("cat {file}", "replace {file} with yours"),
        ("cat PATH/TO/FILE.py", "replace PATH/TO/FILE.py with yours"),
        ("python -c 'import <package.module>'", "replace <package.module> with yours"),
    ],
)
def test_every_kind_of_placeholder_is_marked(hint: str, marked: str):
    plan = Plan.model_validate({"id": "p", "steps": [{"name": "S", "tool_hint": hint}]})
    run, _ = engine.start(plan, run_id="r", turn=1)
    assert f"Hint (example, adapt it): {hint} — {marked}" in render.context(plan, run)


@pytest.mark.parametrize(
    "hint",
    [
        "curl -w 'HTTP %{http_code}' <url>",  # curl's own format
        "echo ${HOME} <name>",  # a shell variable
        "git grep -e '^<<<<<<< ' <path>",  # conflict markers
        "docker ps --format '{{.Names}}' <name>",  # Go templates
    ],
)
def test_what_only_looks_like_a_placeholder_is_not_marked(hint: str):
    plan = Plan.model_validate({"id": "p", "steps": [{"name": "S", "tool_hint": hint}]})
    run, _ = engine.start(plan, run_id="r", turn=1)
    line = next(x for x in render.context(plan, run).splitlines() if "Hint" in x)
    replaced = re.search(r"— replace (.*) with yours$", line)
    assert replaced is not None
    assert replaced.group(1) in ("<url>", "<name>", "<path>")


def test_hooks_pass_tools_and_guidance_to_the_navigator_they_build():
    hooks = Hooks("s", store="memory://", tools=HOST, guidance="compact")
    assert hooks.navigator is not None
    assert hooks.navigator.style == GuidanceStyle.of("compact", tools=HOST)
    hooks.on_user_message(BUG)
    text = hooks.context_for_model() or ""
    assert "code_execution_tool" not in text and text.startswith("[waygraph] Bug Fix Workflow")


def test_open_navigator_and_the_async_navigator_pass_them_through():
    nav = open_navigator(None, "memory://", None, strict=True, tools={"a": "b"}, guidance="full")
    assert nav is not None and nav.style == GuidanceStyle.of("full", tools={"a": "b"})
    async_nav = AsyncNavigator(store="memory://", tools=HOST, guidance="compact")
    assert async_nav.sync.style.compact
    assert async_nav.sync.style.tools == HostTools.of(HOST)


def test_hooks_sharing_a_navigator_refuse_their_own_tools():
    nav = waygraph.Navigator(store="memory://")
    with pytest.raises(ConfigError, match="tools= and guidance= belong to the shared navigator"):
        Hooks("s", navigator=nav, tools=HOST)


@pytest.mark.parametrize(
    ("tools", "words"),
    [
        ("run_command", "tools must be a mapping"),
        (42, "tools must be a mapping"),
        (["run_command", ""], "every tool name must be a non-empty string"),
        ({"code_execution_tool": 3}, "every host tool name must be a non-empty string"),
    ],
)
def test_malformed_tools_are_rejected_naming_the_argument(tools: object, words: str):
    with pytest.raises(ValueError, match=words):
        waygraph.Navigator(store="memory://", tools=tools)  # type: ignore[arg-type]


def test_a_bad_tools_value_raises_from_hooks_even_when_not_strict():
    # A mistake in the call is not a library that failed to load: no silent "no guidance".
    with pytest.raises(ConfigError, match="tools"):
        Hooks("s", store="memory://", tools=7)  # type: ignore[arg-type]
