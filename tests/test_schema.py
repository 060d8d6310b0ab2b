"""The JSON Schema of library files: real files validate, broken ones do not.

The ``jsonschema`` package is not a waygraph dependency, so files are validated
by ``_validate`` below: a small validator for exactly the keywords the schema
uses, which fails on any other keyword rather than ignoring it. When
``jsonschema`` is installed, the same cases also run through it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings

from tests.strategies import graph_plans
from waygraph.formats.json_library import library_to_data, plan_to_data
from waygraph.formats.schema import SCHEMA_DIALECT, SCHEMA_ID, library_schema
from waygraph.formats.yaml_library import parse_yaml
from waygraph.library import load_library, shipped_library_path
from waygraph.model import BUILTIN_VERIFY_TYPES, CONDITIONS, NODE_TYPES

COMPAT = sorted((Path(__file__).parent / "fixtures" / "compat").glob("*.json"))
SCHEMA = library_schema()

# ---------------------------------------------------------------- validator

_TYPES = {
    "object": dict,
    "array": list,
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "null": type(None),
}
_ANNOTATIONS = {"$schema", "$id", "title", "description", "default", "$defs"}


def _is_type(value: Any, name: str) -> bool:
    if isinstance(value, bool) and name in ("integer", "number"):
        return False
    if name == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _TYPES[name])


def _validate(value: Any, schema: dict[str, Any], path: str = "$") -> list[str]:
    """Errors of ``value`` against ``schema`` (the keywords library_schema uses)."""
    errors: list[str] = []
    for key, arg in schema.items():
        if key in _ANNOTATIONS:
            continue
        if key == "$ref":
            name = re.fullmatch(r"#/\$defs/(\w+)", arg)
            assert name, f"unsupported $ref {arg}"
            errors += _validate(value, SCHEMA["$defs"][name.group(1)], path)
        elif key == "type":
            names = arg if isinstance(arg, list) else [arg]
            if not any(_is_type(value, n) for n in names):
                errors.append(f"{path}: expected {arg}, got {type(value).__name__}")
        elif key == "enum":
            if value not in arg:
                errors.append(f"{path}: {value!r} is not one of {arg}")
        elif key == "properties":
            if isinstance(value, dict):
                for name, sub in arg.items():
                    if name in value:
                        errors += _validate(value[name], sub, f"{path}.{name}")
        elif key == "additionalProperties":
            if isinstance(value, dict):
                known = schema.get("properties", {})
                for name, item in value.items():
                    if name in known:
                        continue
                    if arg is False:
                        errors.append(f"{path}: unknown property {name!r}")
                    elif isinstance(arg, dict):
                        errors += _validate(item, arg, f"{path}.{name}")
        elif key == "propertyNames":
            if isinstance(value, dict):
                for name in value:
                    errors += _validate(name, arg, f"{path} key {name!r}")
        elif key == "required":
            if isinstance(value, dict):
                errors += [f"{path}: missing {name!r}" for name in arg if name not in value]
        elif key == "items":
            if isinstance(value, list):
                for i, item in enumerate(value):
                    errors += _validate(item, arg, f"{path}[{i}]")
        elif key == "minItems":
            if isinstance(value, list) and len(value) < arg:
                errors.append(f"{path}: fewer than {arg} items")
        elif key == "minLength":
            if isinstance(value, str) and len(value) < arg:
                errors.append(f"{path}: shorter than {arg}")
        elif key == "maxLength":
            if isinstance(value, str) and len(value) > arg:
                errors.append(f"{path}: longer than {arg}")
        elif key == "minimum":
            if _is_type(value, "number") and value < arg:
                errors.append(f"{path}: below {arg}")
        elif key in ("anyOf", "oneOf"):
            passing = [not _validate(value, sub, path) for sub in arg]
            wanted = sum(passing) == 1 if key == "oneOf" else any(passing)
            if not wanted:
                errors.append(f"{path}: matches {sum(passing)} of the {key} schemas")
        else:
            raise AssertionError(f"the test validator does not know the keyword {key!r}")
    return errors


def _jsonschema_errors(data: Any) -> list[str]:
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft202012Validator(SCHEMA)
    return [e.message for e in validator.iter_errors(data)]


def _shipped_files() -> list[Path]:
    root = shipped_library_path()
    return sorted(p for p in root.rglob("*") if p.suffix in (".json", ".yaml", ".yml"))


def _data(path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    return json.loads(text) if path.suffix == ".json" else parse_yaml(text)


def _compat_with_bad_node_type() -> dict[str, Any]:
    data = json.loads(COMPAT[0].read_text())
    plan = next(v for v in data["plans"].values() if "graph" in v)
    node_id = next(iter(plan["graph"]["nodes"]))
    plan["graph"]["nodes"][node_id]["type"] = "tsk"
    return data


def _graph_file(**plan_fields: Any) -> dict[str, Any]:
    graph = {"start": "s", "nodes": {"s": {"type": "start"}, "d": {"type": "exit"}}, "edges": []}
    return {"plans": {"p": {"graph": graph, **plan_fields}}}


# ---------------------------------------------------------------- the schema itself


def test_schema_declares_dialect_id_title_and_description():
    assert SCHEMA["$schema"] == SCHEMA_DIALECT == "https://json-schema.org/draft/2020-12/schema"
    assert SCHEMA["$id"] == SCHEMA_ID
    assert SCHEMA["title"] and SCHEMA["description"]
    assert SCHEMA["oneOf"] == [{"$ref": "#/$defs/Library"}, {"$ref": "#/$defs/SinglePlanFile"}]
    assert json.loads(json.dumps(SCHEMA)) == SCHEMA


def test_schema_id_is_a_stable_versioned_url():
    """Editors' settings and files name this id; changing it breaks them (docs/cli.md)."""
    assert SCHEMA_ID == "https://waygraph.dev/schema/library/v2.json"
    assert re.fullmatch(r"https://waygraph\.dev/schema/library/v\d+\.json", SCHEMA["$id"])


