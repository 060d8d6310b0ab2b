"""The fenced code blocks of the README and docs/, as the doc tests read them.

A block is meant to run unless the line before its fence says otherwise, in an
HTML comment a reader of the rendered page does not see:

- ``<!-- illustrative: WHY -->``: not run (it needs a model server, your own
  tools, a framework's objects...); a Python block must still compile and a
  data block must still parse.
- ``<!-- continues -->``: a Python block run after the page's previous Python
  block, as a reader would type it into the same session.
- ``<!-- file: NAME -->``: a data block saved as NAME in the page's folder
  before the page's Python blocks run (``branch.dot`` for the DOT page).
- ``<!-- needs: nats -->`` (or ``postgres``): run only when that service answers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

_FENCE = re.compile(
    r"^(?:<!--\s*(?P<kind>illustrative|continues|file|needs)(?::\s*(?P<arg>.*?))?\s*-->\n)?"
    r"```(?P<lang>[\w-]*)\n(?P<body>.*?)^```",
    re.S | re.M,
)


@dataclass(frozen=True)
class Block:
    """One fenced block: where it is, its language, its text and its marker."""

    page: Path
    line: int  # of the block's first line of code
    lang: str
    body: str
    marker: str | None = None
    arg: str = ""

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """Every fenced block of ``page``, in order."""
    text = page.read_text(encoding="utf-8")
    found = []
    for m in _FENCE.finditer(text):
        line = text.count("\n", 0, m.start("body")) + 1
        found.append(Block(page, line, m["lang"], m["body"], m["kind"], (m["arg"] or "").strip()))
    return found


def all_blocks(*langs: str) -> list[Block]:
    """The blocks of every page in one of ``langs``."""
    return [b for page in PAGES for b in blocks(page) if b.lang in langs]


def command_lines(block: Block) -> list[str]:
    """The ``waygraph`` command lines of a shell or console block, continuations joined."""
    lines: list[str] = []
    pending = ""
    for raw in block.body.splitlines():
        line = pending + raw.strip()
        pending = ""
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        line = line.removeprefix("$ ")
        if line.startswith("waygraph "):
            lines.append(line)
    return lines
