"""The extensions waygraph lives beside in an Agent-Zero tree.

Two kinds matter:

- an **established plan selector** (document 000's
  ``_15_htn_plan_selector.py``, or any extension that writes the
  ``htn_active_plan`` extras key): waygraph replaces it, so install disables
  it (into the install backup) and carries its ``htn_plan_library.json`` over;
- **classifiers** that run in ``before_main_llm_call`` before waygraph's plan
  selector and decide which plans may start: a belief-state tracker writing
  ``agent._bst_store`` (the message's domain) and an org dispatcher writing
  ``_org_htn_allowed_plans`` (the allow-list). Agent-Zero builds the prompt
  before that hook runs, so while such an extension exists, plans are only
  activated after it, and their first guidance reaches the next iteration.

Agent-Zero reads extensions from several folders, and runs the files of one
hook point from all of them in file-name order (a name found in two folders
runs once): the layout's own (``python/extensions/`` in 0.9,
``extensions/python/`` in 1.x), the user's (``usr/extensions/``), agent
profiles' (``agents/<name>/extensions/``, ``usr/agents/<name>/extensions/``),
projects' (``usr/projects/<name>/.a0proj/...``) and, from 1.7, plugins'
(``plugins/<name>/extensions/python/``, ``usr/plugins/<name>/...``, and their
``agents/<profile>/extensions/python/``); all are searched.

Example:
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> folder = root / "python" / "extensions" / "before_main_llm_call"
    >>> folder.mkdir(parents=True)
    >>> _ = (folder / "_15_htn_plan_selector.py").write_text("x = 1\\n")
    >>> find_selectors(root)
    ['python/extensions/before_main_llm_call/_15_htn_plan_selector.py']
"""

from __future__ import annotations

import fnmatch
import threading
from collections.abc import Collection, Iterator
from pathlib import Path, PurePosixPath

__all__ = [
    "HOOK_ORDER",
    "LIBRARY_NAME",
    "SELECTOR_HOOK",
    "classifiers",
    "classifiers_present",
    "extension_folders",
    "find_selectors",
    "in_extension_folder",
    "is_selector",
]

#: The established selector's plan library, beside it.
LIBRARY_NAME = "htn_plan_library.json"
#: The hook point where classifiers and the plan selector run.
SELECTOR_HOOK = "before_main_llm_call"
#: waygraph's own selector there; classifiers sort before it.
OWN_SELECTOR = "_15_waygraph_plan_selector.py"

#: Every folder Agent-Zero 0.9 and 1.x (to 1.7, ``helpers/subagents.get_paths``)
#: loads a hook point's extensions from, relative to the tree.
_BASES = (
    "python/extensions",
    "extensions/python",
    "usr/extensions",
    "usr/extensions/python",
    "agents/*/extensions",
    "agents/*/extensions/python",
    "usr/agents/*/extensions",
    "usr/agents/*/extensions/python",
    "plugins/*/extensions/python",
    "usr/plugins/*/extensions/python",
    "plugins/*/agents/*/extensions/python",
    "usr/plugins/*/agents/*/extensions/python",
    "usr/projects/*/.a0proj/extensions",
    "usr/projects/*/.a0proj/extensions/python",
    "usr/projects/*/.a0proj/agents/*/extensions",
    "usr/projects/*/.a0proj/agents/*/extensions/python",
)
_CLASSIFIER_MARKS = ("_bst_store", "_org_htn_allowed_plans")
#: Files larger than this are not read when looking for markers.
_MAX_READ = 1 << 20


def extension_folders(root: Path, hook: str | None = None) -> Iterator[Path]:
    """Every existing extension folder in the tree (of ``hook``, or of every hook point)."""
    seen: set[Path] = set()
    for base in _BASES:
        for folder in sorted(root.glob(f"{base}/{hook or '*'}")):
            if folder.is_dir() and not folder.is_symlink() and folder not in seen:
                seen.add(folder)
                yield folder


