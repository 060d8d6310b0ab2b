"""The runnable example works offline against the scripted model."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._scripts import load_script

EXAMPLE = Path(__file__).parent.parent / "examples" / "planning_agent.py"

pytestmark = pytest.mark.timeout(30)


def load_example():
    return load_script(EXAMPLE, "planning_agent_example")


def test_scripted_example_runs_the_plan_in_parallel_and_succeeds(capsys):
    example = load_example()
    assert example.main(["--scripted"]) == 0
    out = capsys.readouterr().out
    assert '  3. product  multiply(a="$first", b="$second")  after: first, second' in out
    assert "  product: completed -> 20.0" in out
    assert "success: True" in out
    assert "final output: 20.0" in out


def test_example_needs_a_model_unless_scripted(capsys):
    example = load_example()
    with pytest.raises(SystemExit) as info:
        example.main([])
    assert info.value.code == 2
    assert "--model is required (or use --scripted to run offline)" in capsys.readouterr().err
