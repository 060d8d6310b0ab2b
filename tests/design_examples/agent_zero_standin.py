"""A small Agent-Zero agent with waygraph installed, for the documents' Agent-Zero checks.

Documents 000 and 003 state some results in Agent-Zero's terms: a line in the
agent's log, ``agent._htn_state`` read by the supervisor, ``agent._org_pace_level``
set on escalation, the org dispatcher's allow-list in
``agent.get_data("_org_htn_allowed_plans")``, the belief-state tracker's
domain in ``agent._bst_store``. :class:`AgentZero` calls the functions the
installed extension files call (``waygraph.integrations.agent_zero.runtime``)
with plain stand-ins for Agent-Zero's objects, in the order of its message
loop; the run itself is a Navigator's, in a SQLite store under a tmp folder.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from pathlib import Path
from typing import Any

from waygraph.integrations.agent_zero import runtime
from waygraph.integrations.agent_zero.config import CONFIG_PATH, AgentZeroConfig

#: Where document 000's selector put its text; waygraph's ``--compat`` key.
EXTRAS_KEY = "htn_active_plan"


class Log:
    """``agent.context.log``: keeps every (type, content) line."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []

    def log(self, type: str = "info", content: str = "", **kwargs: Any) -> None:
        self.lines.append((type, content))

    def text(self) -> str:
        return "\n".join(content for _, content in self.lines)


class Context:
    def __init__(self, context_id: str) -> None:
        self.id = context_id
        self.log = Log()


class Agent:
    """The attributes the documents name; ``get_data`` as Agent-Zero's."""

    def __init__(self, context_id: str) -> None:
        self.context = Context(context_id)
        self.number = 0
        self.data: dict[str, Any] = {}
        self.loop_data: LoopData | None = None

    def get_data(self, key: str) -> Any:
        return self.data.get(key)


class Message:
    def __init__(self, content: Any) -> None:
        self.content = content


class LoopData:
    def __init__(self, user_message: Message) -> None:
        self.user_message = user_message
        self.history_output: list[dict[str, Any]] = []
        self.extras_temporary: OrderedDict[str, Any] = OrderedDict()


class Response:
    def __init__(self, message: str) -> None:
        self.message = message


class Extension:
    def __init__(self, agent: Agent) -> None:
        self.agent = agent


class AgentZero:
    """One agent of one chat; ``library`` is a plan library file, loaded as it is."""

    def __init__(self, root: Path, library: Path, context_id: str = "chat") -> None:
        config = AgentZeroConfig(
            layout="1.x",
            library=str(library),
            store=f"sqlite:///{root / 'waygraph.db'}",
            workspace=str(root),
            compat=True,
            extras_key=EXTRAS_KEY,
        )
        (root / CONFIG_PATH).parent.mkdir(parents=True, exist_ok=True)
        (root / CONFIG_PATH).write_text(config.to_json(), encoding="utf-8")
        hooks = root / "extensions" / "python"
        self.selector = str(hooks / "before_main_llm_call" / "_15_waygraph_plan_selector.py")
        self.guidance = str(hooks / "message_loop_prompts_after" / "_80_waygraph_guidance.py")
        self.verifier = str(hooks / "tool_execute_after" / "_50_waygraph_verify.py")
        self.agent = Agent(context_id)
        self.extension = Extension(self.agent)

    @property
    def log(self) -> str:
        return self.agent.context.log.text()

    def user(self, text: str, *, domain: str | None = None) -> None:
        """A user message; ``domain`` is what the belief-state tracker classified it as."""
        if domain is not None:
            self.agent._bst_store = {"__bst_belief_state__": {"domain": domain}}  # type: ignore[attr-defined]
        self.agent.loop_data = LoopData(Message({"user_message": text, "attachments": []}))

    def iteration(self) -> str | None:
        """One message-loop iteration up to the model call: the plan text the model sees."""
        loop_data = self.agent.loop_data
        assert loop_data is not None, "call user() first"
        runtime.inject_guidance(self.extension, self.guidance, {"loop_data": loop_data})
        runtime.select_plan(self.extension, self.selector, {"loop_data": loop_data})
        text = loop_data.extras_temporary.pop(EXTRAS_KEY, None)
        return text

    def tool(self, output: str, name: str = "code_execution_tool") -> None:
        """A tool result, as ``tool_execute_after`` sees it."""
        runtime.verify_tool_result(
            self.extension, self.verifier, {"response": Response(output), "tool_name": name}
        )
        loop_data = self.agent.loop_data
        if loop_data is not None:
            entry = {"tool_name": name, "tool_result": output}
            loop_data.history_output.append({"ai": False, "content": json.dumps(entry)})

    def htn_state(self) -> dict[str, Any] | None:
        return getattr(self.agent, "_htn_state", None)

    def pace_level(self) -> str | None:
        return getattr(self.agent, "_org_pace_level", None)
