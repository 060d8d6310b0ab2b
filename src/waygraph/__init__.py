"""waygraph keeps LLM agents on course through multi-step work with verified plans.

The public names below load on first use (PEP 562): ``import waygraph`` and the
``waygraph`` command then start without importing the navigator, the graph
model and pydantic, which only the commands that run plans need.

Example:
    >>> from waygraph import Graph
    >>> Graph.builder().exit("done").edge("start", "done").plan("fix_bug").id
    'fix_bug'
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING

from waygraph._extras import lazy_names
from waygraph.errors import (
    ConfigError,
    Conflict,
    LibraryError,
    PlanFormatError,
    PlanNotFoundError,
    PlanSyntaxError,
    StoreError,
    WaygraphError,
)

if TYPE_CHECKING:
    from waygraph.async_navigator import AsyncNavigator
    from waygraph.hooks import Hooks
    from waygraph.library import Library, load_library
    from waygraph.model import Edge, Graph, Node, Plan, Step, Verify
    from waygraph.navigator import Event, Guidance, Navigator
    from waygraph.pipelines.runner import arun_pipeline, run_pipeline
    from waygraph.verify import Observation

__version__ = "0.1.0"

# Public name -> the module that defines it, imported by __getattr__ on first use.
_LAZY = {
    "AsyncNavigator": "waygraph.async_navigator",
    "Hooks": "waygraph.hooks",
    "Library": "waygraph.library",
    "load_library": "waygraph.library",
    "Edge": "waygraph.model",
    "Graph": "waygraph.model",
    "Node": "waygraph.model",
    "Plan": "waygraph.model",
    "Step": "waygraph.model",
    "Verify": "waygraph.model",
    "Event": "waygraph.navigator",
    "Guidance": "waygraph.navigator",
    "Navigator": "waygraph.navigator",
    "Observation": "waygraph.verify",
    "run_pipeline": "waygraph.pipelines.runner",
    "arun_pipeline": "waygraph.pipelines.runner",
}

__all__ = [
    "AsyncNavigator",
    "ConfigError",
    "Conflict",
    "Edge",
    "Event",
    "Graph",
    "Guidance",
    "Hooks",
    "Library",
    "LibraryError",
    "Navigator",
    "Node",
    "Observation",
    "Plan",
    "PlanFormatError",
    "PlanNotFoundError",
    "PlanSyntaxError",
    "Step",
    "StoreError",
    "Verify",
    "WaygraphError",
    "__version__",
    "arun_pipeline",
    "load_library",
    "run_pipeline",
]


__getattr__, __dir__ = lazy_names(globals(), _LAZY)


# Modules that lived at the package root before it was split into subpackages
# by concept (docs/architecture.md): the old paths keep importing, as the very
# same module objects, so `from waygraph.svg import to_svg`, a user's
# `mock.patch("waygraph.runner.run")` and an Agent-Zero tree installed before
# the move all keep working. New code imports the new paths.
MOVED_MODULES = {
    "waygraph._check_codes": "waygraph.check._codes",
    "waygraph._check_files": "waygraph.check._files",
    "waygraph._check_human": "waygraph.check._human",
    "waygraph._check_kinds": "waygraph.check._kinds",
    "waygraph._check_predicates": "waygraph.check._predicates",
    "waygraph._check_routes": "waygraph.check._routes",
    "waygraph._demo_model": "waygraph.demo._model",
    "waygraph._match_words": "waygraph.match._words",
    "waygraph._reaper": "waygraph.sandbox._reaper",
    "waygraph._render_compact": "waygraph.render._compact",
    "waygraph._render_node": "waygraph.render._node",
    "waygraph._render_pipeline": "waygraph.render._pipeline",
    "waygraph._semantic_cache": "waygraph.match._semantic_cache",
    "waygraph._svg_layout": "waygraph.draw._svg_layout",
    "waygraph._tracing_chat": "waygraph.tracing._chat",
    "waygraph.chaining": "waygraph.guided.chaining",
    "waygraph.evidence": "waygraph.verify_types.evidence",
    "waygraph.gates": "waygraph.verify.gates",
    "waygraph.guidance_style": "waygraph.render.style",
    "waygraph.guided_sessions": "waygraph.guided.sessions",
    "waygraph.landlock": "waygraph.sandbox.landlock",
    "waygraph.live_library": "waygraph.guided.live_library",
    "waygraph.matching": "waygraph.match.selector",
    "waygraph.patterns": "waygraph.sandbox.patterns",
    "waygraph.people": "waygraph.verify_types.people",
    "waygraph.questions": "waygraph.verify.questions",
    "waygraph.retry": "waygraph.store.retry",
    "waygraph.runner": "waygraph.sandbox.runner",
    "waygraph.safe_files": "waygraph.sandbox.safe_files",
    "waygraph.semantic": "waygraph.match.semantic",
    "waygraph.svg": "waygraph.draw.svg",
    "waygraph.turns": "waygraph.guided.turns",
    "waygraph.versions": "waygraph.guided.versions",
}


class _MovedModuleLoader(importlib.abc.Loader):
    """Loads an old path as the module at its new one.

    The import system keeps whatever ``exec_module`` leaves in ``sys.modules``
    under the name imported, so the old name ends up bound to the new module
    itself (not a copy), without touching that module's ``__spec__``.
    """

    def __init__(self, target: str) -> None:
        self._target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return ModuleType(spec.name)

    def exec_module(self, module: ModuleType) -> None:
        sys.modules[module.__name__] = import_module(self._target)


class _MovedModuleFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = MOVED_MODULES.get(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _MovedModuleLoader(new))


if not any(isinstance(f, _MovedModuleFinder) for f in sys.meta_path):
    sys.meta_path.append(_MovedModuleFinder())
