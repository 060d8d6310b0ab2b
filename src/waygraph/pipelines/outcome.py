"""What a pipeline stage ends with: the specification's Outcome (§5.2) and status file (App. C).

A handler returns an :class:`Outcome`; an external tool or agent may write
the same thing as ``status.json`` in the stage's folder, read with
:meth:`Outcome.from_status_file`. Statuses are lowercase (``success``,
``partial_success``, ``retry``, ``fail``, ``skipped``), read without regard
to case.

Example:
    >>> Outcome.from_status_file({"outcome": "SUCCESS", "preferred_label": "Fix"}).status
    'success'
    >>> Outcome(status="fail", failure_reason="tests failed").succeeded
    False
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["STAGE_STATUSES", "Outcome", "StageStatus"]

StageStatus = Literal["success", "partial_success", "retry", "fail", "skipped"]
STAGE_STATUSES: tuple[str, ...] = ("success", "partial_success", "retry", "fail", "skipped")
# Spellings real status files and ports write for the same statuses.
_ALIASES = {"failure": "fail", "failed": "fail", "partial": "partial_success", "ok": "success"}


class Outcome(BaseModel):
    """The result of one stage: its status and what routing and the context take from it."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    status: StageStatus
    preferred_label: str = ""
    suggested_next_ids: tuple[str, ...] = ()
    context_updates: dict[str, Any] = Field(default_factory=dict)
    notes: str = ""
    failure_reason: str = ""

    @field_validator("status", mode="before")
    @classmethod
    def _fold(cls, value: Any) -> Any:
        if isinstance(value, str):
            folded = value.strip().lower()
            return _ALIASES.get(folded, folded)
        return value

    @property
    def succeeded(self) -> bool:
        """SUCCESS or PARTIAL_SUCCESS: what a goal gate accepts."""
        return self.status in ("success", "partial_success")

    @classmethod
    def from_status_file(cls, data: Any) -> Outcome:
        """An outcome from a ``status.json`` object (``outcome`` or ``status`` holds the status).

        Raises :class:`pydantic.ValidationError` for anything else.
        """
        if isinstance(data, dict) and "status" not in data and "outcome" in data:
            data = {**data, "status": data["outcome"]}
        return cls.model_validate(data)

    def status_file(self) -> dict[str, Any]:
        """This outcome as the specification's ``status.json`` object."""
        data: dict[str, Any] = {"outcome": self.status}
        if self.preferred_label:
            data["preferred_label"] = self.preferred_label
        if self.suggested_next_ids:
            data["suggested_next_ids"] = list(self.suggested_next_ids)
        if self.context_updates:
            data["context_updates"] = self.context_updates
        data["notes"] = self.notes
        if self.failure_reason:
            data["failure_reason"] = self.failure_reason
        return data
