"""A script of the repository (an example, a benchmark) loaded as a module for a test."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def load_script(path: Path, name: str) -> ModuleType:
    """``path`` (a script, not part of the package) as the module ``name``.

    The module is registered under ``name`` first: dataclasses look their
    module up by name while the script defines them.
    """
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
