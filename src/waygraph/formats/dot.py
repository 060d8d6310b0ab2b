"""Plans as Graphviz DOT: Attractor pipelines as their specification writes them, plus
waygraph's own attributes.

One ``digraph`` is one plan. Node shapes give node types and Attractor handlers
(``Mdiamond`` start, ``Msquare`` exit, ``box`` task, ``diamond`` decision,
``octagon`` escalate, ``cylinder`` checkpoint, ``hexagon`` human, whose
``prompt`` is its question; ``parallelogram`` tool, ``component`` parallel,
``tripleoctagon`` fan-in, ``house`` manager loop); edges carry a ``condition``
(Attractor's ``outcome=success && context.x=y`` or waygraph's ``on_success``
...), an optional ``when`` condition string, and a ``label`` (out of a human
node: the choice). ``docs/dot.md`` lists every attribute.

The tokenizer and parser are our own (no Graphviz or pydot). Graphviz's
drawing attributes are ignored; an attribute neither waygraph nor the
specification defines is kept as written with a warning; a bad value is a
:class:`~waygraph.errors.PlanFormatError` naming the file, line, plan, node or
edge and attribute (:func:`read_dot` reports them all). Nothing in a file is
evaluated as code.
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
from waygraph.formats._dot_reader import MAX_DOT_CHARS, DotReport, expand_goal, parse_dot, read_dot
from waygraph.formats._dot_writer import plan_to_dot

__all__ = [
    "EDGE_ATTRIBUTES",
    "GRAPH_ATTRIBUTES",
    "MAX_DOT_CHARS",
    "NODE_ATTRIBUTES",
    "SHAPE_OF_TYPE",
    "TYPE_OF_SHAPE",
    "DotReport",
    "expand_goal",
    "parse_dot",
    "plan_to_dot",
    "read_dot",
]
