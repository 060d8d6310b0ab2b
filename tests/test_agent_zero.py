"""The Agent-Zero integration: install/uninstall on real folder trees, and the installed
extension files loaded and run the way Agent-Zero runs them, for both layouts.

The stand-ins (tests/agent_zero_fake.py) are small: an ``Extension`` base
class registered under each layout's module name, a loader that does what
Agent-Zero's ``load_classes_from_folder`` does, and plain objects for the
agent, its context and log, ``LoopData`` and a tool ``Response``.
:class:`FakeAgentZero` calls the hooks in the order of Agent-Zero's message
loop. Other test modules import them from here too.
"""

from __future__ import annotations

import errno
import json
import os
import types
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import waygraph.cli.integration_cmds  # noqa: F401  (registers install, uninstall, mcp)
from tests.agent_zero_fake import (  # noqa: F401 (agent_zero_modules: an autouse fixture)
    BASE_MODULES,
    HTN_KEY,
    KEY,
    LIBRARY,
    Agent,
    Context,
    FakeAgentZero,
    Log,
    LoopData,
    Response,
    agent_zero_modules,
    make_tree,
    session_state,
    snapshot,
)
from waygraph.cli.app import app
from waygraph.errors import ConfigError, PlanFormatError, StoreError
from waygraph.integrations.agent_zero import (
    LAYOUTS,
    AgentZeroConfig,
    detect_layout,
    install,
    installer,
    runtime,
    uninstall,
)
from waygraph.integrations.agent_zero.templates import HOOKS, hook_path, render
from waygraph.navigator import Navigator


