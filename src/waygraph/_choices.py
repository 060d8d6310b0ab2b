"""The choices of a ``human`` node, read from the plan alone.

A human node asks a person a question; the labels of its outgoing edges are
the answers it offers. A label may start with an accelerator, a one-letter
answer that picks it: ``[Y] Yes``, ``Y) Yes`` or ``Y - Yes``. An answer picks
a label when it equals the label, the label's words without the accelerator,
or the accelerator (case and surrounding punctuation ignored). This module
only reads plans: ``waygraph check``, the drawings and ``waygraph library
show`` use it to name, compare and show choices; the engine matches a
person's answer with its own logic (``waygraph.people``), which these forms
follow.

Example:
    >>> from waygraph.model import Graph
    >>> graph = (Graph.builder().human("ask", prompt="Deploy?").exit("yes").exit("no")
    ...          .edge("start", "ask").edge("ask", "yes", label="[Y] Yes")
    ...          .edge("ask", "no", label="No").build())
    >>> [e.label for e in choices(graph, "ask")]
    ['[Y] Yes', 'No']
    >>> answer_keys("[Y] Yes")
    ('[y] yes', 'yes', 'y')
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from waygraph.model import Edge, Graph

__all__ = ["accelerator", "answer_key", "answer_keys", "choice_labels", "choices"]

# "[Y] Yes", "Y) Yes", "Y - Yes": a one-character key, then the words of the choice.
_ACCELERATOR = re.compile(r"\s*(?:\[(\w)\]|(\w)\)|(\w) -)\s*(.*)", re.DOTALL)
# Characters around an answer that do not change it ("Yes." is "yes").
_PUNCTUATION = " \t\r\n.!?。！？\"'`*"


def answer_key(text: str) -> str:
    """How a label and an answer compare: surrounding punctuation dropped, spacing
    collapsed, case folded.

    Example:
        >>> answer_key("  Roll  BACK! ")
        'roll back'
    """
    return " ".join(text.strip(_PUNCTUATION).split()).casefold()


def _parts(label: str) -> tuple[str, str] | None:
    """A label's accelerator and its words, when it has an accelerator and words."""
    found = _ACCELERATOR.fullmatch(label)
    if found is None or not found.group(4).strip():
        return None
    return (found.group(1) or found.group(2) or found.group(3)), found.group(4)


def accelerator(label: str) -> str | None:
    """The accelerator of a label (``[Y] Yes``, ``Y) Yes``, ``Y - Yes``), lowercase, else None.

    Example:
        >>> accelerator("[Y] Yes"), accelerator("N) No"), accelerator("Yes")
        ('y', 'n', None)
    """
    parts = _parts(label)
    return answer_key(parts[0]) if parts else None


def answer_keys(label: str) -> tuple[str, ...]:
    """Every answer that picks ``label`` (as :func:`answer_key`, without repeats): the
    whole label, and for a label with an accelerator also its words and the accelerator.

    Two choices of one node must share none of these, or one answer would pick
    either (``waygraph check`` reports ``duplicate-choice``). A label with none
    (only punctuation) can never be picked.

    Example:
        >>> answer_keys("Retry")
        ('retry',)
    """
    keys = [answer_key(label)]
    parts = _parts(label)
    if parts:
        keys += [answer_key(parts[1]), answer_key(parts[0])]
    return tuple(dict.fromkeys(k for k in keys if k))


def choices(graph: Graph, node_id: str) -> list[Edge]:
    """The edges out of ``node_id`` that are choices: those whose label an answer can give.

    In the order :meth:`~waygraph.model.Graph.out_edges` gives (higher weight
    first, then plan order); see the module example.
    """
    return [e for e in graph.out_edges(node_id) if e.label and answer_keys(e.label)]


def choice_labels(graph: Graph, node_id: str) -> list[str]:
    """The labels of :func:`choices`, as written.

    Example:
        >>> from waygraph.model import Graph
        >>> graph = (Graph.builder().human("ask").exit("done")
        ...          .edge("start", "ask").edge("ask", "done", label="OK").build())
        >>> choice_labels(graph, "ask")
        ['OK']
    """
    return [e.label for e in choices(graph, node_id) if e.label]
