"""Session plans: the model declares its own steps, waygraph keeps them on disk.

For agents without a plan library. The model writes ``[Step] description``
lines as it works; waygraph records them per session in
``<workspace>/.sessions/<folder>/plan.json``, notices when a step is done,
pauses the plan when the host's loop hits its iteration limit, and hands the
progress back when the user says "continue". Independent of the guided
Navigator. See docs/sessions.md.

The rules live in the engine, pure: :mod:`waygraph.engine.session_plan`
(the transitions over a frozen
:class:`~waygraph.engine.session_plan_run.SessionPlanRun`, plan.json's
value) and :mod:`waygraph.engine.session_plan_text` (what the rules read in
messages and replies, re-exported here); this package does the file work,
the store records and the texts.

Example:
    >>> import tempfile
    >>> from waygraph.sessions import SessionPlanner
    >>> planner = SessionPlanner(tempfile.mkdtemp(), max_iterations=20)
    >>> message = planner.on_user_message("telegram:42", "Migrate the blog to Hugo")
    >>> planner.after_model_reply(
    ...     "telegram:42", "[Step] Export posts\\n[Step] Convert\\nLet me export.", 1)
    >>> print(planner.context("telegram:42").splitlines()[2])
    - Current step: Export posts (1/2)
"""

from waygraph.engine.session_plan_text import (
    detect_language,
    detect_step_completion,
    extract_step_declarations,
    is_continue_intent,
    is_correction,
)
from waygraph.sessions._files import list_session_plans, load_session_plan, read_plan_file
from waygraph.sessions._graph import session_view, to_plan
from waygraph.sessions._planner import SessionPlanner
from waygraph.sessions._render import (
    answer_message,
    limit_message,
    progress_summary,
    render_summary,
    resume_message,
    step_instructions,
)

__all__ = [
    "SessionPlanner",
    "answer_message",
    "detect_language",
    "detect_step_completion",
    "extract_step_declarations",
    "is_continue_intent",
    "is_correction",
    "limit_message",
    "list_session_plans",
    "load_session_plan",
    "progress_summary",
    "read_plan_file",
    "render_summary",
    "resume_message",
    "session_view",
    "step_instructions",
    "to_plan",
]
