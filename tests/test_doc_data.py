"""The JSON, YAML and DOT blocks of the README and docs/ read as waygraph reads them (issue 37).

Every block parses. A whole plan or library loads and ``check`` finds no
error in it; a node, a mapping of nodes or an edge shown alone loads as part
of a plan (so a renamed field shows up here); a scripted-server reply list
loads as ``python -m waygraph.testing.chat_server --script`` would read it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_args

import pytest
import yaml

from tests._doc_blocks import Block, all_blocks
from waygraph.errors import WaygraphError
from waygraph.formats.dot import read_dot
from waygraph.library import Library, load_text
from waygraph.model import NodeType
from waygraph.testing.serve import load_script

_NODE_TYPES = set(get_args(NodeType))
_REPLY_KEYS = {"content", "tool_calls", "status", "error", "usage"}


def _parse(block: Block) -> Any:
    if block.lang == "json":
        return json.loads(block.body)
    return yaml.safe_load(block.body)


def _is_plan(data: Any) -> bool:
    if not isinstance(data, dict):
        return False
    return bool({"graph", "_meta"} & data.keys()) or isinstance(data.get("plans"), dict)


def _is_node(data: Any) -> bool:
    return isinstance(data, dict) and data.get("type") in _NODE_TYPES


def _is_script(data: Any) -> bool:
    if isinstance(data, dict):
        return "replies" in data
    return isinstance(data, list) and all(
        isinstance(r, str) or (isinstance(r, dict) and set(r) <= _REPLY_KEYS) for r in data
    )


def _is_fragment(data: Any) -> bool:
    """A node, an edge, or a mapping of node ids to nodes."""
    if not isinstance(data, dict) or not data:
        return False
    return _is_node(data) or {"from", "to"} <= data.keys() or all(map(_is_node, data.values()))


def _as_plan(data: dict[str, Any]) -> dict[str, Any]:
    """A fragment inside the smallest plan around it, to be read by the plan reader."""
    if "from" in data and "to" in data:
        ends = {data["from"]: {"type": "task", "action": "a"}, data["to"]: {"type": "exit"}}
        nodes, edges = ends, [data]
    elif _is_node(data):
        nodes, edges = {"n": data}, []
    else:
        nodes, edges = data, []
    return {"id": "doc", "graph": {"start": next(iter(nodes)), "nodes": nodes, "edges": edges}}


def _check(block: Block, tmp_path: Path) -> None:
    if block.lang == "dot":
        report = read_dot(block.body, file=block.where)
        assert list(report.errors) == [], [str(e) for e in report.errors]
        return
    data = _parse(block)
    fmt = "json" if block.lang == "json" else "yaml"
    if _is_plan(data):
        meta, plans = load_text(block.body, fmt, file=block.where)
        problems = [p for p in Library(plans, meta=meta).check() if p.severity == "error"]
        assert problems == [], [str(p) for p in problems]
    elif _is_script(data):
        script = tmp_path / "script.yaml"
        script.write_text(block.body, encoding="utf-8")
        load_script(script)
    elif _is_fragment(data):
        load_text(json.dumps(_as_plan(data)), "json", file=block.where)


@pytest.mark.parametrize("block", all_blocks("json", "yaml", "dot"), ids=lambda b: b.where)
def test_every_data_block_reads(block: Block, tmp_path: Path):
    if block.marker == "illustrative" and block.lang == "dot":
        pytest.skip(f"{block.where}: illustrative ({block.arg})")
    if block.marker == "illustrative":
        _parse(block)  # still well formed
        return
    try:
        _check(block, tmp_path)
    except (WaygraphError, ValueError, yaml.YAMLError) as exc:
        pytest.fail(f"{block.where}: {exc}")
