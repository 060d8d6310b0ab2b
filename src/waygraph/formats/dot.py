"""Plans as Graphviz DOT: the Attractor pipeline subset, plus waygraph's own attributes.

One ``digraph`` is one plan. Node shapes give node types (``Mdiamond`` start,
``Msquare`` exit, ``box`` task, ``diamond`` decision, ``octagon`` escalate,
``cylinder`` checkpoint, ``hexagon`` human, whose ``prompt`` is its question);
edges carry a ``condition`` (Attractor's ``outcome=success`` or waygraph's
``on_success`` ...), an optional ``when`` condition string, and a ``label``
(out of a human node: the choice). ``docs/dot.md`` lists every attribute.

The tokenizer and parser are our own (no Graphviz or pydot), accept a strict
subset, and refuse everything else with a :class:`~waygraph.errors.PlanFormatError`
naming the file, line, plan, node or edge and attribute: nothing in a file is
silently dropped, and nothing in it is evaluated as code.
:func:`plan_to_dot` writes every field, so ``parse_dot(plan_to_dot(p)) == p``.

The work is split by job, behind this module's public names:
``_dot_syntax`` (tokens and quoting, shared by the reader and the writer),
``_dot_statements`` (DOT's grammar), ``_dot_attributes`` (the names a file may
use), ``_dot_conditions`` (Attractor's ``condition`` clauses), ``_dot_reader``
and ``_dot_writer``.

Example:
    >>> plan = parse_dot('''
    ... digraph deploy {
    ...     goal="Ship the build"
    ...     start [shape=Mdiamond]
    ...     build [label="Build", prompt="Run make", max_retries=2]
    ...     done  [shape=Msquare]
    ...     start -> build
    ...     build -> done [condition="outcome=success"]
    ... }''')
    >>> plan.id, plan.goal, plan.graph.nodes["build"].action
    ('deploy', 'Ship the build', 'Run make')
    >>> parse_dot(plan_to_dot(plan)) == plan
    True
"""

from __future__ import annotations

from waygraph.formats._dot_attributes import (
    EDGE_ATTRIBUTES,
    GRAPH_ATTRIBUTES,
    NODE_ATTRIBUTES,
    SHAPE_OF_TYPE,
    TYPE_OF_SHAPE,
)
from waygraph.formats._dot_reader import MAX_DOT_CHARS, parse_dot
from waygraph.formats._dot_writer import plan_to_dot

__all__ = [
    "EDGE_ATTRIBUTES",
    "GRAPH_ATTRIBUTES",
    "MAX_DOT_CHARS",
    "NODE_ATTRIBUTES",
    "SHAPE_OF_TYPE",
    "TYPE_OF_SHAPE",
    "parse_dot",
    "plan_to_dot",
]
