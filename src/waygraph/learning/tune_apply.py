"""Accepted tuning proposals applied to a copy of the library, written as one library file.

:func:`apply_proposals` returns a new :class:`~waygraph.library.Library`;
the one given is not changed. :func:`write_library` writes a library as one
YAML (or, for a ``.json`` name, JSON) library file, whatever it was loaded
from: a library made of a directory of plan files becomes one file holding
every plan, in library order, so the copy can be reviewed (diffed) and
loaded as it is. A semantic threshold proposal sets the library's
``_meta.semantic_threshold``. Lowering a node's retries to 0 also turns its
``on_exhaust`` edges into ``on_fail`` (same route; ``check`` warns about the
first). It refuses to write over any file the library was loaded
from, into the library's own directory (the copy would join the library),
or over an existing file unless told to, and it checks the file it wrote
loads and passes ``waygraph check``.

Example:
    >>> from waygraph.library import load_library
    >>> from waygraph.learning.tune import Proposal
    >>> raise_fix = Proposal(plan="bugfix_workflow", node="fix", kind="raise-max-retries",
    ...                      current=2, proposed=3, reason="fix often succeeds on its last try")
    >>> library = load_library()
    >>> apply_proposals(library, [raise_fix])["bugfix_workflow"].graph.nodes["fix"].max_retries
    3
    >>> library["bugfix_workflow"].graph.nodes["fix"].max_retries
    2
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from waygraph.errors import InputError
from waygraph.formats import format_of
from waygraph.formats.json_library import plan_to_data, to_json
from waygraph.formats.yaml_library import to_yaml
from waygraph.learning.tune import Proposal
from waygraph.library import Library, load_library
from waygraph.model import Plan

__all__ = ["apply_proposals", "write_library"]


def _node(data: dict[str, Any], proposal: Proposal) -> dict[str, Any]:
    nodes = (data.get("graph") or {}).get("nodes") or {}
    node = nodes.get(proposal.node or "")
    if not isinstance(node, dict):
        raise InputError(
            f"plan {proposal.plan!r}: {proposal.kind} names node {proposal.node!r}, "
            "which is not in its graph"
        )
    return node


def _int(proposal: Proposal, low: int) -> int:
    value = proposal.proposed
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise InputError(
            f"plan {proposal.plan!r}: {proposal.kind} needs a whole number of at least "
            f"{low} as its proposed value, not {value!r}"
        )
    return value


def _threshold(proposal: Proposal) -> float:
    """A semantic threshold proposal's value: a similarity from -1 to 1."""
    value = proposal.proposed
    if isinstance(value, bool) or not isinstance(value, int | float) or not -1 <= value <= 1:
        raise InputError(
            f"{proposal.kind} needs a similarity from -1 to 1 as its proposed value, not {value!r}"
        )
    return float(value)


def _exhaust_to_fail(data: dict[str, Any], node_id: str) -> None:
    """A node left with no retries leaves by ``on_fail``: its ``on_exhaust`` edges become that.

    The engine takes either on the first failure then, and ``waygraph check``
    warns about ``on_exhaust`` without retries. A node that has an
    ``on_fail`` edge already keeps its edges as they are (the engine prefers
    ``on_exhaust``, so renaming would change the route).
    """
    edges = [e for e in data["graph"]["edges"] if e.get("from") == node_id]
    if any(e.get("condition") == "on_fail" for e in edges):
        return
    for edge in edges:
        if edge.get("condition") == "on_exhaust":
            edge["condition"] = "on_fail"


def _escalation(data: dict[str, Any], proposal: Proposal) -> None:
    node = _node(data, proposal)
    value = proposal.proposed
    edge = value.get("edge") if isinstance(value, dict) else None
    target = value.get("node") if isinstance(value, dict) else None
    if not isinstance(edge, dict) or not isinstance(target, dict) or "id" not in target:
        raise InputError(
            f"plan {proposal.plan!r} node {proposal.node!r}: add-escalation-edge needs "
            "an 'edge' and a 'node' with an 'id' as its proposed value"
        )
    nodes = data["graph"]["nodes"]
    target_id = str(target["id"])
    if target_id in nodes:
        raise InputError(f"plan {proposal.plan!r}: node {target_id!r} exists already")
    nodes[target_id] = {k: v for k, v in target.items() if k != "id"}
    data["graph"]["edges"].append(dict(edge))
    if "max_retries" in value:
        node["max_retries"] = value["max_retries"]


