"""The ``human`` node checks of ``waygraph check``: a question a person can answer.

A human node routes by the labels of its outgoing edges (its choices,
:func:`waygraph.verify_types.people.choices`), so it needs at least one labelled edge,
and no answer may pick two of them: labels must differ (case, spacing and
surrounding punctuation ignored), and so must their accelerators (``[Y] Yes``)
and their words without the accelerator. Run by the plan
checker (:mod:`waygraph.check._plan`) on each human node.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from waygraph.verify_types.people import answer_keys, choice_label, choices

if TYPE_CHECKING:
    from waygraph.check._scan import PlanScan
    from waygraph.model import Edge, Node


def check_human(scan: PlanScan, node: Node) -> None:
    """A human node without choices, and choices one answer could pick twice."""
    nid = node.id
    offered = choices(scan.graph, nid)
    if not offered:
        out = scan.graph.out_edges(nid)
        has = f"its {len(out)} outgoing edge(s) have no label" if out else "it has no edges"
        scan.add(
            "human-without-choices",
            f"the human node asks {node.question!r} but offers no choices ({has}); "
            "give each outgoing edge a `label`, the answer that follows it (for "
            "example `[Y] Yes` and `[N] No`)",
            node=nid,
            field="label",
        )
        return
    # The first choice to claim each answer; a later one that claims it too is the clash.
    taken: dict[str, Edge] = {}
    for edge in offered:
        label = choice_label(edge)
        clashes = [(key, taken[key]) for key in answer_keys(label) if key in taken]
        if clashes:
            key, first = clashes[0]
            scan.add(
                "duplicate-choice",
                f"the answer {key!r} picks both {choice_label(first)!r} "
                f"({first.describe()}) and "
                f"{label!r} of human node {nid!r} (an answer picks a label, its words "
                "without the accelerator, or the accelerator of `[Y] Yes`, `Y) Yes`, "
                "`Y - Yes`, case ignored); give each choice its own label and accelerator",
                node=nid,
                edge=edge,
                field="label",
            )
        for key in answer_keys(label):
            taken.setdefault(key, edge)
