"""A session plan is a model.Plan that grows: one task node per declared step."""

from __future__ import annotations

from waygraph import check
from waygraph.draw import node_status
from waygraph.sessions import SessionPlanner, session_view, to_plan


def test_the_plan_grows_with_each_declared_step_and_is_coloured_by_the_file(tmp_path):
    planner = SessionPlanner(tmp_path, max_iterations=20)
    planner.on_user_message("s1", "Migrate the blog to Hugo")
    planner.after_model_reply("s1", "[Step] Export posts\n[Step] Convert\nExporting.", 1)
    data = planner.plan("s1")
    assert data is not None
    plan = to_plan(data)
    tasks = [n for n, node in plan.graph.nodes.items() if node.type == "task"]
    assert tasks == ["step_1", "step_2"]
    assert plan.graph.nodes["step_2"].name == "Convert"
    assert not [p for p in check.check_plan(plan) if p.level == "error"]
    planner.after_model_reply("s1", "Exported them. [done]\n[Step] Check the links", 1)
    data = planner.plan("s1")
    assert data is not None
    grown = to_plan(data)
    state = session_view(data)
    statuses = {n: node_status(grown.graph.nodes[n], state) for n in ("step_1", "step_2", "step_3")}
    assert statuses == {"step_1": "done", "step_2": "current", "step_3": "pending"}
    assert state["path"] == ["start", "step_1", "step_2"]


def test_a_plan_without_steps_is_start_to_done():
    plan = to_plan({"id": "p", "goal": "g", "status": "running", "steps": []})
    assert [(e.from_, e.to) for e in plan.graph.edges] == [("start", "done")]
