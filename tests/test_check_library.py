"""Plan checker on libraries: loading stops at the first error with its location,
warnings never stop it, and the library's own fields are checked."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from tests.check_helpers import BASE, plan
from waygraph import Library, PlanFormatError, load_library
from waygraph.check import check_library

COMPAT = Path(__file__).parent / "fixtures" / "compat"


# ---------------------------------------------------------------- libraries


def test_compat_libraries_have_no_errors():
    for name in ("agent-zero-linear-library-v1.json", "agent-zero-graph-library-v2.json"):
        library = load_library(COMPAT / name)  # validate=True: raises on an error
        assert [p for p in library.check() if p.level == "error"] == []
        assert len(library) == 10


def write_library(
    tmp_path: Path, plans: dict[str, Any], meta: dict[str, Any] | None = None
) -> Path:
    path = tmp_path / "lib.json"
    path.write_text(json.dumps({"_meta": meta or {"version": "2.0"}, "plans": plans}))
    return path


def test_load_library_raises_the_first_error_with_its_location(tmp_path: Path):
    body = copy.deepcopy(BASE)
    del body["id"]
    body["graph"]["nodes"]["work"]["verify"] = {"type": "output_contains"}
    path = write_library(tmp_path, {"deploy": body})
    with pytest.raises(PlanFormatError) as info:
        load_library(path)
    err = info.value
    assert (err.file, err.plan, err.node, err.field) == (
        str(path),
        "deploy",
        "work",
        "verify.value",
    )
    assert "[verify-needs-value]" in str(err) and "'deploy'" in str(err) and "'work'" in str(err)
    problems = load_library(path, validate=False).check()
    assert [(p.code, p.level, p.plan, p.node) for p in problems] == [
        ("verify-needs-value", "error", "deploy", "work")
    ]


def test_warnings_never_stop_loading(tmp_path: Path):
    body = copy.deepcopy(BASE)
    del body["id"]
    body["triggers"] = []
    body["graph"]["nodes"]["orphan"] = {"type": "task"}
    library = load_library(write_library(tmp_path, {"p": body}))
    assert sorted(p.code for p in library.check()) == [
        "no-triggers",
        "task-without-verify",
        "unreachable",
    ]
    assert all(
        p.level == "warning" and p.file == str(tmp_path / "lib.json") for p in library.check()
    )


def test_library_match_mode_is_checked():
    library = Library([plan()], meta={"match_mode": "substr"})
    (problem,) = check_library(library)
    assert (problem.code, problem.level, problem.field) == (
        "bad-match-mode",
        "error",
        "_meta.match_mode",
    )
    assert check_library(Library([plan()], meta={"match_mode": "substring"})) == []


def test_an_example_that_starts_another_plan_by_its_triggers_is_a_warning():
    deploy = plan(id="deploy", triggers=["deploy"], examples=["push the new build to prod"])
    release = plan(
        id="release",
        triggers=["new build"],
        examples=["cut a release", "ship the new build to pypi"],
    )
    problems = check_library(Library([deploy, release]))
    assert [(p.code, p.level, p.plan, p.field) for p in problems] == [
        ("example-starts-other-plan", "warning", "deploy", "examples.0"),
    ]
    assert "'release'" in problems[0].message and "'new build'" in problems[0].message
    # An example its own plan's triggers take, or none take, is what examples are for.
    assert check_library(Library([release])) == []