@pytest.fixture(params=["0.9", "1.x"])
def layout(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def tree(tmp_path: Path, layout: str) -> Path:
    return make_tree(tmp_path / "a0", layout)


# ---------------------------------------------------------------- layout and files


def test_layout_is_detected_from_the_hook_folders_alone(tmp_path: Path):
    (tmp_path / "old" / "python" / "extensions").mkdir(parents=True)
    (tmp_path / "new" / "extensions" / "python").mkdir(parents=True)
    assert detect_layout(tmp_path / "old").name == "0.9"
    assert detect_layout(tmp_path / "new").name == "1.x"
    with pytest.raises(ConfigError, match="neither python/extensions/"):
        detect_layout(tmp_path)
    (tmp_path / "old" / "extensions" / "python").mkdir(parents=True)
    with pytest.raises(ConfigError, match=r"--layout 0\.9 or --layout 1\.x"):
        detect_layout(tmp_path / "old")


def test_each_installed_file_has_one_extension_class_and_imports_only_its_base(layout: str):
    for hook in HOOKS:
        text = render(hook, LAYOUTS[layout])
        compile(text, hook.filename, "exec")
        imports = [line.strip() for line in text.splitlines() if "import " in line]
        assert imports == [
            f"from {BASE_MODULES[layout]} import Extension",
            "from waygraph.integrations.agent_zero import runtime",
        ]
        assert text.count("(Extension):") == 1
    # The plan selector sits where the HTN selector did, after the classifiers.
    assert hook_path(HOOKS[-1], LAYOUTS[layout]).endswith(
        "before_main_llm_call/_15_waygraph_plan_selector.py"
    )


# ---------------------------------------------------------------- install / uninstall


def test_install_then_uninstall_leaves_the_tree_byte_for_byte(tree: Path, layout: str):
    before = snapshot(tree)
    report = install(tree, library=tree / "plans", compat=True)
    assert report.layout == layout and report.changed
    hooks = tree / LAYOUTS[layout].hooks_root
    assert (hooks / "tool_execute_after" / "_50_waygraph_verify.py").is_file()
    assert (hooks / "message_loop_prompts_after" / "_80_waygraph_guidance.py").is_file()
    assert (hooks / "before_main_llm_call" / "_15_waygraph_plan_selector.py").is_file()
    assert (tree / "usr" / "waygraph" / "library" / "library.yaml").read_text() == LIBRARY
    # The hook folders' caches are cleared (kept in the backup for uninstall).
    assert not (hooks / "message_loop_prompts_after" / "__pycache__").exists()
    config = AgentZeroConfig.read(tree / "usr" / "waygraph" / "config.json")
    assert config == AgentZeroConfig(
        layout=layout, library="usr/waygraph/library", compat=True, extras_key=HTN_KEY
    )
    assert not [p for p in tree.rglob("*") if ".waygraph-" in p.name]  # nothing staged is left

    result = uninstall(tree)
    assert result.installed and not result.kept
    assert snapshot(tree) == before


def test_install_is_idempotent(tree: Path):
    install(tree, library=tree / "plans")
    after_first = snapshot(tree)
    again = install(tree, library=tree / "plans")
    assert not again.changed
    assert "nothing changed" in again.summary()
    assert snapshot(tree) == after_first


def test_a_replaced_file_is_backed_up_and_restored(tree: Path, layout: str):
    seed = (
        tree / LAYOUTS[layout].hooks_root / "before_main_llm_call" / "_15_waygraph_plan_selector.py"
    )
    seed.write_text("# somebody's file under waygraph's name\n")
    before = snapshot(tree)

    report = install(tree)
    assert report.replaced == [hook_path(HOOKS[-1], LAYOUTS[report.layout])]
    assert "WaygraphPlanSelector" in seed.read_text()
    result = uninstall(tree)
    assert result.restored == report.replaced
    assert snapshot(tree) == before
    assert "nothing to do" in uninstall(tree).summary()


def test_explicit_layout_creates_and_removes_the_hook_folders(tmp_path: Path):
    root = tmp_path / "bare"
    root.mkdir()
    (root / "agent.py").write_text("# Agent-Zero\n")
    before = snapshot(root)
    assert install(root, layout="1.x").layout == "1.x"
    assert (root / "extensions/python/tool_execute_after/_50_waygraph_verify.py").is_file()
    uninstall(root)
    assert snapshot(root) == before


def test_linked_library_and_custom_store_go_into_the_config(tree: Path, tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    install(tree, library=tree / "plans" / "library.yaml", link_library=True, store=url)
    config = AgentZeroConfig.read(tree / "usr" / "waygraph" / "config.json")
    assert config.library == (tree / "plans" / "library.yaml").as_posix()
    assert config.store == url
    assert not (tree / "usr" / "waygraph" / "library").exists()


def test_uninstall_keeps_the_run_history_and_says_so(tree: Path, layout: str):
    before = snapshot(tree)
    install(tree, library=tree / "plans")
    a0 = FakeAgentZero(tree, layout)
    a0.user("Please fix the login bug")
    a0.prompt()
    a0.tool("AssertionError: login failed")
    runtime.reset()  # close the store, as a stopped Agent-Zero would

    result = uninstall(tree)
    assert "usr/waygraph/waygraph.db" in result.kept
    assert "run history" in result.summary()
    for name in result.kept:
        (tree / name).unlink()
    (tree / "usr" / "waygraph").rmdir()
    # Agent-Zero's own caches written while it ran are gone, the old ones are back.
    assert snapshot(tree) == before


def test_backups_cross_file_systems(tree: Path, layout: str, monkeypatch: pytest.MonkeyPatch):
    """usr/ is often a separate volume (Docker): renames between folders may fail with EXDEV."""
    seed = tree / LAYOUTS[layout].hooks_root / "before_main_llm_call" / "_15_htn_plan_selector.py"
    seed.write_text("# the seed's selector\n")
    before = snapshot(tree)
    real_rename = os.rename

    def rename(src: Any, dst: Any) -> None:
        if Path(src).parent != Path(dst).parent:
            raise OSError(errno.EXDEV, "Invalid cross-device link", str(src))
        real_rename(src, dst)

    monkeypatch.setattr(os, "rename", rename)
    install(tree, library=tree / "plans", compat=True)
    assert (tree / "usr/waygraph/backup" / seed.relative_to(tree)).read_text() == (
        "# the seed's selector\n"
    )
    uninstall(tree)
    assert snapshot(tree) == before


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"library": "missing/plans"}, "no such file or directory"),
        ({"store": "ftp://nowhere"}, "unknown scheme 'ftp'"),
        ({"layout": "2.0"}, "unknown layout '2.0'"),
        ({"link_library": True}, "--link needs --library"),
    ],
)
def test_bad_input_is_one_clear_error_and_changes_nothing(
    tree: Path, options: dict[str, Any], message: str
):
    before = snapshot(tree)
    with pytest.raises((ConfigError, PlanFormatError), match=message):
        install(tree, **options)
    assert snapshot(tree) == before


