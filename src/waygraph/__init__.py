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

from importlib import import_module
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'waygraph' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    # Cached as a real attribute: later lookups skip this function.
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
