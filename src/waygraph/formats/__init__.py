"""Plan file formats: JSON library, YAML, DOT, linear steps, JSON Schema.

Each format loads into the same :mod:`waygraph.model`. Use
:func:`waygraph.load_library` to read files; this package holds the codecs.
"""

from __future__ import annotations

from pathlib import Path

FORMAT_BY_SUFFIX = {
    ".json": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".dot": "dot",
    ".gv": "dot",
}

__all__ = ["FORMAT_BY_SUFFIX", "format_of"]


def format_of(path: str | Path) -> str | None:
    """The format name for a file path by its suffix, or None if not a plan file."""
    return FORMAT_BY_SUFFIX.get(Path(path).suffix.lower())
