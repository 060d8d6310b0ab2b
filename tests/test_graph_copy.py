"""A graph copied with new edges or nodes answers from its own, not its original's."""

from __future__ import annotations

from waygraph.model import Edge, Graph


def test_a_copy_with_new_edges_does_not_keep_the_old_adjacency():
    graph = Graph.builder().task("a").exit("done").chain("start", "a", "done").build()
    assert [e.to for e in graph.out_edges("a")] == ["done"]  # builds the cached index
    back = Edge.model_validate({"from": "a", "to": "start"})
    copy = graph.model_copy(update={"edges": (*graph.edges, back)})
    assert [e.to for e in copy.out_edges("a")] == ["done", "start"]
    assert [e.from_ for e in copy.in_edges("start")] == ["a"]
    assert [e.to for e in graph.out_edges("a")] == ["done"]  # the original is unchanged
