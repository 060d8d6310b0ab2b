"""waygraph keeps LLM agents on course through multi-step work with verified plans."""

from waygraph.async_navigator import AsyncNavigator
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
from waygraph.hooks import Hooks
from waygraph.library import Library, load_library
from waygraph.model import Edge, Graph, Node, Plan, Step, Verify
from waygraph.navigator import Event, Guidance, Navigator
from waygraph.verify import Observation

__version__ = "0.1.0"

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
    "load_library",
]