def test_a_broken_library_stops_the_install(tree: Path):
    broken = tree / "plans" / "broken.json"
    broken.write_text(
        '{"plans": {"p": {"graph": {"start": "s", "nodes": {"s": {"type": "strt"}}}}}}'
    )
    before = snapshot(tree)
    with pytest.raises(PlanFormatError, match=r"broken\.json"):
        install(tree, library=tree / "plans")
    assert snapshot(tree) == before


def test_install_is_all_or_nothing(tree: Path, monkeypatch: pytest.MonkeyPatch):
    before = snapshot(tree)
    real_write = installer.Transaction.write
    calls = []

    def failing_write(self: Any, rel: str, content: bytes) -> None:
        calls.append(rel)
        if len(calls) == 3:
            raise OSError(28, "No space left on device", str(self.root / rel))
        real_write(self, rel, content)

    monkeypatch.setattr(installer.Transaction, "write", failing_write)
    with pytest.raises(ConfigError, match="No space left on device; nothing was changed"):
        install(tree, library=tree / "plans", compat=True)
    assert snapshot(tree) == before


def test_uninstall_is_all_or_nothing(tree: Path, monkeypatch: pytest.MonkeyPatch):
    before = snapshot(tree)
    install(tree, compat=True)
    installed = snapshot(tree)
    real_move = installer.Transaction.move

    def failing_move(self: Any, src: str, dst: str) -> None:
        raise OSError(13, "Permission denied", str(self.root / src))

    monkeypatch.setattr(installer.Transaction, "move", failing_move)
    with pytest.raises(ConfigError, match="Permission denied; nothing was changed"):
        uninstall(tree)
    assert snapshot(tree) == installed
    monkeypatch.setattr(installer.Transaction, "move", real_move)
    uninstall(tree)
    assert snapshot(tree) == before


def test_a_broken_manifest_is_reported_not_trusted(tree: Path):
    install(tree)
    (tree / "usr" / "waygraph" / "manifest.json").write_text("{oops")
    with pytest.raises(ConfigError, match=r"manifest\.json: not a readable waygraph manifest"):
        uninstall(tree)
    with pytest.raises(ConfigError, match=r"manifest\.json"):
        install(tree)


# ---------------------------------------------------------------- the command


def test_cli_install_and_uninstall(tree: Path):
    before = snapshot(tree)
    runner = CliRunner()
    result = runner.invoke(
        app, ["install", "agent-zero", str(tree), "--library", str(tree / "plans")]
    )
    assert result.exit_code == 0, result.output
    assert "installed waygraph into" in result.stdout and "config in usr/waygraph/config.json" in (
        result.stdout
    )
    again = runner.invoke(
        app, ["install", "agent-zero", str(tree), "--library", str(tree / "plans")]
    )
    assert "nothing changed" in again.stdout
    removed = runner.invoke(app, ["uninstall", "agent-zero", str(tree)])
    assert removed.exit_code == 0 and "removed waygraph from" in removed.stdout
    assert snapshot(tree) == before


def test_cli_errors_are_one_line(tmp_path: Path):
    runner = CliRunner()
    result = runner.invoke(app, ["install", "agent-zero", str(tmp_path / "nowhere")])
    assert result.exit_code == 2
    assert result.stderr.strip().startswith("error:") and "no such folder" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.output
    result = runner.invoke(app, ["install", "agent-zero", str(tmp_path)])
    assert result.exit_code == 2 and "does not look like Agent-Zero" in result.stderr


# ---------------------------------------------------------------- running the hooks


def test_a_whole_bugfix_run_through_the_installed_hooks(tree: Path, layout: str):
    install(tree, library=tree / "plans")
    a0 = FakeAgentZero(tree, layout)
    a0.user("Please fix the login bug")

    seen = a0.prompt()
    assert seen["memories"] == "none"  # Agent-Zero's own extension still runs
    assert "reproduce << CURRENT" in seen[KEY]
    a0.tool("AssertionError: login failed")  # reproduce: any output
    assert "fix << CURRENT" in a0.prompt()[KEY]
    a0.tool("patched login.py")  # fix: no check
    assert "test << CURRENT" in a0.prompt()[KEY]
    a0.tool("1 failed, 3 passed")  # test fails: back to fix, attempt 2
    seen = a0.prompt()
    assert "fix << CURRENT" in seen[KEY] and "attempt 2" in seen[KEY]
    a0.tool("patched login.py again")
    a0.prompt()
    a0.tool("4 passed")  # test passes: done

    seen = a0.prompt()
    assert seen[KEY].startswith("Plan completed: 'Bug fix'")
    # The same user message does not start the plan a second time.
    assert KEY not in a0.prompt()
    record = session_state(tree)
    assert record is not None and record["status"] == "completed"
    assert record["path"][-1] == "done"
    log = a0.log.text("info")
    assert "[HTN] Plan activated: Bug fix (3 nodes, graph)" in log
    assert "[HTN] Step failed verification: test" in log
    assert "[HTN] Plan 'Bug fix' completed!" in log
    assert not a0.log.text("warning")


