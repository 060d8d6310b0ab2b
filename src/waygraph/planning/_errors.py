"""The planning agent's errors, kept importable here; they live in :mod:`waygraph.errors`."""

from __future__ import annotations

from waygraph.errors import InvalidPlanError, LLMError, PlanParseError

__all__ = ["InvalidPlanError", "LLMError", "PlanParseError"]
