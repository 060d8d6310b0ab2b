"""A run the model server breaks off keeps the counts of what it did (issue 35): an
18-minute real-model run that died at its tenth call on the server's context used
to show 0 tool calls and 0 tokens."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from tests.test_openai_loop import load_example
from waygraph.eval import EvalConfig, run_eval
from waygraph.eval.suite import get_task
from waygraph.testing import ScriptedChatServer

CALL = {"tool_calls": [{"name": "shell", "arguments": {"command": "ls"}}]}
DEAD = {"status": 400, "error": "the server fell over"}


def test_an_errored_run_keeps_its_calls_and_tokens():
    with ScriptedChatServer([CALL, CALL, DEAD, DEAD]) as server:
        url = server.base_url
        (record,) = run_eval(
            EvalConfig(
                server.base_url, "m", modes=("baseline",), tasks=[get_task("log-root-cause")]
            )
        )
    assert record.error is not None and "answered HTTP 400: the server fell over" in record.error
    assert url in record.error
    assert (record.model_calls, record.tool_calls) == (2, 2)
    assert record.tokens > 0 and record.prompt_tokens > 0
    assert record.tokens == record.prompt_tokens + record.completion_tokens
    assert not record.completed and not record.success


def test_the_example_says_the_server_failed_in_one_line(
    example: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    with ScriptedChatServer([CALL, DEAD, DEAD]) as server:
        url = server.base_url
        code = example.main(
            [
                "list the files",
                "--workspace",
                str(tmp_path),
                "--base-url",
                server.base_url,
                "--store",
                "memory://",
            ]
        )
    err = capsys.readouterr().err
    assert code == 1
    assert f"error: the model server at {url} answered HTTP 400" in err
    assert "Traceback" not in err


@pytest.fixture
def example() -> ModuleType:
    return load_example()