def test_each_tool_result_counts_once(tree: Path, layout: str):
    install(tree, library=tree / "plans")
    a0 = FakeAgentZero(tree, layout)
    a0.user("Please fix the login bug")
    a0.prompt()
    a0.tool("AssertionError: login failed")
    # Several prompts without a new result (the model thinking) verify nothing.
    a0.prompt()
    a0.prompt()
    record = session_state(tree)
    assert record["current_node"] == "fix"
    assert [e["type"] for e in record["events"]].count("node_verified") == 1
    # Every iteration is one turn: the one with a result counts once, and the
    # second prompt without one counts as a turn of its own.
    assert record["turns_since_transition"] == 1


def test_run_state_survives_a_restart(tree: Path, layout: str):
    install(tree, library=tree / "plans")
    a0 = FakeAgentZero(tree, layout)
    a0.user("Please fix the login bug")
    a0.prompt()
    a0.tool("AssertionError: login failed")
    runtime.reset()  # a new process: no cached Navigator, no memory of the chat

    restarted = FakeAgentZero(tree, layout)
    restarted.history = list(a0.history)
    restarted.user("go on")
    assert "fix << CURRENT" in restarted.prompt()[KEY]
    # Another agent number in the same chat has a session of its own.
    subordinate = FakeAgentZero(tree, layout, number=1)
    subordinate.user("what's the weather like")
    assert KEY not in subordinate.prompt()


def test_domain_and_allow_list_are_read_as_plain_data(tree: Path, layout: str):
    install(tree, library=tree / "plans")
    a0 = FakeAgentZero(tree, layout)
    a0.agent._bst_store = {"__bst_belief_state__": {"domain": "ops"}}  # type: ignore[attr-defined]
    a0.user("fix bug in production")
    assert "Hotfix" in a0.prompt()[KEY]
    assert "[HTN] Plan activated: Hotfix (2 steps)" in a0.log.text()

    other = FakeAgentZero(tree, layout, context_id="chat2")
    other.agent.data["_org_htn_allowed_plans"] = ["nothing_allowed"]
    other.user("Please fix the login bug")
    assert KEY not in other.prompt()
    assert session_state(tree, "chat2") is None


def test_the_user_message_may_come_from_the_history(tree: Path, layout: str):
    install(tree, library=tree / "plans")
    a0 = FakeAgentZero(tree, layout)
    # After compression, entries are JSON strings; tool results are not user messages.
    a0.history = [
        {"ai": False, "content": json.dumps({"user_message": "Please fix the login bug"})},
        {"ai": True, "content": "..."},
        {"ai": False, "content": json.dumps({"tool_name": "x", "tool_result": "fix bug hotfix"})},
    ]
    a0.agent.loop_data = LoopData(user_message=None)
    assert "Plan: Bug fix" in a0.prompt()[KEY]


def test_compat_mode_keeps_the_htn_selector_side_effects(tree: Path, layout: str):
    install(tree, library=tree / "plans", compat=True)
    a0 = FakeAgentZero(tree, layout)
    agent = a0.agent
    a0.user("Please fix the login bug")

    seen = a0.prompt()
    assert list(k for k in seen if k != "memories") == [HTN_KEY]  # one key, no duplicate text
    assert "reproduce << CURRENT" in seen[HTN_KEY]
    assert agent._htn_state["current_node"] == "reproduce"
    assert agent._htn_state["total_steps"] == 3

    for output in ("AssertionError", "patch", "1 failed", "patch", "2 failed"):
        a0.tool(output)
        seen = a0.prompt()
    # fix is exhausted after the second failed test: the plan escalates.
    assert seen[HTN_KEY].startswith("Plan escalated: fix attempts exhausted")
    assert agent._org_pace_level == "contingent"
    assert agent._htn_state["status"] == "escalated"  # readable until the next plan starts
    log = a0.log.text()
    assert "[HTN] Plan activated: Bug fix (3 nodes, graph)" in log
    assert "[HTN] Plan 'Bug fix' escalated to PACE contingent: fix attempts exhausted" in (
        a0.log.text("warning")
    )