def in_extension_folder(rel: str) -> bool:
    """True when ``rel`` (relative, POSIX) is a ``.py`` file directly in an extension folder.

    Example:
        >>> in_extension_folder("agents/dev/extensions/before_main_llm_call/_15_x.py")
        True
        >>> in_extension_folder("usr/secrets/key.py")
        False
    """
    pure = PurePosixPath(rel)
    if pure.is_absolute() or any(p in ("..", ".", "") for p in pure.parts) or pure.suffix != ".py":
        return False
    folder = pure.parent.parent.as_posix()
    return any(fnmatch.fnmatchcase(folder, base) for base in _BASES)


def _text(path: Path) -> str:
    try:
        if path.stat().st_size > _MAX_READ:
            return ""
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def is_selector(path: Path) -> bool:
    """True for an established plan selector (by its name, or what it writes)."""
    if "waygraph" in path.name:
        return False
    return "htn_plan_selector" in path.name or "htn_active_plan" in _text(path)


def find_selectors(root: Path, skip: Collection[str] = ()) -> list[str]:
    """Established selectors in the tree, relative to ``root`` (``skip``: paths to ignore)."""
    found = []
    for folder in extension_folders(root):
        for path in sorted(folder.glob("*.py")):
            rel = path.relative_to(root).as_posix()
            if rel not in skip and path.is_file() and not path.is_symlink() and is_selector(path):
                found.append(rel)
    return found


#: The hook points a classifier may write this message's values in, in the
#: order one message-loop iteration runs them (``monologue_start`` once, before
#: the first). A classifier elsewhere runs after the model call: after every hook.
HOOK_ORDER = (
    "monologue_start",
    "message_loop_start",
    "message_loop_prompts_before",
    "message_loop_prompts_after",
    SELECTOR_HOOK,
)

_lock = threading.Lock()
_cache: dict[Path, tuple[tuple[tuple[str, int], ...], tuple[tuple[int, str], ...]]] = {}


def classifiers(root: Path) -> tuple[tuple[int, str], ...]:
    """Where the extensions that write the domain or the allow-list run, in iteration order.

    Each is (index of its hook point in :data:`HOOK_ORDER`, file name), from
    every extension folder of the tree; checked again whenever those folders change.

    Example:
        >>> import tempfile
        >>> root = Path(tempfile.mkdtemp())
        >>> folder = root / "plugins" / "org" / "extensions" / "python" / SELECTOR_HOOK
        >>> folder.mkdir(parents=True)
        >>> _ = (folder / "_20_org.py").write_text("agent.set_data('_org_htn_allowed_plans', [])")
        >>> classifiers(root)
        ((4, '_20_org.py'),)
    """
    folders = [
        (rank, folder)
        for rank, hook in enumerate(HOOK_ORDER)
        for folder in extension_folders(root, hook)
    ]
    stamp = tuple((str(f), f.stat().st_mtime_ns) for _, f in folders)
    with _lock:
        cached = _cache.get(root)
        if cached is not None and cached[0] == stamp:
            return cached[1]
    found = tuple(
        sorted(
            {
                (rank, path.name)
                for rank, folder in folders
                for path in folder.glob("*.py")
                if "waygraph" not in path.name
                and any(mark in _text(path) for mark in _CLASSIFIER_MARKS)
            }
        )
    )
    with _lock:
        _cache[root] = (stamp, found)
    return found


def classifiers_present(root: Path) -> bool:
    """True when an extension in ``before_main_llm_call`` before waygraph's selector
    writes the domain or the allow-list.

    Example:
        >>> import tempfile
        >>> classifiers_present(Path(tempfile.mkdtemp()))
        False
    """
    rank = HOOK_ORDER.index(SELECTOR_HOOK)
    return any(c == (rank, c[1]) and c[1] < OWN_SELECTOR for c in classifiers(root))
