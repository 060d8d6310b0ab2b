"""A FAIL no condition edge takes is retried while max_retries allows, then goes to the
retry targets (§3.5 and §3.7 with §11.5); one a fail edge takes is routed at once. Guided
runs of DOT pipelines do the same (tests/test_guided_pipelines.py)."""

from __future__ import annotations

from tests.pipeline_helpers import Scripted, ok, run, status

NO_FAIL_EDGE = """digraph r {{ start [shape=Mdiamond]; done [shape=Msquare]
    flaky [prompt=x, max_retries={n}, retry_target=recover]; recover [prompt=r]
    start -> flaky -> done; recover -> done }}"""
FAIL_EDGE = """digraph r { start [shape=Mdiamond]; done [shape=Msquare]
    flaky [prompt=x, max_retries=2]; failed [prompt=f]
    start -> flaky -> done; flaky -> failed [condition="outcome=fail"]; failed -> done }"""


def test_a_fail_with_no_fail_edge_is_retried_then_sent_to_its_retry_target(tmp_path):
    backend = Scripted({"flaky": [status("fail"), status("fail"), ok()]})
    result = run(NO_FAIL_EDGE.format(n=2), tmp_path / "a", backend=backend)
    assert backend.calls.count("flaky") == 3
    assert result.path == ("start", "flaky", "done") and result.status == "success"
    spent = Scripted({"flaky": [status("fail")]})
    result = run(NO_FAIL_EDGE.format(n=1), tmp_path / "b", backend=spent)
    assert spent.calls.count("flaky") == 2  # the first attempt and one retry
    assert result.path == ("start", "flaky", "recover", "done")


def test_a_fail_a_fail_edge_takes_is_routed_at_once(tmp_path):
    backend = Scripted({"flaky": [status("fail"), ok()]})
    result = run(FAIL_EDGE, tmp_path, backend=backend)
    assert backend.calls.count("flaky") == 1
    assert result.path == ("start", "flaky", "failed", "done")


def test_a_fail_with_no_route_at_all_ends_the_run_failed_after_its_retries(tmp_path):
    dot = """digraph r { start [shape=Mdiamond]; done [shape=Msquare]
        flaky [prompt=x, max_retries=1]; start -> flaky -> done [condition="outcome=success"] }"""
    backend = Scripted({"flaky": [status("fail", failure_reason="broken")]})
    result = run(dot, tmp_path, backend=backend)
    assert backend.calls.count("flaky") == 2
    assert result.status == "fail" and result.path == ("start", "flaky")
