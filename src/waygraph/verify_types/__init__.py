"""Verify types: one spec per type, and the one registry every part of waygraph reads.

A verify type (``exit_code_zero``, ``regex``, ``manual``, ...) is one
:class:`VerifySpec` defined in one module of this package: how it is judged
and which evidence it accepts, how it is described to the model, the label
drawings put on it, the hints ``waygraph check`` gives about its fields, and
its line in the JSON Schema and the docs. The plan model asks
:data:`VERIFY_TYPES` which names plan files may use; verification
(:mod:`waygraph.verify`), the guidance, the drawings (:mod:`waygraph.draw`,
:mod:`waygraph.draw.svg`), the checker (:mod:`waygraph.check`), the JSON Schema
and the table in docs/plans.md all read it, so adding a type is one
``VERIFY_TYPES.add(VerifySpec(...))`` and changing one is an edit in one place.

The built-ins, by module: :mod:`~waygraph.verify_types.output`
(``output_contains``, ``output_not_contains``, ``regex``, ``any_output``),
:mod:`~waygraph.verify_types.exit` (``exit_code``, ``exit_code_zero``),
:mod:`~waygraph.verify_types.world` (``file_exists``, ``command``),
:mod:`~waygraph.verify_types.manual` (``manual``),
:mod:`~waygraph.verify_types.logic` (``all``, ``any``, ``not``) and
:mod:`~waygraph.verify_types.data` (``compare``, ``truthy``).

This package imports nothing of the plan model, which builds on it.

Example:
    >>> from waygraph.model import Plan, Verify
    >>> spec = VERIFY_TYPES.add(VerifySpec(
    ...     "has_tests", judge=lambda verify, obs, ctx: " passed" in obs.output,
    ...     summary="the output reports passing tests",
    ...     describe=lambda verify: "the test run must report passes",
    ...     label=lambda verify: "tests passed"))
    >>> label(Verify(type="has_tests")), describe(Verify(type="has_tests"))
    ('tests passed', 'the test run must report passes')
    >>> VERIFY_TYPES.remove("has_tests")
    >>> VERIFY_TYPES.names()[:3]
    ('output_contains', 'output_not_contains', 'regex')
"""

from __future__ import annotations

from waygraph.verify_types._judge import VERIFY_TYPES, describe, evaluate, label, person_request
from waygraph.verify_types._spec import (
    Report,
    Verifier,
    VerifyRegistry,
    VerifySpec,
    default_describe,
    default_label,
)
from waygraph.verify_types.data import COMPARE, TRUTHY
from waygraph.verify_types.exit import EXIT_CODE, EXIT_CODE_ZERO
from waygraph.verify_types.logic import ALL, ANY, NOT
from waygraph.verify_types.manual import MANUAL
from waygraph.verify_types.output import ANY_OUTPUT, OUTPUT_CONTAINS, OUTPUT_NOT_CONTAINS, REGEX
from waygraph.verify_types.world import COMMAND, FILE_EXISTS

__all__ = [
    "BUILTIN_VERIFY_SPECS",
    "VERIFY_TYPES",
    "Report",
    "Verifier",
    "VerifyRegistry",
    "VerifySpec",
    "default_describe",
    "default_label",
    "describe",
    "docs_table",
    "evaluate",
    "label",
    "person_request",
]

#: The verify types waygraph ships, in the order the docs and the schema list them.
BUILTIN_VERIFY_SPECS: tuple[VerifySpec, ...] = (
    OUTPUT_CONTAINS,
    OUTPUT_NOT_CONTAINS,
    REGEX,
    EXIT_CODE,
    EXIT_CODE_ZERO,
    FILE_EXISTS,
    COMMAND,
    ANY_OUTPUT,
    MANUAL,
    ALL,
    ANY,
    NOT,
    COMPARE,
    TRUTHY,
)
for _spec in BUILTIN_VERIFY_SPECS:
    VERIFY_TYPES.add(_spec, builtin=True)


def docs_table(specs: tuple[VerifySpec, ...] = BUILTIN_VERIFY_SPECS) -> str:
    """The verify table of docs/plans.md, one row per spec (a test holds the page to it).

    Example:
        >>> print(docs_table((EXIT_CODE_ZERO,)).splitlines()[0])
        | type | passes when | example |
    """
    rows = ["| type | passes when | example |", "| --- | --- | --- |"]
    rows.extend(spec.docs_row() for spec in specs)
    return "\n".join(rows) + "\n"
