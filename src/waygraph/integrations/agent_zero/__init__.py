"""waygraph inside Agent-Zero: installed extension files that guide the agent with plans.

``waygraph install agent-zero PATH`` (or :func:`install`) copies four extension
files into the Agent-Zero folder ``PATH``, plus a config and, when given, a
copy of the plan library under ``usr/waygraph/``. An established HTN plan
selector is disabled (kept in the install backup) and its plans carried over:

=================================  ===================================================
hook folder                        what the file does
=================================  ===================================================
``tool_execute_before``            remembers the call, marks terminal commands' status
``tool_execute_after``             verifies each tool result against the current node
``message_loop_prompts_after``     counts the iteration, injects the guidance
``before_main_llm_call`` (``_15_``)  starts plans after the BST and the org dispatcher,
                                   mirrors ``agent._htn_state``
=================================  ===================================================

The files are thin: they import only Agent-Zero's ``Extension`` base class
and, inside ``execute``, :mod:`waygraph.integrations.agent_zero.runtime` from
the installed ``waygraph`` package. ``waygraph uninstall agent-zero PATH``
(or :func:`uninstall`) leaves the tree byte for byte as it was.

Modules: :mod:`.templates` (layouts and file texts), :mod:`.config` (the
config file), :mod:`.installer`, :mod:`.reading` (what the hooks read from
Agent-Zero's objects), :mod:`.runtime` (what the hooks do).

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> root = Path(tempfile.mkdtemp())
    >>> (root / "extensions" / "python").mkdir(parents=True)
    >>> install(root).layout
    '1.x'
    >>> uninstall(root).installed
    True
"""

from waygraph.integrations.agent_zero.config import AgentZeroConfig
from waygraph.integrations.agent_zero.installer import (
    InstallReport,
    UninstallReport,
    detect_layout,
    install,
    uninstall,
)
from waygraph.integrations.agent_zero.templates import LAYOUTS, Layout

__all__ = [
    "LAYOUTS",
    "AgentZeroConfig",
    "InstallReport",
    "Layout",
    "UninstallReport",
    "detect_layout",
    "install",
    "uninstall",
]
