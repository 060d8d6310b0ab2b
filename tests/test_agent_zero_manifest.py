"""Issue 13, defect 4: the installer touches only its own files.

The manifest is re-validated on every read; a hostile one (a path that
leaves the tree, a backup that would move an outside file in) or a symlinked
waygraph folder stops install and uninstall with one line, changing nothing.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests.agent_zero_fake import make_tree, snapshot
from waygraph.errors import ConfigError
from waygraph.integrations.agent_zero import install, uninstall
from waygraph.integrations.agent_zero.manifest import MANIFEST_PATH


@pytest.fixture(params=["0.9", "1.x"])
def tree(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    return make_tree(tmp_path / "a0", request.param)


def edit_manifest(root: Path, change) -> None:  # type: ignore[no-untyped-def]
    path = root / MANIFEST_PATH
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def test_a_manifest_entry_outside_the_tree_deletes_nothing(tree: Path, tmp_path: Path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    install(tree)
    edit_manifest(tree, lambda m: m["files"].update({"../victim.txt": {"backup": None}}))
    before = snapshot(tree)
    with pytest.raises(ConfigError, match=r"'\.\./victim\.txt' leaves the Agent-Zero folder"):
        uninstall(tree)
    with pytest.raises(ConfigError, match="nothing was changed"):
        install(tree)
    assert victim.read_text() == "precious"
    assert snapshot(tree) == before


def test_a_manifest_entry_elsewhere_in_the_tree_is_refused(tree: Path):
    install(tree)
    edit_manifest(tree, lambda m: m["files"].update({"agent.py": {"backup": None}}))
    with pytest.raises(ConfigError, match="outside waygraph's folders"):
        uninstall(tree)
    assert (tree / "agent.py").read_text() == "# Agent-Zero\n"


def test_a_backup_entry_cannot_move_an_outside_file_in(tree: Path, tmp_path: Path):
    outside = tmp_path / "secret.txt"
    outside.write_text("secret")
    install(tree)

    def point_backup_outside(m: dict) -> None:
        rel = next(iter(m["files"]))
        m["files"][rel]["backup"] = "../secret.txt"

    edit_manifest(tree, point_backup_outside)
    with pytest.raises(ConfigError, match="leaves the Agent-Zero folder"):
        uninstall(tree)
    assert outside.read_text() == "secret"


@pytest.mark.parametrize("field", ["hook_dirs", "created_dirs"])
def test_folder_lists_are_checked_too(tree: Path, field: str):
    install(tree)
    edit_manifest(tree, lambda m: m[field].append("/etc"))
    with pytest.raises(ConfigError, match="leaves the Agent-Zero folder"):
        uninstall(tree)


def test_a_symlinked_usr_waygraph_is_refused_before_anything_is_written(tree: Path, tmp_path: Path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tree / "usr" / "waygraph").symlink_to(elsewhere, target_is_directory=True)
    before = snapshot(tree)
    with pytest.raises(ConfigError, match="is a symbolic link"):
        install(tree)
    assert list(elsewhere.iterdir()) == []
    assert snapshot(tree) == before


def test_a_symlinked_hook_folder_is_refused_on_uninstall(tree: Path, tmp_path: Path):
    install(tree)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("mine")
    manifest = json.loads((tree / MANIFEST_PATH).read_text())
    hook_dir = tree / manifest["hook_dirs"][0]
    # Swap a hook folder for a link to another folder.
    hook_dir.rename(tree / "moved-hooks")
    hook_dir.symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(ConfigError, match="symbolic link"):
        uninstall(tree)
    assert (elsewhere / "keep.txt").read_text() == "mine"


def test_an_honest_manifest_still_installs_and_uninstalls_byte_for_byte(tree: Path):
    before = snapshot(tree)
    install(tree)
    install(tree)
    uninstall(tree)
    assert snapshot(tree) == before


def test_a_hook_folder_linked_outside_the_tree_stops_install(tree: Path, tmp_path: Path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    hooks = tree / ("python/extensions" if (tree / "python").exists() else "extensions/python")
    (hooks / "tool_execute_after").symlink_to(elsewhere, target_is_directory=True)
    before = snapshot(tree)
    with pytest.raises(ConfigError, match="tool_execute_after is a symbolic link"):
        install(tree)
    assert list(elsewhere.iterdir()) == []
    assert snapshot(tree) == before


def test_uninstall_deletes_only_files_install_wrote(tree: Path):
    install(tree)
    hooks = "python/extensions" if (tree / "python").exists() else "extensions/python"
    upstream = tree / hooks / "message_loop_prompts_after" / "_60_include_current_datetime.py"
    upstream.write_text("# upstream\n")
    rel = upstream.relative_to(tree).as_posix()
    digest = hashlib.sha256(upstream.read_bytes()).hexdigest()
    edit_manifest(tree, lambda m: m["files"].update({rel: {"backup": None, "sha256": digest}}))
    before = snapshot(tree)
    with pytest.raises(ConfigError, match="is not a file waygraph installs"):
        uninstall(tree)
    assert snapshot(tree) == before


def test_uninstall_refuses_a_hook_file_someone_changed(tree: Path):
    install(tree)
    hooks = "python/extensions" if (tree / "python").exists() else "extensions/python"
    verify = tree / hooks / "tool_execute_after" / "_50_waygraph_verify.py"
    verify.write_text("# someone else's now\n")
    before = snapshot(tree)
    with pytest.raises(ConfigError, match="not the file waygraph installed"):
        uninstall(tree)
    assert snapshot(tree) == before


@pytest.mark.parametrize(
    "folder",
    [
        "plugins/htn/extensions/python",
        "usr/plugins/htn/extensions/python",
        "plugins/htn/agents/dev/extensions/python",
        "usr/projects/p/.a0proj/extensions/python",
    ],
)
def test_a_selector_in_a_plugin_folder_is_found_and_disabled(tmp_path: Path, folder: str):
    tree = make_tree(tmp_path / "a0", "1.x")
    selector = tree / folder / "before_main_llm_call" / "_15_htn_plan_selector.py"
    selector.parent.mkdir(parents=True)
    selector.write_text("extras['htn_active_plan'] = text\n")
    before = snapshot(tree)
    report = install(tree)
    assert report.disabled == [selector.relative_to(tree).as_posix()]
    assert not selector.exists()
    uninstall(tree)
    assert snapshot(tree) == before
