"""Tables that wrap at word boundaries on narrow terminals.

rich shrinks an over-wide table by narrowing its widest columns to the same
width, whatever their words, so at 80 columns ``checkpoint`` prints as
``checkpoi`` / ``nt`` while a neighbouring column keeps spare room. A
:class:`WordTable` lets rich choose the widths and then moves that spare room
to the columns whose longest word does not fit, so prose and names wrap
between words. Code-like tokens (a regex, a path) may still fold: they have no
word boundary to wrap at.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from rich.errors import MarkupError
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult

__all__ = ["WordTable", "longest_word"]

#: A token that reads as a word (letters, digits, _ and -, maybe with trailing
#: punctuation); anything else is code and may fold.
_WORD = re.compile(r"[\w'’-]+[.,;:!?)]*")


def longest_word(text: str) -> int:
    """Length of the longest word-like token in ``text`` (0 when there is none).

    Example:
        >>> longest_word("tool code_execution_tool; /a|b\\\\d+/")
        20
    """
    return max((len(t) for t in text.split() if _WORD.fullmatch(t)), default=0)


class WordTable(Table):
    """A :class:`rich.table.Table` whose columns are wide enough for their words.

    ``optional`` names columns (by header) to leave out, in that order, while
    the longest words of all columns do not fit the width; a caption then says
    which are hidden.

    Example:
        >>> from rich.console import Console
        >>> table = WordTable("node", "type", "source", optional=("source",))
        >>> table.add_row("cause_found", "checkpoint", "plans/01_bugfix_workflow.yaml")
        >>> console = Console(width=32)
        >>> with console.capture() as capture:
        ...     console.print(table)
        >>> "checkpoint" in capture.get(), "source" in capture.get()
        (True, True)
    """

    def __init__(self, *headers: Any, optional: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__(*headers, **kwargs)
        self.optional = optional

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        hidden = self._to_hide(console, options)
        if not hidden:
            yield from super().__rich_console__(console, options)
            return
        columns, caption = self.columns, self.caption
        self.columns = [c for c in columns if c.header not in hidden]
        for index, column in enumerate(self.columns):
            column._index = index
        note = f"hidden at this width: {', '.join(hidden)} (see --json)"
        self.caption = f"{caption}\n{note}" if isinstance(caption, str) else note
        try:
            yield from super().__rich_console__(console, options)
        finally:
            self.columns, self.caption = columns, caption
            for index, column in enumerate(columns):
                column._index = index

    def _to_hide(self, console: Console, options: ConsoleOptions) -> list[str]:
        """The optional columns to leave out so every column's longest word fits."""
        width = options.max_width if self.width is None else self.width
        needs = {
            column.header: self._longest_word(i) + self._get_padding_width(i) + 1
            for i, column in enumerate(self.columns)
        }
        hidden: list[str] = []
        for header in self.optional:
            if sum(needs.values()) + 1 <= width:
                break
            if header in needs:
                del needs[header]
                hidden.append(header)
        return hidden

    def _calculate_column_widths(self, console: Console, options: ConsoleOptions) -> list[int]:
        widths: list[int] = super()._calculate_column_widths(console, options)
        maxima = [self._measure_column(console, options, c).maximum for c in self.columns]
        needs = [
            min(self._longest_word(i) + self._get_padding_width(i), most)
            for i, most in enumerate(maxima)
        ]
        # Spare room (width above a column's longest word) goes to the columns
        # that are short of theirs, most short first, so the total is unchanged.
        spare = [max(0, w - n) for w, n in zip(widths, needs, strict=True)]
        for i in sorted(range(len(widths)), key=lambda i: widths[i] - needs[i]):
            short = needs[i] - widths[i]
            for donor in sorted(range(len(widths)), key=lambda d: -spare[d]):
                if short <= 0 or spare[donor] <= 0 or donor == i:
                    continue
                moved = min(short, spare[donor])
                spare[donor] -= moved
                widths[donor] -= moved
                widths[i] += moved
                short -= moved
        return widths

    def _longest_word(self, index: int) -> int:
        column = self.columns[index]
        longest = 0
        for cell in (column.header, *column.cells):
            if isinstance(cell, str):
                try:
                    text = Text.from_markup(cell).plain
                except MarkupError:
                    text = cell
            elif isinstance(cell, Text):
                text = cell.plain
            else:
                continue
            longest = max(longest, longest_word(text))
        return longest
