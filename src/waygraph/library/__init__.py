"""Plan libraries: loading files and directories, and the shipped starter plans.

The data files beside this module are waygraph's starter library; see
``docs/plans.md`` for the format.

Example:
    >>> import waygraph
    >>> lib = waygraph.load_library()          # the shipped library
    >>> "bugfix_workflow" in lib
    True
    >>> [p.level for p in lib.check() if p.level == "error"]
    []
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from waygraph.errors import LibraryError, PlanFormatError, PlanNotFoundError, WaygraphError
from waygraph.formats import format_of
from waygraph.formats.json_library import (
    check_file_size,
    library_to_data,
    parse_json,
    plans_from_data,
)
from waygraph.formats.yaml_library import parse_yaml
from waygraph.model import Plan

if TYPE_CHECKING:
    from waygraph.check import Problem

__all__ = ["Library", "load_file", "load_library", "read_plan_text", "shipped_library_path"]


class Library:
    """An ordered collection of plans, with where each came from.

    Plans keep library order, which breaks ties when matching.
    """

    def __init__(
        self,
        plans: Iterable[Plan] = (),
        *,
        meta: dict[str, Any] | None = None,
        sources: dict[str, str] | None = None,
        files: Iterable[Path] = (),
        path: Path | None = None,
    ) -> None:
        self.plans: dict[str, Plan] = {}
        self.sources: dict[str, str] = dict(sources or {})
        for plan in plans:
            if plan.id in self.plans:
                raise LibraryError(f"duplicate plan id {plan.id!r}")
            self.plans[plan.id] = plan
        self.meta: dict[str, Any] = dict(meta or {})
        self.files: tuple[Path, ...] = tuple(files)
        self.path = path

    # -- mapping-like access
    def __contains__(self, plan_id: object) -> bool:
        return plan_id in self.plans

    def __iter__(self) -> Iterator[Plan]:
        return iter(self.plans.values())

    def __len__(self) -> int:
        return len(self.plans)

    def __getitem__(self, plan_id: str) -> Plan:
        try:
            return self.plans[plan_id]
        except KeyError:
            from waygraph.suggest import did_you_mean

            known = ", ".join(list(self.plans)[:20])
            hint = did_you_mean(plan_id, self.plans)
            raise PlanNotFoundError(
                f"no plan {plan_id!r} in the library"
                + (f"; {hint}" if hint else "")
                + f" (plans: {known})"
            ) from None

    def get(self, plan_id: str) -> Plan | None:
        """The plan with this id, or None."""
        return self.plans.get(plan_id)

    def ids(self) -> list[str]:
        """Every plan id, in library order."""
        return list(self.plans)

    @property
    def match_mode(self) -> str:
        """The library-wide matching mode (``_meta.match_mode``), ``phrase`` by default."""
        mode = self.meta.get("match_mode", "phrase")
        return mode if mode in ("phrase", "substring") else "phrase"

    def match_mode_of(self, plan: Plan) -> str:
        """How ``plan``'s triggers match: its own match_mode, else the library's."""
        return plan.match_mode or self.match_mode

    def check(self) -> list[Problem]:
        """Every problem in every plan (errors and warnings), in library order."""
        from waygraph.check import check_library

        return check_library(self)

    def to_data(self) -> dict[str, Any]:
        """The library shape ``{"_meta", "plans": {id: ...}}``."""
        return library_to_data(list(self), self.meta)

    def mtimes(self) -> dict[str, float]:
        """Modification times of the files the library came from (for reloading)."""
        out: dict[str, float] = {}
        for f in self.files:
            try:
                out[str(f)] = f.stat().st_mtime_ns
            except OSError:
                out[str(f)] = -1
        return out

    def __repr__(self) -> str:
        where = f" from {self.path}" if self.path else ""
        return f"<Library {len(self)} plans{where}>"


def shipped_library_path() -> Path:
    """The folder holding waygraph's starter plans."""
    return Path(str(resources.files("waygraph.library")))


def load_file(path: str | os.PathLike[str]) -> tuple[dict[str, Any], list[Plan]]:
    """Read one plan file of any format; return ``(meta, plans)``."""
    text, fmt = read_plan_text(path)
    return load_text(text, fmt, file=str(Path(path)))


def read_plan_text(path: str | os.PathLike[str]) -> tuple[str, str]:
    """The text of a plan file and its format (``json``, ``yaml`` or ``dot``), size checked.

    Example:
        >>> read_plan_text(shipped_library_path() / "01_bugfix_workflow.yaml")[1]
        'yaml'
    """
    p = Path(path)
    fmt = format_of(p)
    name = str(p)
    if fmt is None:
        raise PlanFormatError(
            "not a plan file; use .json, .yaml, .yml, .dot or .gv", file=name, value=p.suffix
        )
    try:
        # Refused before anything is read or parsed.
        check_file_size(p.stat().st_size, fmt, name)
        raw = p.read_bytes()
    except OSError as exc:
        raise PlanFormatError(f"cannot read: {exc.strerror or exc}", file=name) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise PlanFormatError(f"not UTF-8 text (byte {exc.start})", file=name) from None
    return text, fmt


def load_text(text: str, fmt: str, *, file: str | None = None) -> tuple[dict[str, Any], list[Plan]]:
    """Parse plan text of format ``json``, ``yaml`` or ``dot``; return ``(meta, plans)``."""
    if fmt == "dot":
        from waygraph.formats.dot import parse_dot

        return {}, [parse_dot(text, file=file)]
    data = parse_json(text, file=file) if fmt == "json" else parse_yaml(text, file=file)
    if data is None:
        raise PlanFormatError("the file is empty", file=file)
    return plans_from_data(data, file=file, text=text, fmt=fmt)


def load_library(path: str | os.PathLike[str] | None = None, *, validate: bool = True) -> Library:
    """Load a plan library.

    ``path`` is None for the shipped library, a file of any format, or a
    directory whose plan files (searched recursively, in name order) form one
    library. With ``validate`` (the default) the first error found by
    :meth:`Library.check` is raised as a :class:`PlanFormatError`; warnings
    never stop loading.

    Example:
        >>> lib = load_library()
        >>> lib["bugfix_workflow"].graph.start
        'start'
    """
    root = shipped_library_path() if path is None else Path(path)
    if root.is_dir():
        files = sorted(
            f
            for f in root.rglob("*")
            if f.is_file()
            and format_of(f)
            and not any(part.startswith(".") for part in f.relative_to(root).parts)
        )
    elif root.exists():
        files = [root]
    else:
        raise PlanFormatError("no such file or directory", file=str(root))
    plans: list[Plan] = []
    sources: dict[str, str] = {}
    meta: dict[str, Any] = {}
    for f in files:
        file_meta, file_plans = load_file(f)
        if not meta and file_meta:
            meta = file_meta
        for plan in file_plans:
            if plan.id in sources:
                raise LibraryError(
                    f"duplicate plan id {plan.id!r}: defined in {sources[plan.id]} and in {f}"
                )
            sources[plan.id] = str(f)
            plans.append(plan)
    library = Library(plans, meta=meta, sources=sources, files=files, path=root)
    if validate:
        for problem in library.check():
            if problem.level == "error":
                raise _placed(problem).as_error()
    return library


def _placed(problem: Problem) -> Problem:
    """``problem`` at the line of its field, when its file is JSON or YAML and still reads."""
    from waygraph.check._files import read_plan_file

    if problem.file is None or format_of(Path(problem.file)) not in ("json", "yaml"):
        return problem
    try:
        return read_plan_file(Path(problem.file)).place(problem)
    except (WaygraphError, OSError):
        return problem
