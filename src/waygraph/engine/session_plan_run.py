"""A session plan as a value: :class:`SessionPlanRun`, its :class:`SessionStep`\\ s, and plan.json.

Where a session plan stands (document 001: its goal, status, steps, the
current step, the iterations used) is a :class:`SessionPlanRun`, a frozen
value holding a tuple of frozen :class:`SessionStep` values. The
transitions in :mod:`waygraph.engine.session_plan` take one and return a
new one; nothing changes the value a caller holds.

plan.json is a contract: :meth:`SessionPlanRun.to_dict` gives back exactly
the dict :meth:`SessionPlanRun.from_dict` read, keys in the order the file
had them, keys a person added (at the plan's level or a step's) included,
so the same plan is written as the same bytes. A key the rules set for the
first time goes at the end, as it did when the rules changed the dict in
place. Each value therefore keeps ``layout``, the file's keys in order, and
``extra``, the keys that are not fields, read-only. Optional keys
(a plan's ``created_at``/``updated_at``, a step's ``result``,
``started_at``, ``completed_at``, ``progress`` and ``implicit``) are written
only when the layout has them: a step has ``progress`` once a reply
reported it, and ``implicit`` only while it stands for the whole task.

:meth:`SessionPlanRun.from_dict` checks what the rules rely on and raises
:class:`~waygraph.errors.CorruptPlan` with one line naming the field (and
the step); it fills what older files lack as waygraph always has
(``iterations`` 0, ``completed_by`` null, ``resumed_at_iteration`` 0,
``failure_reason`` null) and reads an ``awaiting`` other than ``"user"``,
or a ``question`` that is not text, as null.

Example:
    >>> run = SessionPlanRun(id="plan_1", session_id="s", goal="Ship it",
    ...                      steps=(SessionStep("step_1", "Build", "running"),))
    >>> run.current_step.description, run.steps_done
    ('Build', 0)
    >>> SessionPlanRun.from_dict(run.to_dict()) == run
    True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Literal, TypeVar, get_args

from waygraph.engine.run_context import frozen, thawed
from waygraph.errors import CorruptPlan
from waygraph.model import FINISHED

__all__ = [
    "AWAITING_USER",
    "FINISHED",
    "PLAN_KEYS",
    "PLAN_STATUSES",
    "STEP_KEYS",
    "STEP_STATUSES",
    "PlanStatus",
    "SessionPlanRun",
    "SessionStep",
    "StepProgress",
    "StepStatus",
    "evolve",
    "without",
]

PlanStatus = Literal["pending", "running", "paused", "completed", "failed"]
StepStatus = Literal["pending", "running", "completed", "failed"]
PLAN_STATUSES: tuple[PlanStatus, ...] = get_args(PlanStatus)
STEP_STATUSES: tuple[StepStatus, ...] = get_args(StepStatus)
#: ``awaiting`` while the model's question waits for the user's answer.
AWAITING_USER: Literal["user"] = "user"

#: A new plan's keys, in the order waygraph writes them.
PLAN_KEYS = (
    "id",
    "session_id",
    "goal",
    "status",
    "created_at",
    "updated_at",
    "steps",
    "current_step_index",
    "iteration_count",
    # The iteration budget is per stretch of running: resuming gives a fresh
    # max_iterations while iteration_count keeps the lifetime total.
    "resumed_at_iteration",
    "failure_reason",
    # "user" while the model's question waits for an answer; ``question``
    # keeps the end of that reply so the answer can be put in context.
    "awaiting",
    "question",
)
#: A new step's keys, in order (``progress`` and ``implicit`` come when set).
STEP_KEYS = (
    "id",
    "description",
    "status",
    "result",
    "started_at",
    "completed_at",
    "iterations",
    "completed_by",
)
# Keys every plan and step has once loaded (older files get them on load).
_PLAN_REQUIRED = tuple(k for k in PLAN_KEYS if k not in ("created_at", "updated_at"))
_STEP_REQUIRED = ("id", "description", "status", "iterations", "completed_by")

_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _finish(value: Any, fields: frozenset[str], required: tuple[str, ...], held: list[str]) -> None:
    """Make ``value`` whole: read-only copies of what the caller gave, and a
    layout with every key it holds (``required``, the optional fields set in
    ``held``, ``extra``), so a value built by hand writes all it has."""
    set_ = object.__setattr__
    if type(value.extra) is not MappingProxyType:
        set_(value, "extra", frozen(dict(value.extra)))
    clash = fields & set(value.extra)
    if clash:
        raise ValueError(f"extra keys {sorted(clash)} are fields; set the fields instead")
    layout = [k for k in value.layout if k in fields or k in value.extra]
    layout += [k for k in (*required, *held, *value.extra) if k not in layout]
    if tuple(layout) != value.layout:
        set_(value, "layout", tuple(layout))


@dataclass(frozen=True, slots=True)
class StepProgress:
    """A step's progress as the model reported it (``[Progress] current/total``).

    Example:
        >>> StepProgress(12, 40).to_dict()
        {'current': 12, 'total': 40}
    """

    current: int
    total: int

    def to_dict(self) -> dict[str, int]:
        """``{"current": ..., "total": ...}``, as plan.json has it."""
        return {"current": self.current, "total": self.total}


@dataclass(frozen=True, slots=True)
class SessionStep:
    """One declared step of a session plan; see the module docstring for ``extra`` and ``layout``.

    Example:
        >>> step = SessionStep("step_1", "Export the posts")
        >>> step.status, list(step.to_dict())[-1]
        ('pending', 'completed_by')
        >>> step.status = "running"
        Traceback (most recent call last):
        ...
        dataclasses.FrozenInstanceError: cannot assign to field 'status'
    """

    id: str
    description: str
    status: StepStatus = "pending"
    result: str | None = None
    started_at: str | None = None
    completed_at: str | None = None
    iterations: int = 0
    completed_by: str | None = None
    progress: StepProgress | None = None
    #: True while the step stands for the whole task (no step declared yet).
    implicit: bool = False
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    layout: tuple[str, ...] = STEP_KEYS

    def __post_init__(self) -> None:
        held = ["progress"] if self.progress is not None else []
        if self.implicit:
            held.append("implicit")
        _finish(self, _STEP_FIELDS, _STEP_REQUIRED, held)

    def to_dict(self) -> dict[str, Any]:
        """The step as plan.json has it."""
        return {key: self._json(key) for key in self.layout}

    def _json(self, key: str) -> Any:
        if key == "progress":
            return None if self.progress is None else self.progress.to_dict()
        if key in _STEP_FIELDS:
            return getattr(self, key)
        return thawed(self.extra[key])

    @classmethod
    def from_dict(cls, data: Any, index: int = 0) -> SessionStep:
        """The step plan.json holds at ``index`` (counted from 0), checked.

        Raises :class:`~waygraph.errors.CorruptPlan` naming the step and field.

        Example:
            >>> SessionStep.from_dict({"id": "step_1", "description": "A", "status": "x"}, 0)
            Traceback (most recent call last):
            ...
            waygraph.errors.CorruptPlan: step 0 needs a string id and description and a valid status
        """
        get = data.get if isinstance(data, Mapping) else None
        if not (
            get is not None
            and type(get("id")) is str
            and type(get("description")) is str
            and get("status") in STEP_STATUSES
        ):
            raise CorruptPlan(f"step {index} needs a string id and description and a valid status")
        where = f"step {index} ({data['id']})"
        for key in ("result", "started_at", "completed_at", "completed_by"):
            _text_or_null(get(key), key, where)
        iterations = get("iterations", 0)
        if not _whole(iterations):
            raise CorruptPlan(f"{where}: field 'iterations' is not a whole number")
        implicit = get("implicit", False)
        if type(implicit) is not bool:
            raise CorruptPlan(f"{where}: field 'implicit' is not true or false")
        # Plans are read far more often than built: a checked step is made
        # whole here instead of in __post_init__.
        return _made(
            cls,
            id=data["id"],
            description=data["description"],
            status=data["status"],
            result=get("result"),
            started_at=get("started_at"),
            completed_at=get("completed_at"),
            iterations=iterations,
            completed_by=get("completed_by"),
            progress=_progress(get("progress"), where),
            implicit=implicit,
            extra=_extra(data, _STEP_FIELDS),
            layout=_read_layout(data, _STEP_REQUIRED),
        )


@dataclass(frozen=True, slots=True)
class SessionPlanRun:
    """Where a session plan stands; every transition returns a new value.

    The fields are plan.json's (docs/sessions.md, "plan.json"); see the
    module docstring for ``extra`` and ``layout``.

    Example:
        >>> run = SessionPlanRun(id="plan_1", session_id="s", goal="Ship it")
        >>> run.status, run.steps, run.waiting_on_user
        ('running', (), False)
        >>> run.goal = "Other"
        Traceback (most recent call last):
        ...
        dataclasses.FrozenInstanceError: cannot assign to field 'goal'
    """

    id: str
    session_id: str
    goal: str
    status: PlanStatus = "running"
    created_at: str | None = None
    updated_at: str | None = None
    steps: tuple[SessionStep, ...] = ()
    current_step_index: int = 0
    iteration_count: int = 0
    resumed_at_iteration: int = 0
    failure_reason: str | None = None
    awaiting: Literal["user"] | None = None
    question: str | None = None
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    layout: tuple[str, ...] = PLAN_KEYS

    def __post_init__(self) -> None:
        if type(self.steps) is not tuple:
            object.__setattr__(self, "steps", tuple(self.steps))
        dated = [k for k in ("created_at", "updated_at") if getattr(self, k) is not None]
        _finish(self, _PLAN_FIELDS, _PLAN_REQUIRED, dated)

    @property
    def current_step(self) -> SessionStep | None:
        """The running step the plan points at, or None (no steps, or all done)."""
        index = self.current_step_index
        if 0 <= index < len(self.steps) and self.steps[index].status == "running":
            return self.steps[index]
        return None

    @property
    def steps_done(self) -> int:
        """How many steps are completed."""
        return sum(1 for s in self.steps if s.status == "completed")

    @property
    def waiting_on_user(self) -> bool:
        """Whether the model's question waits for the user's answer."""
        return self.awaiting == AWAITING_USER

    @property
    def finished(self) -> bool:
        """Whether the plan completed or failed."""
        return self.status in FINISHED

    @property
    def stretch_iterations(self) -> int:
        """Replies recorded since the plan started or last resumed (what the limit counts)."""
        return self.iteration_count - self.resumed_at_iteration

    def to_dict(self) -> dict[str, Any]:
        """The plan as plan.json has it (a new dict; see the module docstring)."""
        return {key: self._json(key) for key in self.layout}

    def _json(self, key: str) -> Any:
        if key == "steps":
            return [step.to_dict() for step in self.steps]
        if key in _PLAN_FIELDS:
            return getattr(self, key)
        return thawed(self.extra[key])

    @classmethod
    def from_dict(cls, data: Any) -> SessionPlanRun:
        """The plan a plan.json holds (parsed JSON), checked (see the module docstring).

        Raises :class:`~waygraph.errors.CorruptPlan` with one line naming the field.

        Example:
            >>> SessionPlanRun.from_dict({"id": "p", "session_id": "s", "goal": "g",
            ...                           "status": "running", "steps": [],
            ...                           "current_step_index": 0, "iteration_count": -1})
            Traceback (most recent call last):
            ...
            waygraph.errors.CorruptPlan: field 'iteration_count' is not a whole number
        """
        if not isinstance(data, Mapping):
            raise CorruptPlan("not a JSON object")
        for key in ("id", "session_id", "goal"):
            if not isinstance(data.get(key), str):
                raise CorruptPlan(f"field {key!r} is missing or not a string")
        if data.get("status") not in PLAN_STATUSES:
            raise CorruptPlan(f"field 'status' is not one of {', '.join(PLAN_STATUSES)}")
        for key in ("current_step_index", "iteration_count"):
            if not _whole(data.get(key)):
                raise CorruptPlan(f"field {key!r} is not a whole number")
        steps = data.get("steps")
        if not isinstance(steps, list):
            raise CorruptPlan("field 'steps' is not a list")
        parsed = tuple(SessionStep.from_dict(step, i) for i, step in enumerate(steps))
        if not _whole(data.get("resumed_at_iteration", 0)):
            raise CorruptPlan("field 'resumed_at_iteration' is not a whole number")
        for key in ("created_at", "updated_at", "failure_reason"):
            _text_or_null(data.get(key), key, "")
        question = data.get("question")
        return _made(
            cls,
            id=data["id"],
            session_id=data["session_id"],
            goal=data["goal"],
            status=data["status"],
            created_at=data.get("created_at"),
            updated_at=data.get("updated_at"),
            steps=parsed,
            current_step_index=data["current_step_index"],
            iteration_count=data["iteration_count"],
            resumed_at_iteration=data.get("resumed_at_iteration", 0),
            failure_reason=data.get("failure_reason"),
            # Only "user" means anything; a hand-edited value must not leave a
            # plan waiting on someone who never answers.
            awaiting=AWAITING_USER if data.get("awaiting") == AWAITING_USER else None,
            question=question if isinstance(question, str) else None,
            extra=_extra(data, _PLAN_FIELDS),
            layout=_read_layout(data, _PLAN_REQUIRED),
        )


_STEP_FIELDS = frozenset(SessionStep.__dataclass_fields__) - {"extra", "layout"}
_PLAN_FIELDS = frozenset(SessionPlanRun.__dataclass_fields__) - {"extra", "layout"}

_Value = TypeVar("_Value", SessionStep, SessionPlanRun)


def evolve(value: _Value, **changes: Any) -> _Value:
    """``value`` with ``changes``; a key it did not have yet goes at the end of its layout.

    As a dict assignment would: the transitions set fields in the order the
    file gets them.

    Example:
        >>> step = SessionStep.from_dict({"id": "s1", "description": "A", "status": "pending"})
        >>> list(evolve(step, status="running", started_at="t1").to_dict())
        ['id', 'description', 'status', 'iterations', 'completed_by', 'started_at']
    """
    added = tuple(k for k in changes if k not in value.layout)
    return replace(value, **changes, layout=value.layout + added)


def without(step: SessionStep, key: Literal["implicit", "progress"], **changes: Any) -> SessionStep:
    """``step`` with ``changes`` and without the optional ``key`` (the field at its default).

    Example:
        >>> "implicit" in without(SessionStep("s1", "A", implicit=True), "implicit").to_dict()
        False
    """
    layout = tuple(k for k in step.layout if k != key)
    cleared: dict[str, Any] = {"implicit": False} if key == "implicit" else {"progress": None}
    return replace(step, **changes, **cleared, layout=layout)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _made(cls: type[_Value], **values: Any) -> _Value:
    """A value of ``cls`` from fields from_dict checked and made whole (no __post_init__)."""
    new = object.__new__(cls)
    for name, value in values.items():
        object.__setattr__(new, name, value)
    return new


def _extra(data: Mapping[str, Any], fields: frozenset[str]) -> Mapping[str, Any]:
    if data.keys() <= fields:
        return _EMPTY
    extra: Mapping[str, Any] = frozen({k: v for k, v in data.items() if k not in fields})
    return extra


def _read_layout(data: Mapping[str, Any], required: tuple[str, ...]) -> tuple[str, ...]:
    # Older files lack some bookkeeping keys: they go at the end, in order.
    layout = tuple(data)
    missing = tuple(k for k in required if k not in data)
    return layout + missing if missing else layout


def _text_or_null(value: Any, key: str, where: str) -> None:
    if value is not None and type(value) is not str:
        prefix = f"{where}: " if where else ""
        raise CorruptPlan(f"{prefix}field {key!r} is not text or null")


def _progress(value: Any, where: str) -> StepProgress | None:
    if value is None:
        return None
    if (
        isinstance(value, Mapping)
        and set(value) == {"current", "total"}
        and all(isinstance(value[k], int) and not isinstance(value[k], bool) for k in value)
    ):
        return StepProgress(value["current"], value["total"])
    raise CorruptPlan(f'{where}: field \'progress\' is not {{"current": k, "total": n}}')
