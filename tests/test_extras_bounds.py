"""The extras admit exactly the framework versions the adapters accept (issue 37): the
range is defined by each adapter (MINIMUM, BELOW) and pyproject.toml must say the same,
or `pip install waygraph[langgraph]` installs a version the adapter refuses at use."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"

#: extra -> (distribution, the adapter module that bounds it)
ADAPTERS = {
    "openai-agents": ("openai-agents", "waygraph.integrations.openai_agents"),
    "langgraph": ("langgraph", "waygraph.integrations.langgraph"),
    "pydantic-ai": ("pydantic-ai-slim", "waygraph.integrations.pydantic_ai"),
}


def _extras() -> dict[str, list[Requirement]]:
    data = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    extras = data["project"]["optional-dependencies"]
    return {name: [Requirement(r) for r in reqs] for name, reqs in extras.items()}


def _bounds(module_name: str) -> tuple[str, str]:
    import importlib

    module = importlib.import_module(module_name)
    below = getattr(module, "BELOW", None) or module._BELOW
    return str(module.MINIMUM), str(below)


@pytest.mark.parametrize("extra", sorted(ADAPTERS))
def test_each_framework_extra_is_the_adapters_own_range(extra: str) -> None:
    distribution, module = ADAPTERS[extra]
    minimum, below = _bounds(module)
    wanted = {f">={minimum}", f"<{below}"}
    for name, requirements in _extras().items():
        for requirement in requirements:
            if requirement.name == distribution:
                assert {str(s) for s in requirement.specifier} == wanted, (name, requirement)
