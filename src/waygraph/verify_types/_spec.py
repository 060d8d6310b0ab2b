"""What a verify type is (:class:`VerifySpec`) and where they are kept (:class:`VerifyRegistry`).

A spec holds everything waygraph knows about one verify type; the checker,
the guidance, the drawings, the JSON Schema and the docs table read it from
the registry, so a type is added (or changed) in one place.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from waygraph.model import Verify
    from waygraph.verify_types._verdicts import Observation, Verdict, VerifyContext

#: A verifier answers True, False, None (unknown) or a full :class:`Verdict`.
Verifier = Callable[["Verify", "Observation", "VerifyContext"], "bool | Verdict | None"]
#: How a spec's ``validate`` reports a problem: (code, message, field); the
#: field is relative to the check (``value``, ``checks``), the checker adds where it is.
Report = Callable[[str, str, str], None]

#: Evidence a check accepts unless its spec says otherwise: a tool's result or a host's check.
MACHINE_SOURCES = frozenset({"tool", "host"})


def default_label(verify: Verify) -> str:
    """The drawn text of a check whose spec gives none: its type, and its value if set.

    Example:
        >>> from waygraph.model import Verify
        >>> default_label(Verify(type="command", run="make"))
        'command'
    """
    return f"{verify.type} {verify.value!r}" if verify.value is not None else verify.type


def default_describe(verify: Verify) -> str:
    """What the model is told a check looks for when its spec gives no words.

    Example:
        >>> from waygraph.model import Verify
        >>> default_describe(Verify(type="exit_code_zero"))
        "custom check 'exit_code_zero'"
    """
    return f"custom check {verify.type!r}"


def _no_verifier(verify: Verify, observation: Observation, context: VerifyContext) -> Verdict:
    from waygraph.verify_types._verdicts import Verdict

    # The name was allowed in plan files (register_verify_type) but no judge was
    # given in this process: fail safe rather than pass unchecked work.
    return Verdict("fail", f"no verifier is registered for {verify.type!r} here")


@dataclass(frozen=True, slots=True)
class VerifySpec:
    """One verify type, whole: how it is judged, described, drawn, checked and documented.

    - ``judge(verify, observation, context)``: True, False, None (unknown) or
      a :class:`~waygraph.verify.Verdict`.
    - ``sources``: the evidence it accepts (``tool``, ``host``, ``human``);
      words the model wrote are never evidence. ``ask(verify)`` is the line
      asking for the evidence it accepts when it is shown another kind.
    - ``reads_output``: it reads a command's output, so the output of a
      command that never ran its program fails it.
    - ``describe(verify)``: what it looks for, in words for the model;
      ``negated(verify)``: the same check under ``not``, in plain words, when
      there are some (else the guidance says ``not (...)``).
    - ``label(verify)``: the short text drawn on nodes and edges.
    - ``validate(verify, report)``: ``waygraph check``'s hints about its
      fields (``report(code, message, field)``; codes from ``check.CODES``).
    - ``nested``: the fields holding nested checks (``checks``, ``expect``);
      ``joins``: the word joining its ``checks`` (``and``, ``or``), if it is a group.
    - ``over_data``: it has a condition-string form and is evaluated over
      event data (``compare``, ``truthy`` and the logic around them).
    - ``runs_once``: judging it runs something (a command): one judge asks it
      once per observation.
    - ``summary``: what it passes on, in one line (``model.BUILTIN_VERIFY_TYPES``);
      ``passes_when`` (else the summary) and ``example``: its row in the
      docs' verify table (:func:`waygraph.verify_types.docs_table`). Its
      name is in the JSON Schema's enum of verify types.

    Example:
        >>> from waygraph.model import Verify
        >>> spec = VerifySpec("has_tests", judge=lambda v, o, c: "passed" in o.output,
        ...                   describe=lambda v: "the output reports passing tests")
        >>> spec.describe(Verify(type="exit_code_zero")), spec.label(Verify(type="exit_code_zero"))
        ('the output reports passing tests', 'exit_code_zero')
    """

    name: str
    judge: Verifier = _no_verifier
    summary: str = ""
    describe: Callable[[Verify], str] = default_describe
    label: Callable[[Verify], str] = default_label
    validate: Callable[[Verify, Report], None] | None = None
    negated: Callable[[Verify], str | None] | None = None
    sources: frozenset[str] = MACHINE_SOURCES
    ask: Callable[[Verify], str] | None = None
    reads_output: bool = False
    nested: tuple[str, ...] = ()
    joins: str | None = None
    over_data: bool = False
    runs_once: bool = False
    passes_when: str = ""
    example: Mapping[str, Any] | None = field(default=None, hash=False)

    def docs_row(self) -> str:
        """This type's row in the docs' verify table (``| type | passes when | example |``).

        Example:
            >>> VerifySpec("x", summary="it holds", example={"type": "x"}).docs_row()
            '| `x` | it holds | `{"type": "x"}` |'
        """
        example = json.dumps(dict(self.example or {"type": self.name}), ensure_ascii=False)
        return f"| `{self.name}` | {self.passes_when or self.summary} | `{example}` |"


class VerifyRegistry:
    """The verify types plan files may use, by name, in the order they were added.

    :data:`VERIFY_TYPES` is the one every part of waygraph reads; add a type
    with :meth:`add` (or :func:`waygraph.verify.register` for a judge alone).

    Example:
        >>> registry = VerifyRegistry()
        >>> registry.add(VerifySpec("has_tests")).name
        'has_tests'
        >>> "has_tests" in registry, registry.names()
        (True, ('has_tests',))
    """

    def __init__(self, specs: tuple[VerifySpec, ...] = ()) -> None:
        self._specs: dict[str, VerifySpec] = {}
        self._fixed: set[str] = set()
        for spec in specs:
            self.add(spec, builtin=True)

    def add(self, spec: VerifySpec, *, builtin: bool = False) -> VerifySpec:
        """Add ``spec``, replacing the type of the same name if there is one.

        ``builtin``: a type waygraph ships, which :meth:`remove` refuses.

        Example:
            >>> VerifyRegistry().add(VerifySpec("has_tests")).summary
            ''
        """
        self._specs[spec.name] = spec
        if builtin:
            self._fixed.add(spec.name)
        return spec

    def remove(self, name: str) -> None:
        """Forget the added type ``name`` (built-in types stay).

        Example:
            >>> registry = VerifyRegistry()
            >>> _ = registry.add(VerifySpec("has_tests"))
            >>> registry.remove("has_tests"); "has_tests" in registry
            False
        """
        if name in self._fixed:
            raise ValueError(f"{name!r} is a built-in verify type and cannot be removed")
        self._specs.pop(name, None)

    @property
    def specs(self) -> Mapping[str, VerifySpec]:
        """The specs by name, live (a read-only view would cost every judgement a call)."""
        return self._specs

    def get(self, name: str) -> VerifySpec | None:
        """The spec of ``name``, or None when no such type is registered."""
        return self._specs.get(name)

    def names(self) -> tuple[str, ...]:
        """Every registered name, built-ins first, in the order they were added."""
        return tuple(self._specs)

    def builtin(self) -> tuple[VerifySpec, ...]:
        """The specs waygraph ships, in order."""
        return tuple(spec for spec in self._specs.values() if spec.name in self._fixed)

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def __iter__(self) -> Iterator[VerifySpec]:
        return iter(tuple(self._specs.values()))

    def __len__(self) -> int:
        return len(self._specs)

    def __getitem__(self, name: str) -> VerifySpec:
        return self._specs[name]
