"""Issue 13, defects 9 and 10: ids are text, and plan files have a size budget.

A plan or node id with NUL, a control character or a lone surrogate is
refused at load with the file and the id named (it used to load, pass
``check`` and then never activate). A plan file over its format's budget is
refused before it is read, so refusing costs milliseconds, not the 32 s and
854 MB a 31 MB YAML file took.
"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from waygraph.errors import PlanFormatError, PlanSyntaxError
from waygraph.formats.json_library import FILE_BUDGETS
from waygraph.ids import MAX_ID_CHARS
from waygraph.library import load_file


def plan_file(tmp_path: Path, plan_id: str, node_id: str = "build") -> Path:
    data = {
        "plans": {
            plan_id: {
                "triggers": ["go"],
                "trigger_threshold": 1,
                "graph": {
                    "start": "start",
                    "nodes": {
                        "start": {"type": "start"},
                        node_id: {"type": "task", "verify": {"type": "any_output"}},
                        "done": {"type": "exit"},
                    },
                    "edges": [
                        {"from": "start", "to": node_id},
                        {"from": node_id, "to": "done", "condition": "on_success"},
                    ],
                },
            }
        }
    }
    path = tmp_path / "plans.json"
    # ensure_ascii keeps a lone surrogate writable as an escape.
    path.write_text(json.dumps(data, ensure_ascii=True))
    return path


@pytest.mark.parametrize(
    ("plan_id", "node_id", "words"),
    [
        ("bad\x00id", "build", "control characters"),
        ("bad\udc80id", "build", "lone surrogate"),
        ("tab\tid", "build", "control characters"),
        ("x" * (MAX_ID_CHARS + 1), "build", "the limit is"),
        ("fine", "no\x00de", "control characters"),
        ("fine", "lone\ud800", "lone surrogate"),
    ],
)
def test_bad_ids_are_refused_at_load_with_the_file_named(
    tmp_path: Path, plan_id: str, node_id: str, words: str
):
    path = plan_file(tmp_path, plan_id, node_id)
    with pytest.raises(PlanFormatError, match=words) as info:
        load_file(path)
    assert str(path) in str(info.value)


def test_good_unicode_ids_load(tmp_path: Path):
    _, plans = load_file(plan_file(tmp_path, "déploiement-服务", "étape_1"))
    assert plans[0].id == "déploiement-服务"


@pytest.mark.parametrize(("suffix", "fmt"), [(".yaml", "yaml"), (".json", "json"), (".dot", "dot")])
def test_a_file_over_its_budget_is_refused_before_it_is_read(tmp_path: Path, suffix: str, fmt: str):
    path = tmp_path / f"huge{suffix}"
    with path.open("wb") as out:
        out.truncate(31 * 1024 * 1024)  # 31 MB, sparse: cheap to make
    tracemalloc.start()
    with pytest.raises(PlanSyntaxError, match="split the library"):
        load_file(path)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 1024 * 1024  # refused by its size alone: nothing was read
    assert FILE_BUDGETS[fmt] < 31 * 1024 * 1024


def test_a_long_dot_chain_over_the_budget_is_refused(tmp_path: Path):
    nodes = 50_000
    lines = ["digraph chain {", "start [shape=Mdiamond];", "start -> n0;"]
    lines += [f"n{i} -> n{i + 1} [label=on_success];" for i in range(nodes)]
    path = tmp_path / "chain.dot"
    path.write_text("\n".join([*lines, "}"]))
    assert path.stat().st_size > FILE_BUDGETS["dot"]
    tracemalloc.start()
    with pytest.raises(PlanSyntaxError, match="split the library"):
        load_file(path)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # Refused by its size: the 50,000 nodes were never parsed into a graph.
    assert peak < path.stat().st_size
