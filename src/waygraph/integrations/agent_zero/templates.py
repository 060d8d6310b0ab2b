"""The Agent-Zero layouts and the extension files waygraph installs into them.

Agent-Zero runs the ``.py`` files of a hook folder in name order, loading each
with ``importlib.util.spec_from_file_location`` and instantiating the
alphabetically last ``Extension`` subclass in the module's namespace, once per
call. So every installed file defines exactly one subclass, imports nothing
but the layout's ``Extension`` base class at module level, and reaches the
installed ``waygraph`` package only inside ``execute`` — a file loaded by path
cannot import its siblings, and a missing ``waygraph`` must not stop the agent.

Two layouts are in use:

=======  ==============================  ==========================================
layout   hook folders                    base class import
=======  ==============================  ==========================================
``0.9``  ``python/extensions/<hook>/``   ``from python.helpers.extension import Extension``
``1.x``  ``extensions/python/<hook>/``   ``from helpers.extension import Extension``
=======  ==============================  ==========================================

Example:
    >>> text = render(HOOKS[0], LAYOUTS["1.x"])
    >>> "from helpers.extension import Extension" in text
    True
    >>> hook_path(HOOKS[0], LAYOUTS["0.9"])
    'python/extensions/tool_execute_before/_50_waygraph_prepare.py'
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["HOOKS", "LAYOUTS", "HookFile", "Layout", "hook_path", "render"]


@dataclass(frozen=True, slots=True)
class Layout:
    """Where one Agent-Zero generation keeps its extensions.

    ``hooks_root`` is relative to the Agent-Zero folder; ``base_module`` is
    the module the ``Extension`` base class is imported from.
    """

    name: str
    hooks_root: str
    base_module: str


LAYOUTS: dict[str, Layout] = {
    "0.9": Layout("0.9", "python/extensions", "python.helpers.extension"),
    "1.x": Layout("1.x", "extensions/python", "helpers.extension"),
}


@dataclass(frozen=True, slots=True)
class HookFile:
    """One installed extension file: its hook folder, file name, class and runtime call."""

    hook: str
    filename: str
    class_name: str
    function: str
    purpose: str


#: Installed always. Verification sits in ``tool_execute_after`` (one call per
#: tool result, with the exact tool name and message, so none is missed or
#: counted twice); guidance in ``message_loop_prompts_after``, where extras
#: still reach the model in the same iteration; plan selection also in
#: ``before_main_llm_call`` after the classifiers that govern it.
HOOKS: tuple[HookFile, ...] = (
    HookFile(
        hook="tool_execute_before",
        filename="_50_waygraph_prepare.py",
        class_name="WaygraphPrepare",
        function="prepare_tool_call",
        purpose=(
            "remember each tool call's arguments, and add a status marker to terminal "
            "commands so their real exit code can be verified."
        ),
    ),
    HookFile(
        hook="tool_execute_after",
        filename="_50_waygraph_verify.py",
        class_name="WaygraphVerify",
        function="verify_tool_result",
        purpose="verify each tool result against the current plan node.",
    ),
    HookFile(
        hook="message_loop_prompts_after",
        filename="_80_waygraph_guidance.py",
        class_name="WaygraphGuidance",
        function="inject_guidance",
        purpose=(
            "count each iteration as a turn and put the plan's guidance in the prompt extras."
        ),
    ),
    HookFile(
        hook="before_main_llm_call",
        filename="_15_waygraph_plan_selector.py",
        class_name="WaygraphPlanSelector",
        function="select_plan",
        purpose=(
            "start plans after the belief-state tracker and the org dispatcher (the HTN "
            "plan selector's place) and mirror the run on agent._htn_state."
        ),
    ),
)

_TEMPLATE = '''\
"""waygraph for Agent-Zero: {purpose}

Installed by `waygraph install agent-zero`; `waygraph uninstall agent-zero`
removes it. The work is done by the installed waygraph package
(waygraph.integrations.agent_zero.runtime), which reads usr/waygraph/config.json.
"""

from {base_module} import Extension


class {class_name}(Extension):
    async def execute(self, **kwargs):
        # Nothing here may stop the agent: every failure becomes a warning.
        try:
            from waygraph.integrations.agent_zero import runtime

            runtime.{function}(self, __file__, kwargs)
        except Exception as exc:
            try:
                self.agent.context.log.log(
                    type="warning",
                    content=f"[waygraph] {{type(exc).__name__}}: {{exc}} (is waygraph installed "
                    "in the Python that runs Agent-Zero?); going on without guidance",
                )
            except Exception:
                pass
'''


def render(hook: HookFile, layout: Layout) -> str:
    """The source text of ``hook``'s extension file for ``layout``."""
    return _TEMPLATE.format(
        purpose=hook.purpose,
        base_module=layout.base_module,
        class_name=hook.class_name,
        function=hook.function,
    )


def hook_path(hook: HookFile, layout: Layout) -> str:
    """Where ``hook``'s file goes, relative to the Agent-Zero folder (POSIX separators)."""
    return f"{layout.hooks_root}/{hook.hook}/{hook.filename}"
