"""One exception tree: every error waygraph raises on purpose is defined in errors.py.

Each derives from WaygraphError and from the built-in it means, and the modules
that raise it export the very same class, so ``except`` clauses written against
either name keep working.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import waygraph
from waygraph import errors

SRC = Path(waygraph.__file__).parent

#: error -> the built-in it also means (None: WaygraphError alone).
MEANS: dict[str, type[BaseException] | tuple[type[BaseException], ...] | None] = {
    "PlanFormatError": ValueError,
    "PlanSyntaxError": ValueError,
    "StateMachineError": ValueError,
    "CorruptPlan": ValueError,
    "PlanNotFoundError": KeyError,
    "PlanContextNotFoundError": KeyError,
    "LibraryError": ValueError,
    "StoreError": RuntimeError,
    "Conflict": RuntimeError,
    "InputError": (ValueError, TypeError),
    "NotWaitingError": RuntimeError,
    "RefusedFile": OSError,
    "IntegrationVersionError": ValueError,
    "ConfigError": ValueError,
    "GraphvizNotFoundError": ValueError,
    "MissingExtra": (ValueError, ImportError),
    "GraphvizError": RuntimeError,
    "PatternTimeout": TimeoutError,
    "CommandFailed": RuntimeError,
    "EventFormatError": ValueError,
    "PayloadTooLargeError": ValueError,
    "PlanStateError": RuntimeError,
    "ReadOnlyFieldError": AttributeError,
    "EventTimeoutError": TimeoutError,
    "BusClosedError": RuntimeError,
    "ApiError": None,
    "PlanningError": None,
    "InvalidPlanError": ValueError,
    "PlanParseError": ValueError,
    "PlanRejectedError": None,
    "LLMError": RuntimeError,
    "ToolDefinitionError": TypeError,
    "AgentBusyError": RuntimeError,
    "RunNotFoundError": KeyError,
    "PermanentError": None,
    "TransientError": None,
    "PlannerSetupError": ValueError,
    "PipelineValidationError": ValueError,
    "RunHeldError": RuntimeError,
}


def test_every_exported_error_is_listed_here():
    exported = {n for n in errors.__all__ if n != "WaygraphError"}
    assert exported == set(MEANS)


@pytest.mark.parametrize("name", sorted(MEANS))
def test_each_error_is_a_waygraph_error_and_the_builtin_it_means(name: str):
    cls = getattr(errors, name)
    assert issubclass(cls, errors.WaygraphError)
    builtin = MEANS[name]
    if builtin is not None:
        assert issubclass(cls, builtin)


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("waygraph.planning", "InvalidPlanError"),
        ("waygraph.planning", "PlanningError"),
        ("waygraph.planning", "LLMError"),
        ("waygraph.draw", "GraphvizError"),
        ("waygraph.draw", "GraphvizNotFoundError"),
        ("waygraph.sandbox.patterns", "PatternTimeout"),
        ("waygraph.sessions._files", "CorruptPlan"),
        ("waygraph.cli.plan_tools", "CommandFailed"),
        ("waygraph.server.errors", "ApiError"),
    ],
)
def test_the_modules_that_raise_them_export_the_same_class(module: str, name: str):
    imported = __import__(module, fromlist=[name])
    assert getattr(imported, name) is getattr(errors, name)


def test_no_exception_class_is_defined_outside_errors_py():
    # Private control-flow exceptions (a leading underscore) may stay local; the
    # eval tasks' sample projects are source text in strings, not classes here.
    outside = []
    for path in SRC.rglob("*.py"):
        if path.name == "errors.py" and path.parent == SRC:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                bases = {ast.unparse(b).split(".")[-1] for b in node.bases}
                if bases & {"Exception", "BaseException"} or any(
                    b.endswith(("Error", "Exception", "Timeout")) for b in bases
                ):
                    outside.append(f"{path.relative_to(SRC)}:{node.lineno} {node.name}")
    assert outside == []


def test_invalid_plan_error_keeps_its_problems():
    from waygraph.planning import PlanProblem

    problem = PlanProblem("unknown_tool", "unknown tool 'serch'", "s1")
    err = errors.InvalidPlanError([problem], attempts=2)
    assert err.problems == (problem,) and err.attempts == 2
    assert str(err).startswith("the plan is invalid after 2 attempts:")
    assert inspect.getmodule(type(err)) is errors
