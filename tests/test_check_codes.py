"""Plan checker: the table of problem codes, each covered by a case, and docs/plans.md
kept true to it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from tests.test_check_errors import CASES as ERROR_CASES
from tests.test_check_warnings import CASES as WARNING_CASES
from waygraph.check import CODES, check_plan
from waygraph.formats.json_library import plans_from_data

CASES = ERROR_CASES + WARNING_CASES


def test_every_code_has_a_case():
    # Tested in tests/test_check_library.py, and the next_plan checks in tests/test_chaining.py.
    library_level = {"bad-match-mode", "unknown-next-plan", "next-plan-loop"}
    library_level.add("example-starts-other-plan")
    # reported by `waygraph check` (dot-attribute: tests/test_check_dot.py)
    cli_level = {"load-error", "duplicate-plan", "no-plans", "dot-attribute"}
    from tests.test_check_human import COVERED as human_nodes  # human nodes
    from tests.test_check_kinds import COVERED as other_kinds  # state machines, generated plans

    covered = {case.values[0] for case in CASES} | library_level | cli_level | other_kinds
    covered |= human_nodes
    assert covered == set(CODES)


def test_codes_are_kebab_case_with_a_level_and_a_description():
    for code, (level, description) in CODES.items():
        assert code == code.lower() and " " not in code and "_" not in code
        assert level in ("error", "warning")
        assert description and not description.endswith(".")


# ---------------------------------------------------------------- docs/plans.md stays true

DOCS = Path(__file__).parent.parent / "docs" / "plans.md"


def doc_blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.S)


def test_docs_list_every_code_with_its_level():
    text = DOCS.read_text(encoding="utf-8")
    for code, (level, _) in CODES.items():
        assert f"| `{code}` | {level} |" in text, code


def test_docs_json_examples_parse():
    blocks = doc_blocks("json")
    assert len(blocks) > 10
    for block in blocks:
        json.loads(block)


def test_docs_complete_example_has_no_problems():
    (example,) = [b for b in doc_blocks("yaml") if b.startswith("_meta:")]
    _, plans = plans_from_data(yaml.safe_load(example))
    assert [p.id for p in plans] == ["release_package"]
    assert check_plan(plans[0]) == []
