"""Adapters that put waygraph inside agents people already run.

- :mod:`waygraph.integrations.agent_zero`: ``waygraph install agent-zero PATH``
  copies extension files into an Agent-Zero tree (0.9.x or 1.x layout) that
  match plans, inject guidance and verify every tool result.
- :mod:`waygraph.integrations.mcp_server`: ``waygraph mcp`` serves plans over
  the Model Context Protocol (stdio) to any MCP client.
- :mod:`waygraph.integrations.openai_agents`: ``waygraph_hooks(navigator,
  session=...)`` for ``Runner.run(..., hooks=...)`` of the OpenAI Agents SDK.
- :mod:`waygraph.integrations.langgraph`: ``LangGraphHooks`` for LangGraph's
  prebuilt ReAct agent or a hand-built ``StateGraph``.
- :mod:`waygraph.integrations.pydantic_ai`: ``waygraph_capability(...)``, a
  Pydantic AI capability.
- :mod:`waygraph.hooks` (outside this package, as it is the one any loop
  imports): three calls for any other agent loop.

See ``docs/integrations.md``.
"""
