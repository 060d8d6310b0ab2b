"""Run ``waygraph eval`` as the command does, keeping what the test checks afterwards.

Usage: ``python tests_model/recorded_eval.py RECORD_DIR MAX_STEPS EVAL_ARGS...``

The eval's guided mode keeps its sessions in ``memory://``, gone with the
process; here its Navigator writes them to ``RECORD_DIR/sessions.db`` instead,
and every tool call the loop made goes to ``RECORD_DIR/calls.jsonl`` (tool,
arguments, output, exit code: None when nothing ran). Each task's budget of
model calls is cut to ``MAX_STEPS`` (0: the task's own), since ``waygraph
eval`` has no flag for it and a 135M model on two cores takes seconds a call.
Nothing else changes: the arguments go to waygraph's own command-line entry point.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import threading
from pathlib import Path
from typing import Any


def main(argv: list[str]) -> int:
    from waygraph.cli import main as waygraph_main
    from waygraph.eval import loop, modes, runner

    record_dir, max_steps = Path(argv[0]), int(argv[1])
    record_dir.mkdir(parents=True, exist_ok=True)
    store_url = f"sqlite:///{record_dir / 'sessions.db'}"
    calls = record_dir / "calls.jsonl"
    lock = threading.Lock()
    navigator_class = modes.Navigator
    call_tool = loop.call_tool
    run_mode = runner.run_mode

    def navigator(*args: Any, **kwargs: Any) -> Any:
        return navigator_class(*args, **{**kwargs, "store": store_url})

    def recorded_call(name: str, arguments: str, *args: Any, **kwargs: Any) -> Any:
        output, code = call_tool(name, arguments, *args, **kwargs)
        line = {"tool": name, "arguments": arguments, "output": output, "exit_code": code}
        with lock, calls.open("a", encoding="utf-8") as out:
            out.write(json.dumps(line) + "\n")
        return output, code

    def capped(mode: str, task: Any, *args: Any, **kwargs: Any) -> Any:
        if max_steps:
            task = dataclasses.replace(task, max_steps=min(task.max_steps, max_steps))
        return run_mode(mode, task, *args, **kwargs)

    modes.Navigator = navigator  # type: ignore[misc,assignment]
    loop.call_tool = recorded_call
    runner.run_mode = capped
    sys.argv = ["waygraph", "eval", *argv[2:]]
    try:
        waygraph_main()
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