def _applied(plan: Plan, proposal: Proposal) -> Plan:
    data: dict[str, Any] = plan_to_data(plan)
    kind = proposal.kind
    if kind in ("raise-trigger-threshold", "lower-trigger-threshold"):
        data["trigger_threshold"] = _int(proposal, 1)
    elif kind == "add-trigger":
        proposed = proposal.proposed if isinstance(proposal.proposed, list) else []
        triggers = list(data.get("triggers") or [])
        triggers += [str(t) for t in proposed if str(t) not in triggers]
        data["triggers"] = triggers
    elif plan.linear:
        raise InputError(f"plan {plan.id!r} is written as steps: {kind} needs a graph plan")
    elif kind in ("raise-max-retries", "lower-max-retries"):
        _node(data, proposal)["max_retries"] = _int(proposal, 0)
        if proposal.proposed == 0:
            _exhaust_to_fail(data, str(proposal.node))
    else:
        _escalation(data, proposal)
    try:
        return Plan.model_validate({"id": plan.id, **data})
    except ValidationError as exc:
        raise InputError(f"plan {plan.id!r}: {proposal.kind} makes it invalid: {exc}") from None


def apply_proposals(library: Library, proposals: Sequence[Proposal]) -> Library:
    """A copy of ``library`` with ``proposals`` applied in order (``library`` stays as it is).

    Raises :class:`~waygraph.errors.InputError` naming the plan (and node)
    when a proposal does not fit the library, or when the result fails
    ``waygraph check``.
    """
    plans = {plan.id: plan for plan in library}
    meta = dict(library.meta)
    for proposal in proposals:
        if proposal.kind.endswith("-semantic-threshold"):
            meta["semantic_threshold"] = _threshold(proposal)
            continue
        plan = plans.get(proposal.plan)
        if plan is None:
            raise InputError(f"{proposal.kind}: no plan {proposal.plan!r} in the library")
        plans[plan.id] = _applied(plan, proposal)
    tuned = Library(list(plans.values()), meta=meta)
    errors = [p for p in tuned.check() if p.level == "error"]
    if errors:
        raise InputError(f"the tuned library fails waygraph check: {errors[0]}")
    return tuned


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and a.samefile(b))
    except OSError:
        return False


def write_library(
    library: Library,
    target: str | os.PathLike[str],
    *,
    source: Library | None = None,
    force: bool = False,
) -> Path:
    """Write ``library`` to ``target`` as one library file; return its path.

    ``source``: the library it was tuned from (default ``library``); its
    files and folder are never written. Raises
    :class:`~waygraph.errors.InputError` for a target that is one of them, an
    existing file without ``force``, or a name that is not ``.yaml``,
    ``.yml`` or ``.json``.
    """
    path = Path(target)
    origin = source if source is not None else library
    fmt = format_of(path)
    if fmt not in ("yaml", "json"):
        raise InputError(f"--write {path}: name a .yaml, .yml or .json file")
    if any(_same(path, f) for f in origin.files) or (
        origin.path is not None and _same(path, origin.path)
    ):
        raise InputError(f"--write {path} is the library itself; write the tuned copy elsewhere")
    if origin.path is not None and origin.path.is_dir():
        inside = path.resolve().parent
        root = origin.path.resolve()
        if inside == root or root in inside.parents:
            raise InputError(
                f"--write {path} is inside the library folder {origin.path}; "
                "the copy would join the library"
            )
    if path.is_dir():
        raise InputError(f"--write {path} is a folder; name a file")
    if path.exists() and not force:
        raise InputError(f"--write {path} exists; --force overwrites it")
    data = library.to_data()
    path.write_text(to_json(data) if fmt == "json" else to_yaml(data), encoding="utf-8")
    # The copy must load and pass check as written, or it is no use to review.
    load_library(path)
    return path
