"""Verifiers: each built-in type, the documented fallbacks, and custom registration."""

from __future__ import annotations

from pathlib import Path

import pytest

from waygraph import load_library
from waygraph.errors import PlanFormatError
from waygraph.formats.json_library import plans_from_data
from waygraph.model import Plan, Verify
from waygraph.verify import (
    Observation,
    VerifyContext,
    check,
    describe,
    exit_status,
    register,
    unregister,
)


def v(**kw) -> Verify:
    return Verify(**kw)


@pytest.mark.parametrize(
    ("verify", "output", "expected"),
    [
        (v(type="output_contains", value="Switched to"), "switched to branch 'x'", True),
        (v(type="output_contains", value="FROM"), "nothing", False),
        (v(type="output_not_contains", value="ERROR"), "an error happened", False),
        (v(type="output_not_contains", value="error"), "all fine", True),
        (v(type="regex", value=r"\d+ passed"), "3 passed in 0.1s", True),
        (v(type="regex", value="^ok$", flags="im"), "x\nOK\ny", True),
        (v(type="regex", value="^ok$"), "x\nOK\ny", False),
        (v(type="any_output"), "  \n ", False),
        (v(type="any_output"), "x", True),
        # A tool's output never passes a manual check: only a person does (issue 32).
        (v(type="manual"), "", None),
        (v(type="manual", value="CONFIRMED"), "looks good", None),
        (v(type="manual", value="CONFIRMED"), "confirmed by Ann", None),
    ],
)
def test_output_checks(verify, output, expected):
    assert check(verify, Observation(output=output)) is expected


def test_combinators():
    ok = v(type="all", checks=(v(type="any_output"), v(type="output_not_contains", value="fail")))
    assert check(ok, Observation(output="fine"))
    assert not check(ok, Observation(output="failed"))
    either = v(
        type="any",
        checks=(v(type="output_contains", value="a"), v(type="output_contains", value="b")),
    )
    assert check(either, Observation(output="b"))
    negated = v(type="not", checks=(v(type="output_contains", value="x"),))
    assert check(negated, Observation(output="y")) and not check(negated, Observation(output="x"))


@pytest.mark.parametrize(
    ("output", "code", "expected"),
    [
        ("whatever", 0, True),
        ("all good", 3, False),
        # Only the exit=N marker, alone on the last non-empty line, is a
        # printed status (issue 32): anything else said about exit codes is not.
        ("Process exited with code 2", None, None),
        ("Command returned non-zero exit status 1.", None, None),
        ("[exit status: 0] done", None, None),
        ("make: done\nexit=0", None, True),
        ("make: done\n  exit=0  \n\n", None, True),
        ("boom\nexit=2", None, False),
        ("1 failed\nexit=0\nmore text", None, None),
        ("exit=0 but then\n1 failed", None, None),
        (
            "F....\nFAILED tests/test_cli.py::test_run - AssertionError: expected exit code 0,"
            " got 2\n1 failed, 4 passed in 0.21s",
            None,
            None,
        ),
        # Without an exit code or a printed status the verdict is unknown:
        # words never decide an exit-code check (issue 12).
        ("Traceback (most recent call last):", None, None),
        ("bash: foo: command not found", None, None),
        ("Successfully built abc123", None, None),
        ("12 passed, 0 failed in 0.3s", None, None),
        ("Found no errors. Errors: 0", None, None),
        ("3 passed, 1 failed", None, None),
        ("", None, None),
    ],
)
def test_exit_code_zero_uses_real_code_then_printed_status_else_unknown(output, code, expected):
    assert check(v(type="exit_code_zero"), Observation(output=output, exit_code=code)) is expected


def test_exit_code_compares_a_given_code():
    assert check(v(type="exit_code", value=1), Observation(output="", exit_code=1))
    assert not check(v(type="exit_code", value=1), Observation(output="", exit_code=0))
    assert exit_status(Observation(output="exit=7")) == 7
    assert exit_status(Observation(output="exit code: 7")) is None


def test_file_exists_stays_inside_the_workspace(tmp_path: Path):
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "sub" / "a.txt").write_text("x")
    (tmp_path / "secret").write_text("x")
    ctx = VerifyContext(workspace=ws)
    obs = Observation(output="")
    assert check(v(type="file_exists", value="sub/a.txt"), obs, ctx)
    assert check(v(type="file_exists", value="sub/b.txt"), obs, ctx) is False
    # Unconfined, paths are looked at where they point ...
    assert check(v(type="file_exists", value="../secret"), obs, ctx)
    assert check(v(type="file_exists", value=str(tmp_path / "secret")), obs, ctx)
    # ... confined, anything outside the workspace fails without looking.
    confined = VerifyContext(workspace=ws, confine=True)
    assert check(v(type="file_exists", value="sub/a.txt"), obs, confined)
    assert check(v(type="file_exists", value="../secret"), obs, confined) is False
    assert check(v(type="file_exists", value=str(tmp_path / "secret")), obs, confined) is False


def test_missing_verify_passes_any_result():
    assert check(None, Observation(output=""))


def test_huge_output_is_bounded():
    huge = "a" * 1_000_000 + "TAIL"
    assert check(v(type="output_contains", value="tail"), Observation(output=huge))
    assert len(Observation(output=huge).text) < 500_000


def test_custom_verifier_registration_allows_the_type_in_plans():
    # Loaders raise PlanFormatError; the model itself raises pydantic's ValueError.
    with pytest.raises(ValueError, match="unknown verify type 'is_even_len'"):
        Plan.model_validate({"id": "p", "steps": [{"verify": {"type": "is_even_len"}}]})
    with pytest.raises(PlanFormatError, match="is_even_len"):
        plans_from_data({"plans": {"p": {"steps": [{"verify": {"type": "is_even_len"}}]}}})

    @register("is_even_len")
    def _even(verify, obs, ctx):
        return len(obs.output) % 2 == 0

    # The type is registered for the process: forgotten at the end so the
    # JSON Schema other tests build lists the built-ins only.
    try:
        plan = Plan.model_validate({"id": "p", "steps": [{"verify": {"type": "is_even_len"}}]})
        node = plan.graph.nodes["step_1"]
        assert check(node.verify, Observation(output="ab"))
        assert not check(node.verify, Observation(output="abc"))
        assert describe(node.verify) == "custom check 'is_even_len'"
    finally:
        unregister("is_even_len")


def test_describe_reads_well_for_every_shipped_check():
    for plan in load_library():
        for node in plan.graph.nodes.values():
            text = describe(node.verify)
            assert text and "None" not in text, (plan.id, node.id, text)
