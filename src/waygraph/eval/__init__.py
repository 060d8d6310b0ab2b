"""waygraph.eval: does guidance make a given model finish more multi-step tasks?

A suite of small real tasks (workspaces built in temporary folders, checked by
deterministic checkers), the agent under test in three modes (``baseline``,
``guided``, ``planned``), a parallel runner, metrics with a 95% confidence
interval, and a terminal and HTML report. See docs/eval.md.

Example:
    >>> from waygraph.eval import select_tasks
    >>> [t.id for t in select_tasks("log-*")]
    ['log-root-cause']
"""

from waygraph.eval.metrics import difference_ci, summary_line, wilson_interval
from waygraph.eval.runner import EvalConfig, Record, load_records, run_eval, write_records
from waygraph.eval.suite import Action, EvalTask, TaskVerdict, all_tasks, get_task, select_tasks

__all__ = [
    "Action",
    "EvalConfig",
    "EvalTask",
    "Record",
    "TaskVerdict",
    "all_tasks",
    "difference_ci",
    "get_task",
    "load_records",
    "run_eval",
    "select_tasks",
    "summary_line",
    "wilson_interval",
    "write_records",
]
