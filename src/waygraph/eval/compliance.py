"""Compliance fixtures: single-turn adherence to one workflow node's instructions.

A fixture puts the model at one node of a plan (as waygraph's guidance would)
with a user's request, asks it once, and scores the reply with keyword sets:
it passes when the reply (its text plus any tool calls, as text) contains at
least one of ``success_indicators`` and none of ``failure_indicators``
(case-insensitive substrings). Three kinds are shipped: stays within the
node's scope, a retry tries a different approach, an impossible node is
escalated rather than faked.

Fixture files are a JSON or YAML list of objects with the established fields
``test_id, plan_name, node_type, node_instruction, user_context,
expected_behavior, failure_indicators, success_indicators`` (other keys are
kept and ignored).

Example:
    >>> fixture = load_fixtures()[0]
    >>> score(fixture, "I'll run python3 -m unittest tests.test_login first.").passed
    True
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from waygraph._extras import require
from waygraph.errors import ConfigError
from waygraph.eval.loop import SYSTEM_PROMPT, TOOLS
from waygraph.eval.modes import ModelSettings

__all__ = [
    "ComplianceResult",
    "Fixture",
    "compliance_messages",
    "load_fixtures",
    "run_compliance",
    "score",
]


class Fixture(BaseModel):
    """One compliance fixture (the established format)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    test_id: str = Field(min_length=1)
    plan_name: str
    node_type: str
    node_instruction: str = Field(min_length=1)
    user_context: str = Field(min_length=1)
    expected_behavior: str = ""
    failure_indicators: list[str] = Field(default_factory=list)
    success_indicators: list[str] = Field(min_length=1)


class ComplianceResult(BaseModel):
    """How one fixture scored: a row of ``compliance.json``."""

    test_id: str
    plan_name: str
    node_type: str
    passed: bool
    matched_success: list[str] = Field(default_factory=list)
    matched_failure: list[str] = Field(default_factory=list)
    reply: str = ""
    tokens: int = 0
    error: str | None = None


def load_fixtures(path: str | Path | None = None) -> list[Fixture]:
    """Fixtures from a JSON or YAML list (the shipped set when ``path`` is None).

    Raises :class:`ConfigError` naming the file, the fixture and the field.
    """
    if path is None:
        text = resources.files("waygraph.eval").joinpath("data/compliance.yaml").read_text()
        name = "waygraph/eval/data/compliance.yaml"
    else:
        name = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"{name}: cannot read the fixtures: {exc.strerror or exc}") from None
    try:
        data = json.loads(text) if name.endswith(".json") else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise ConfigError(f"{name}: not valid JSON/YAML: {exc}") from None
    if isinstance(data, dict) and isinstance(data.get("fixtures"), list):
        data = data["fixtures"]
    if not isinstance(data, list) or not data:
        raise ConfigError(f"{name}: expected a non-empty list of fixtures")
    fixtures, seen = [], set()
    for i, item in enumerate(data):
        label = item.get("test_id") if isinstance(item, dict) else None
        where = f"{name}: fixture {i + 1}" + (f" ({label!r})" if label else "")
        if not isinstance(item, dict):
            raise ConfigError(f"{where}: expected an object, got {type(item).__name__}")
        try:
            fixture = Fixture.model_validate(item)
        except ValidationError as exc:
            error = exc.errors()[0]
            field = ".".join(str(p) for p in error["loc"]) or "?"
            raise ConfigError(f"{where}, field {field!r}: {error['msg']}") from None
        if fixture.test_id in seen:
            raise ConfigError(f"{where}: test_id {fixture.test_id!r} is used twice")
        seen.add(fixture.test_id)
        fixtures.append(fixture)
    return fixtures


def compliance_messages(fixture: Fixture) -> list[dict[str, str]]:
    """The single request: the agent's system prompt, the user, then the node as guidance."""
    guidance = (
        f"[waygraph] Plan: {fixture.plan_name}\n{fixture.node_instruction.strip()}\n"
        "Do only this node now: make one tool call for the action above, then wait for its "
        "result. Do not skip ahead or claim success without running it."
    )
    if fixture.node_type == "escalate":
        guidance = fixture.node_instruction.strip()
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": fixture.user_context.strip()},
        {"role": "system", "content": guidance},
    ]


def score(fixture: Fixture, reply: str) -> ComplianceResult:
    """Score ``reply`` against the fixture's keyword sets."""
    text = reply.lower()
    good = [k for k in fixture.success_indicators if k.lower() in text]
    bad = [k for k in fixture.failure_indicators if k.lower() in text]
    return ComplianceResult(
        test_id=fixture.test_id,
        plan_name=fixture.plan_name,
        node_type=fixture.node_type,
        passed=bool(good) and not bad,
        matched_success=good,
        matched_failure=bad,
        reply=reply,
    )


def _ask(client: Any, settings: ModelSettings, fixture: Fixture) -> ComplianceResult:
    try:
        response = client.chat.completions.create(
            model=settings.model,
            messages=compliance_messages(fixture),
            tools=list(TOOLS.values()),
        )
    except Exception as exc:
        result = score(fixture, "")
        return result.model_copy(update={"passed": False, "error": f"{type(exc).__name__}: {exc}"})
    message = response.choices[0].message
    parts = [message.content or ""]
    for call in message.tool_calls or []:
        parts.append(f"{call.function.name}({call.function.arguments})")
    result = score(fixture, "\n".join(p for p in parts if p))
    tokens = response.usage.total_tokens if response.usage is not None else 0
    return result.model_copy(update={"tokens": tokens or 0})


def run_compliance(
    fixtures: Sequence[Fixture],
    settings: ModelSettings,
    *,
    jobs: int = 2,
    on_result: Callable[[ComplianceResult], None] | None = None,
) -> list[ComplianceResult]:
    """Ask the model once per fixture (``jobs`` at a time); results in fixture order."""
    openai = require("llm", "openai", purpose="waygraph eval --compliance")
    client = openai.OpenAI(
        base_url=settings.base_url,
        api_key=settings.api_key,
        timeout=settings.timeout,
        max_retries=1,
    )
    try:
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            futures = [pool.submit(_ask, client, settings, f) for f in fixtures]
            results = []
            for future in futures:
                result = future.result()
                results.append(result)
                if on_result is not None:
                    on_result(result)
    finally:
        client.close()
    return results
