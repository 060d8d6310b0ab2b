"""Which Attractor pipelines of the corpus waygraph's DOT reader loads.

Tries :func:`waygraph.formats.dot.parse_dot` on every ``.dot`` / ``.gv`` file
under a folder (by default ``tests/fixtures/attractor``, whose ``SOURCES.md``
says where each file comes from) and prints one row per file: its path, whether
it loads, and the first error; then a count. A dev aid, not a test: no network,
and a file that fails (or makes the reader raise anything at all) is a row, not
a crash. The exit code is 0 whatever loads.

Usage: ``python scripts/attractor_corpus.py [FOLDER]``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

DEFAULT_FOLDER = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "attractor"
SUFFIXES = (".dot", ".gv")
ERROR_WIDTH = 110


@dataclass(frozen=True)
class Row:
    """One file's result: its path under the folder, and its first error if any."""

    file: str
    error: str | None

    @property
    def loads(self) -> bool:
        return self.error is None


def first_line(text: str) -> str:
    """The first line of ``text``, cut to the table's width."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= ERROR_WIDTH else line[: ERROR_WIDTH - 1] + "…"


def try_file(path: Path, folder: Path) -> Row:
    """Parse one file; whatever it raises becomes the row's error."""
    name = path.relative_to(folder).as_posix()
    try:
        from waygraph.formats.dot import parse_dot

        text = path.read_text(encoding="utf-8")
        parse_dot(text, file=name)
    except Exception as exc:  # a report of every failure, whatever its kind
        return Row(name, first_line(f"{type(exc).__name__}: {exc}"))
    return Row(name, None)


def corpus_files(folder: Path) -> list[Path]:
    """Every pipeline file under ``folder``, sorted by path."""
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in SUFFIXES)


def print_table(rows: list[Row]) -> None:
    width = max((len(r.file) for r in rows), default=4)
    print(f"{'file':<{width}}  loads  first error")
    for r in rows:
        print(f"{r.file:<{width}}  {'yes' if r.loads else 'no':<5}  {r.error or ''}")
    loaded = sum(r.loads for r in rows)
    print(f"\n{loaded} of {len(rows)} files load, {len(rows) - loaded} fail")


def main(argv: list[str]) -> int:
    folder = Path(argv[0]) if argv else DEFAULT_FOLDER
    if not folder.is_dir():
        print(f"not a folder: {folder}", file=sys.stderr)
        return 2
    print_table([try_file(p, folder) for p in corpus_files(folder)])
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