def test_schema_command_writes_the_file_editors_are_pointed_at(tmp_path: Path):
    from typer.testing import CliRunner

    from waygraph.cli import app

    out = tmp_path / "editor" / "waygraph-library.schema.json"
    result = CliRunner().invoke(app, ["schema", "--output", str(out)])
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text()) == SCHEMA
    assert json.loads(out.read_text())["$id"] == SCHEMA_ID


def test_schema_enums_follow_the_model():
    defs = SCHEMA["$defs"]
    assert defs["Node"]["properties"]["type"]["enum"] == list(NODE_TYPES)
    assert defs["Edge"]["properties"]["condition"]["enum"] == list(CONDITIONS)
    assert defs["Verify"]["properties"]["type"]["enum"] == list(BUILTIN_VERIFY_TYPES)
    assert defs["Step"]["properties"]["on_fail"]["enum"] == ["warn", "block", "skip", "abort"]
    # Edges are written with "from" (the model's alias), never "from_".
    assert "from" in defs["Edge"]["required"] and "from_" not in defs["Edge"]["properties"]


def test_schema_is_valid_draft_2020_12_when_jsonschema_is_installed():
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


# ---------------------------------------------------------------- files that must pass


@pytest.mark.parametrize("path", COMPAT, ids=lambda p: p.name)
def test_compat_libraries_validate(path: Path):
    assert _validate(_data(path), SCHEMA) == []


def test_shipped_library_files_validate():
    files = _shipped_files()
    assert files
    for path in files:
        assert _validate(_data(path), SCHEMA) == [], path.name


def test_libraries_written_by_waygraph_validate():
    for path in COMPAT:
        library = load_library(path, validate=False)
        assert _validate(library.to_data(), SCHEMA) == []


def test_single_plan_file_validates():
    plan = _graph_file()["plans"]["p"]
    assert _validate({"id": "p", **plan}, SCHEMA) == []
    assert _validate({"id": "p", "steps": [{"name": "Do it"}]}, SCHEMA) == []


def test_single_plan_file_with_schema_key_loads(tmp_path: Path):
    """A "$schema" key, put there for editors, must not break loading (it once did)."""
    path = tmp_path / "one.json"
    path.write_text(json.dumps({"$schema": SCHEMA_ID, "id": "p", "steps": [{"name": "Do it"}]}))
    assert [plan.id for plan in load_library(path)] == ["p"]


@settings(max_examples=40, deadline=None)
@given(graph_plans())
def test_any_model_plan_written_as_data_validates(plan):
    assert _validate(library_to_data([plan]), SCHEMA) == []
    assert _validate({"id": plan.id, **plan_to_data(plan)}, SCHEMA) == []


# ---------------------------------------------------------------- files that must fail


def test_unknown_node_type_fails_at_its_node():
    data = _compat_with_bad_node_type()
    assert _validate(data, SCHEMA) == ["$: matches 0 of the oneOf schemas"]
    # Against the library shape alone, the error points at the node's type.
    errors = _validate(data, SCHEMA["$defs"]["Library"])
    assert len(errors) == 1 and errors[0].endswith(
        ".type: 'tsk' is not one of " + str(list(NODE_TYPES))
    ), errors
    assert errors[0].startswith("$.plans.")


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (_graph_file(steps=[{"name": "A"}]), "both graph and steps"),
        ({"plans": {"p": {"name": "no workflow"}}}, "neither graph nor steps"),
        (_graph_file(trigers=["typo"]), "unknown plan field"),
        ({"plans": {}, "extra": 1}, "unknown top-level key"),
        ({"plans": {"p": {"steps": [{"name": "A", "verify": {"type": "magic"}}]}}}, "verify"),
        ({"plans": {"p": {"steps": [{"name": "A", "on_fail": "explode"}]}}}, "on_fail"),
        ({"plans": {"p": {"steps": []}}}, "empty steps"),
        ({"id": "p"}, "single plan without a workflow"),
    ],
)
def test_broken_files_fail(data: dict[str, Any], reason: str):
    assert _validate(data, SCHEMA), reason


def test_jsonschema_agrees_when_installed():
    for path in COMPAT + _shipped_files():
        assert _jsonschema_errors(_data(path)) == [], path.name
    assert _jsonschema_errors(_compat_with_bad_node_type())
