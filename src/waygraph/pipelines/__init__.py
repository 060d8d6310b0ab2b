"""Attractor pipelines: DOT workflows read, checked, guided and run as the specification says.

StrongDM's Attractor specification describes coding-agent pipelines as
Graphviz DOT files. waygraph reads them into its one plan model
(:func:`waygraph.formats.dot.parse_dot`, :func:`waygraph.load_library`), so a
Navigator guides an agent through one like any plan; this package holds what
is particular to running them: the condition language
(:mod:`~waygraph.pipelines.conditions`), stage outcomes
(:mod:`~waygraph.pipelines.outcome`) and the routing rules
(:mod:`~waygraph.pipelines.routing`), and the runner that executes them
(:func:`run_pipeline`, :mod:`~waygraph.pipelines.runner`) with its handlers,
interviewers and codergen backends. docs/dot.md is the user's guide.

Example:
    >>> from waygraph.pipelines import Outcome, evaluate_condition
    >>> evaluate_condition("outcome=success", outcome=Outcome(status="success").status)
    True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from waygraph._extras import lazy_names
from waygraph.pipelines.conditions import condition_problem, evaluate_condition
from waygraph.pipelines.outcome import STAGE_STATUSES, Outcome, StageStatus
from waygraph.pipelines.routing import handler_type, select_edge

if TYPE_CHECKING:
    from waygraph.pipelines.backends import AgentBackend, CodergenBackend
    from waygraph.pipelines.checkpoint import Checkpoint
    from waygraph.pipelines.context import Context
    from waygraph.pipelines.handlers import Handler, HandlerRegistry, default_handlers
    from waygraph.pipelines.interviewers import (
        Answer,
        AnswerValue,
        AutoApproveInterviewer,
        CallbackInterviewer,
        ConsoleInterviewer,
        Interviewer,
        Option,
        Question,
        QuestionType,
        QueueInterviewer,
        RecordingInterviewer,
    )
    from waygraph.pipelines.runner import PipelineResult, arun_pipeline, run_pipeline

# The runner's names are imported on first use: the routing rules stay importable
# from modules the runner itself imports (the agent loop, the engine) without a cycle.
_LAZY = {
    **dict.fromkeys(("AgentBackend", "CodergenBackend"), "waygraph.pipelines.backends"),
    "Checkpoint": "waygraph.pipelines.checkpoint",
    "Context": "waygraph.pipelines.context",
    **dict.fromkeys(
        ("Handler", "HandlerRegistry", "default_handlers"), "waygraph.pipelines.handlers"
    ),
    **dict.fromkeys(
        (
            "Answer",
            "AnswerValue",
            "AutoApproveInterviewer",
            "CallbackInterviewer",
            "ConsoleInterviewer",
            "Interviewer",
            "Option",
            "Question",
            "QuestionType",
            "QueueInterviewer",
            "RecordingInterviewer",
        ),
        "waygraph.pipelines.interviewers",
    ),
    **dict.fromkeys(
        ("PipelineResult", "arun_pipeline", "run_pipeline"), "waygraph.pipelines.runner"
    ),
}

__all__ = [
    "STAGE_STATUSES",
    "AgentBackend",
    "Answer",
    "AnswerValue",
    "AutoApproveInterviewer",
    "CallbackInterviewer",
    "Checkpoint",
    "CodergenBackend",
    "ConsoleInterviewer",
    "Context",
    "Handler",
    "HandlerRegistry",
    "Interviewer",
    "Option",
    "Outcome",
    "PipelineResult",
    "Question",
    "QuestionType",
    "QueueInterviewer",
    "RecordingInterviewer",
    "StageStatus",
    "arun_pipeline",
    "condition_problem",
    "default_handlers",
    "evaluate_condition",
    "handler_type",
    "run_pipeline",
    "select_edge",
]


__getattr__ = lazy_names(globals(), _LAZY)[0]
