"""Importing the user's code that CLI commands name as ``MODULE[:ATTR]``.

``waygraph worker``/``planner`` load workers and planners this way, and
``waygraph plan --tools`` loads tool functions.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

from waygraph.errors import ConfigError

__all__ = ["describe_error", "load_user_module"]

# Frames of waygraph itself, skipped when saying where user code failed.
_PACKAGE = str(Path(__file__).resolve().parent.parent)


def load_user_module(target: str) -> tuple[ModuleType, str | None]:
    """Import ``MODULE[:ATTR]``: a dotted module name or a path to a .py file.

    Returns the module and the attribute name (None when not given). Every
    failure is a :class:`ConfigError` naming the module, so the CLI prints
    one line instead of a traceback.

    Example:
        >>> module, attr = load_user_module("json:dumps")
        >>> module.__name__, attr
        ('json', 'dumps')
    """
    spec_text, attr = target, None
    head, sep, tail = target.rpartition(":")
    if sep and head and tail.isidentifier():
        spec_text, attr = head, tail
    is_path = spec_text.endswith(".py") or "/" in spec_text or "\\" in spec_text
    try:
        if is_path:
            module = _import_path(Path(spec_text))
        else:
            if str(Path.cwd()) not in sys.path and "" not in sys.path:
                sys.path.insert(0, str(Path.cwd()))  # as `python -m` would
            module = importlib.import_module(spec_text)
    except ConfigError:
        raise
    except ModuleNotFoundError as exc:
        if exc.name and spec_text.startswith(exc.name):
            raise ConfigError(
                f"no module {spec_text!r}: give a dotted module name on the Python path "
                "or a path to a .py file (MODULE[:ATTR])"
            ) from None
        raise ConfigError(f"importing {spec_text!r} failed: {describe_error(exc)}") from None
    except Exception as exc:  # user code: report where, without a traceback
        raise ConfigError(f"importing {spec_text!r} failed: {describe_error(exc)}") from None
    return module, attr


def _import_path(path: Path) -> ModuleType:
    if not path.is_file():
        raise ConfigError(f"{path}: no such Python file (expected MODULE[:ATTR] or FILE.py[:ATTR])")
    name = f"waygraph_user_{re.sub(r'[^0-9A-Za-z_]', '_', path.stem)}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    # The file's folder goes on the path, so it can import its neighbours.
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def describe_error(exc: BaseException) -> str:
    """``Type: message (file:line)`` of the innermost frame, for errors in user code.

    The frame is the innermost one outside waygraph, when there is one: a
    waygraph call the user's code got wrong is reported at the user's line.
    """
    where = ""
    tb = exc.__traceback__
    found = None
    while tb is not None:
        if found is None or not tb.tb_frame.f_code.co_filename.startswith(_PACKAGE):
            found = tb
        tb = tb.tb_next
    tb = found
    if isinstance(exc, SyntaxError) and exc.filename:
        where = f" ({exc.filename}:{exc.lineno})"
    elif tb is not None:
        where = f" ({tb.tb_frame.f_code.co_filename}:{tb.tb_lineno})"
    return f"{type(exc).__name__}: {exc}{where}"
