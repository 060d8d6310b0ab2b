"""Random and mutated libraries fed to every loader: only WaygraphError may escape.

DOT has its own mutation test in test_dot_hostile.py; this covers the JSON and YAML
loaders, structural mutations of real libraries (a field deleted, a value of
the wrong type, a node type or condition misspelled) and raw text damage,
and loading from a file on disk (the path users take).
"""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from waygraph.errors import WaygraphError
from waygraph.library import load_library, load_text, shipped_library_path

COMPAT = Path(__file__).parent / "fixtures" / "compat"
REAL_LIBRARIES: list[dict[str, Any]] = [
    json.loads((COMPAT / "agent-zero-linear-library-v1.json").read_text()),
    json.loads((COMPAT / "agent-zero-graph-library-v2.json").read_text()),
    *(
        {"plans": {plan["id"]: {k: v for k, v in plan.items() if k != "id"}}}
        if "plans" not in plan
        else plan
        for plan in (
            yaml.safe_load(path.read_text())
            for path in sorted(shipped_library_path().glob("*.yaml"))
        )
    ),
]

# Values that are wrong somewhere in almost every field.
_ODD_VALUES: list[Any] = [
    None,
    "",
    " ",
    0,
    -1,
    10**30,
    1.5,
    float("inf"),
    True,
    [],
    {},
    [None],
    {"type": "magic"},
    "tsk",
    "on_sucess",
    "((",
    "\x00",
    "x" * 300,
]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=12)
    | st.sampled_from(["task", "start", "exit", "on_fail", "graph", "steps", "nodes"]),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "plans",
                    "_meta",
                    "graph",
                    "steps",
                    "nodes",
                    "edges",
                    "start",
                    "type",
                    "from",
                    "to",
                    "verify",
                    "value",
                    "triggers",
                    "name",
                    "condition",
                    "max_retries",
                ]
            )
            | st.text(max_size=6),
            inner,
            max_size=5,
        )
    ),
    max_leaves=30,
)


def _only_waygraph_errors(text: str, fmt: str) -> None:
    try:
        load_text(text, fmt, file=f"fuzz.{fmt}")
    except WaygraphError as exc:
        assert str(exc), "an error must say what is wrong"


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += _paths(item, (*prefix, i))
    return found


def _mutate(data: dict[str, Any], rnd: random.Random) -> dict[str, Any]:
    data = copy.deepcopy(data)
    for _ in range(rnd.randint(1, 3)):
        path = rnd.choice(_paths(data)[1:])
        parent = data
        for step in path[:-1]:
            parent = parent[step]
        last = path[-1]
        choice = rnd.random()
        if choice < 0.35 and isinstance(parent, dict):
            del parent[last]
        elif choice < 0.5 and isinstance(parent, list):
            parent.pop(last)
        else:
            parent[last] = rnd.choice(_ODD_VALUES)
        if not _paths(data)[1:]:
            break
    return data


@settings(max_examples=150, deadline=None)
@given(json_values)
def test_random_json_and_yaml_documents(value):
    _only_waygraph_errors(json.dumps(value), "json")
    _only_waygraph_errors(yaml.safe_dump(value), "yaml")
    _only_waygraph_errors(json.dumps({"plans": {"p": value}}), "json")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(range(len(REAL_LIBRARIES))), st.randoms(use_true_random=False))
def test_mutated_real_libraries(which, rnd: random.Random):
    data = _mutate(REAL_LIBRARIES[which], rnd)
    _only_waygraph_errors(json.dumps(data, allow_nan=True), "json")
    _only_waygraph_errors(yaml.safe_dump(data), "yaml")


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(range(len(REAL_LIBRARIES))),
    st.sampled_from(["json", "yaml"]),
    st.randoms(use_true_random=False),
)
def test_damaged_text(which, fmt, rnd: random.Random):
    data = REAL_LIBRARIES[which]
    text = json.dumps(data, indent=1) if fmt == "json" else yaml.safe_dump(data)
    for _ in range(rnd.randint(1, 4)):
        at = rnd.randrange(len(text) + 1)
        span = rnd.randint(0, 20)
        snippet = rnd.choice(
            ['"', "{", "]", ":", "\n  ", "- ", "&a", "*a", "!!python/object:os.system", "\t"]
        )
        text = text[:at] + (snippet if rnd.random() < 0.6 else "") + text[at + span :]
    _only_waygraph_errors(text, fmt)


def test_mutated_files_on_disk_name_the_file(tmp_path: Path):
    rnd = random.Random(7)
    for i in range(40):
        path = tmp_path / f"lib{i}.json"
        path.write_text(json.dumps(_mutate(REAL_LIBRARIES[1], rnd)))
        try:
            load_library(path)
        except WaygraphError as exc:
            assert path.name in str(exc), exc
