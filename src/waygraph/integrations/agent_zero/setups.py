"""Which config and Navigator an installed Agent-Zero hook file uses.

Each hook file finds its config by walking up from itself to
``usr/waygraph/config.json``; the Navigator built from that config is cached
per process (:data:`setups`) and rebuilt when the config file changes (its
stat is looked at once a second at most, so the next iteration's hooks pick
up an edit). A config, library or store that does not load is remembered
(:func:`setup_of` gives None until :data:`RETRY_SECONDS` passed), so one
failure is one warning, not one per hook call.

Example:
    >>> import tempfile
    >>> from waygraph.integrations.agent_zero import install
    >>> root = Path(tempfile.mkdtemp())
    >>> (root / "extensions" / "python").mkdir(parents=True)
    >>> report = install(root)
    >>> hook = root / "extensions/python/tool_execute_after/_50_waygraph_verify.py"
    >>> setup_for(hook).config.layout
    '1.x'
    >>> known_setup(str(hook)) is setup_for(hook)
    True
    >>> forget_all()
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from waygraph.errors import ConfigError
from waygraph.integrations.agent_zero.config import CONFIG_PATH, AgentZeroConfig
from waygraph.model import Plan
from waygraph.navigator import Navigator

__all__ = [
    "CONFIG_CHECK_SECONDS",
    "RETRY_SECONDS",
    "HookSetup",
    "forget_all",
    "known_setup",
    "setup_for",
    "setup_of",
    "setups",
]

#: After a config, library or store fails to load, how long the extensions
#: stay quiet before trying (and, if it still fails, warning) again.
RETRY_SECONDS = 30.0

#: How often (seconds) the hooks look at the config file for changes.
CONFIG_CHECK_SECONDS = 1.0


@dataclass(frozen=True, slots=True)
class HookSetup:
    """What the hooks of one installed tree use: its folder, config and Navigator.

    Example:
        >>> import tempfile
        >>> from waygraph.integrations.agent_zero import install
        >>> root = Path(tempfile.mkdtemp())
        >>> (root / "python" / "extensions").mkdir(parents=True)
        >>> report = install(root)
        >>> setup = setup_for(root / "python/extensions/tool_execute_after/x.py")
        >>> setup.root == root, setup.config.layout
        (True, '0.9')
        >>> forget_all()
    """

    root: Path
    #: The config file's path as text: the key of :data:`setups` and of the
    #: library errors reported (a ``Path`` hashes and compares in Python code,
    #: and every hook looks its setup up).
    key: str
    config: AgentZeroConfig
    navigator: Navigator
    stamp: tuple[int, int]
    #: Plan version (a content hash) -> that plan, for the log lines' step names.
    plans: dict[str, Plan] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Failure:
    stamp: tuple[int, int] | None
    retry_at: float


class _Quiet(Exception):
    """A failure already reported; stay silent until it is time to retry."""


_lock = threading.Lock()
#: Config file (as text) -> its setup.
setups: dict[str, HookSetup] = {}
_failures: dict[str, _Failure] = {}
#: Hook file -> (its config file as text, when its stat was last looked at):
#: the walk up to it is several stats, so it is done once; a config that is
#: gone or changed is looked for again.
config_of: dict[str, tuple[str, float]] = {}


def forget_all() -> None:
    """Close the cached Navigators and forget every setup and failure.

    Example:
        >>> forget_all()
        >>> setups
        {}
    """
    with _lock:
        for setup in setups.values():
            setup.navigator.close()
        setups.clear()
        _failures.clear()
        config_of.clear()


def _find_config(hook_file: Path) -> Path:
    for folder in hook_file.absolute().parents:
        candidate = folder / CONFIG_PATH
        if candidate.is_file():
            return candidate
    raise ConfigError(
        f"no {CONFIG_PATH} in any folder above {hook_file}; "
        "run `waygraph install agent-zero PATH` again"
    )


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


def known_setup(hook_file: str) -> HookSetup | None:
    """The setup of a hook file seen before whose config is unchanged, else None.

    The config's stat is looked at most every :data:`CONFIG_CHECK_SECONDS`
    (the hooks of one model iteration run within milliseconds of each other),
    so an edited config is picked up by the next iteration's hooks.

    Example:
        >>> known_setup("/a0/extensions/python/tool_execute_after/never_seen.py") is None
        True
    """
    found = config_of.get(hook_file)
    if found is None:
        return None
    key, checked = found
    cached = setups.get(key)
    if cached is None:
        return None
    now = time.monotonic()
    if now < checked + CONFIG_CHECK_SECONDS:
        return cached
    try:
        stat = os.stat(key)
    except OSError:
        return None
    if cached.stamp != (stat.st_mtime_ns, stat.st_size):
        return None
    config_of[hook_file] = (key, now)
    return cached


def setup_of(hook_file: str) -> HookSetup | None:
    """The setup a hook file uses (:func:`known_setup`, else :func:`setup_for`).

    None while a failure already reported waits for its retry; a new failure raises.

    Example:
        >>> from waygraph.errors import ConfigError
        >>> hook = "/nowhere/python/extensions/tool_execute_after/x.py"
        >>> try:
        ...     setup_of(hook)
        ... except ConfigError:
        ...     print("reported")
        reported
        >>> setup_of(hook) is None  # the same failure, before its retry: quiet
        True
        >>> forget_all()
    """
    try:
        found = known_setup(hook_file)
        if found is not None:
            return found
        if not os.path.isabs(hook_file):
            # Resolved once, here: the cache is keyed by absolute paths.
            hook_file = os.path.abspath(hook_file)
            found = known_setup(hook_file)
            if found is not None:
                return found
        return setup_for(Path(hook_file))
    except _Quiet:
        return None


def setup_for(hook_file: Path) -> HookSetup:
    """The setup of the tree ``hook_file`` is in: cached, or built from its config now.

    Raises the :class:`~waygraph.errors.ConfigError` (or library or store
    error) that stops it; the same failure again, until :data:`RETRY_SECONDS`
    passed or the config file changed, raises a private exception that
    :func:`setup_of` turns into None.

    Example:
        >>> from waygraph.errors import ConfigError
        >>> try:
        ...     setup_for(Path("/nowhere/python/extensions/tool_execute_after/x.py"))
        ... except ConfigError as exc:
        ...     print(str(exc)[:44])
        no usr/waygraph/config.json in any folder ab
        >>> forget_all()
    """
    missing: ConfigError | None = None
    try:
        key = _find_config(hook_file)
        stamp = _stamp(key)
    except ConfigError as exc:
        # Remember the failure under the hook file, so it is reported once.
        key, stamp, missing = hook_file, None, exc
    name = str(key)
    with _lock:
        if missing is None and hook_file.is_absolute():  # a relative one moves with the cwd
            config_of[str(hook_file)] = (name, time.monotonic())
        cached = setups.get(name)
        if cached is not None and cached.stamp == stamp:
            return cached
        failure = _failures.get(name)
        if failure is not None and failure.stamp == stamp and time.monotonic() < failure.retry_at:
            raise _Quiet()
        try:
            if missing is not None or stamp is None:
                raise missing or ConfigError(f"{key}: cannot read the waygraph config")
            setup = _build(key, stamp)
        except Exception:
            _failures[name] = _Failure(stamp, time.monotonic() + RETRY_SECONDS)
            raise
        _failures.pop(name, None)
        setups[name] = setup
        return setup


def _build(config_path: Path, stamp: tuple[int, int]) -> HookSetup:
    config = AgentZeroConfig.read(config_path)
    root = config_path.parents[len(Path(CONFIG_PATH).parts) - 1]
    navigator = Navigator(
        config.library_path(root),
        store=config.store_url(root),
        workspace=config.workspace_path(root),
        strict=True,
        allow_commands=config.allow_commands,
        confine=config.confine,
        tools_run_elsewhere=config.tools_run_elsewhere,
        matching=config.matching,
    )
    return HookSetup(
        root=root, key=str(config_path), config=config, navigator=navigator, stamp=stamp
    )