def test_plans_start_after_the_belief_state_tracker(tmp_path: Path, layout: str):
    tree = make_tree(tmp_path / "a0", layout, bst=True)
    install(tree, library=tree / "plans", compat=True)
    a0 = FakeAgentZero(tree, layout)
    # A stale domain from the previous message would hide the bugfix plan; the
    # tracker (_11_) classifies this message and the selector (_15_) matches
    # with the fresh domain; the prompt is built by then, so the guidance
    # reaches the next iteration.
    a0.agent._bst_store = {"__bst_belief_state__": {"domain": "git"}}  # type: ignore[attr-defined]
    a0.agent.data["next_domain"] = "bugfix"
    a0.user("Please fix the login bug")
    seen = a0.prompt()
    assert HTN_KEY not in seen
    assert a0.agent._htn_state["plan_id"] == "bugfix"
    assert "Plan: Bug fix" in a0.agent.loop_data.extras_temporary[HTN_KEY]
    assert "reproduce << CURRENT" in a0.prompt()[HTN_KEY]


def test_a_broken_config_is_one_warning_and_the_agent_goes_on(tree: Path, layout: str):
    install(tree, library=tree / "plans")
    (tree / "usr" / "waygraph" / "config.json").write_text("{not json")
    a0 = FakeAgentZero(tree, layout)
    a0.user("Please fix the login bug")
    assert KEY not in a0.prompt()
    a0.tool("output")
    a0.prompt()
    warnings = [c for t, c in a0.log.lines if t == "warning"]
    assert len(warnings) == 1
    assert (
        "[waygraph] cannot start:" in warnings[0] and "config.json: not valid JSON" in warnings[0]
    )
    assert "going on without guidance" in warnings[0]

    # Fixing the file is picked up without a restart.
    config = AgentZeroConfig(layout=layout, library="usr/waygraph/library")
    (tree / "usr" / "waygraph" / "config.json").write_text(config.to_json())
    assert "Plan: Bug fix" in a0.prompt()[KEY]


def test_a_missing_library_or_store_is_a_warning(tree: Path, layout: str):
    install(tree, library=tree / "plans")
    config = AgentZeroConfig(layout=layout, library="usr/waygraph/gone")
    (tree / "usr" / "waygraph" / "config.json").write_text(config.to_json())
    a0 = FakeAgentZero(tree, layout)
    a0.user("Please fix the login bug")
    a0.prompt()
    assert "usr/waygraph/gone: no such file or directory" in a0.log.text("warning")

    runtime.reset()
    config = AgentZeroConfig(layout=layout, store="ftp://nowhere")
    (tree / "usr" / "waygraph" / "config.json").write_text(config.to_json())
    a0.prompt()
    assert "unknown scheme 'ftp'" in a0.log.text("warning")


def test_failures_inside_a_hook_never_reach_the_agent(
    tree: Path, layout: str, monkeypatch: pytest.MonkeyPatch
):
    install(tree, library=tree / "plans")
    a0 = FakeAgentZero(tree, layout)
    a0.user("Please fix the login bug")
    a0.prompt()

    def broken_turn(self: Navigator, *args: Any, **kwargs: Any) -> Any:
        raise StoreError("database is locked")

    monkeypatch.setattr(Navigator, "turn", broken_turn)
    a0.tool("AssertionError")
    assert "[HTN] Error (passthrough): StoreError: database is locked" in a0.log.text("warning")

    def crash(*args: Any) -> None:
        raise RuntimeError("boom")

    # Even a failure of the runtime itself is caught by the installed file.
    monkeypatch.setattr(runtime, "inject_guidance", crash)
    a0.prompt()
    assert "[waygraph] RuntimeError: boom" in a0.log.text("warning")


def test_a_hook_without_config_warns_once(tmp_path: Path):
    hook_file = tmp_path / "python/extensions/tool_execute_after/_50_waygraph_verify.py"
    log = Log()
    extension = types.SimpleNamespace(agent=Agent(Context("c", log)))
    runtime.verify_tool_result(extension, str(hook_file), {"response": Response("x")})
    runtime.verify_tool_result(extension, str(hook_file), {"response": Response("x")})
    assert len(log.lines) == 1
    assert "no usr/waygraph/config.json in any folder above" in log.lines[0][1]
