"""Source files and spans: where every node and every diagnostic points.

A `Span` is a byte range into one `SourceFile` (UTF-8 bytes, so it agrees with the
offsets Python's own `ast` reports). Lines and columns are computed only when a
diagnostic is rendered.

    >>> src = SourceFile("k.ph", "kernel k() {\\n  return\\n}\\n")
    >>> span = src.span(15, 21)
    >>> src.line_col(span.start)
    (2, 3)
    >>> span.text
    'return'
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass


class SourceFile:
    """One file's text, with its name as diagnostics should show it.

    Compared by identity: two reads of the same path are two files.
    """

    def __init__(self, name: str, text: str):
        self.name = name
        self.text = text
        self.data = text.encode("utf-8")
        # Byte offset of the start of every line, for line/column lookup.
        self._line_starts = [0]
        for i, byte in enumerate(self.data):
            if byte == 0x0A:
                self._line_starts.append(i + 1)
        self._ascii = len(self.data) == len(text)
        self._char_to_byte: list[int] | None = None

    def __repr__(self) -> str:
        return f"SourceFile({self.name!r})"

    @classmethod
    def read(cls, path: str, name: str | None = None) -> SourceFile:
        """Read a file as UTF-8 (undecodable bytes become U+FFFD, never an exception)."""
        with open(path, "rb") as handle:
            raw = handle.read()
        return cls(name or path, raw.decode("utf-8", errors="replace"))

    def span(self, start: int, end: int) -> Span:
        """The span of bytes `start..end` of this file, clamped to the file."""
        size = len(self.data)
        start = max(0, min(start, size))
        end = max(start, min(end, size))
        return Span(self, start, end)

    def byte_offset(self, char_index: int) -> int:
        """The byte offset of a character index into `text`."""
        if self._ascii:
            return char_index
        if self._char_to_byte is None:
            table = [0]
            for ch in self.text:
                table.append(table[-1] + len(ch.encode("utf-8", errors="replace")))
            self._char_to_byte = table
        return self._char_to_byte[max(0, min(char_index, len(self._char_to_byte) - 1))]

    @property
    def line_count(self) -> int:
        return len(self._line_starts)

    def line_index(self, offset: int) -> int:
        """The 0-based line holding byte `offset`."""
        return bisect.bisect_right(self._line_starts, offset) - 1

    def line_start(self, line_index: int) -> int:
        return self._line_starts[line_index]

    def line_text(self, line_index: int) -> str:
        """Line `line_index` (0-based) without its newline."""
        start = self._line_starts[line_index]
        end = (
            self._line_starts[line_index + 1] - 1
            if line_index + 1 < len(self._line_starts)
            else len(self.data)
        )
        return self.data[start:end].decode("utf-8", errors="replace").rstrip("\r")

    def line_col(self, offset: int) -> tuple[int, int]:
        """1-based line and 1-based column (in characters) of byte `offset`."""
        line = self.line_index(offset)
        start = self._line_starts[line]
        col = len(self.data[start:offset].decode("utf-8", errors="replace")) + 1
        return line + 1, col


@dataclass(frozen=True)
class Span:
    """Bytes `start..end` of `source`."""

    source: SourceFile
    start: int
    end: int

    @property
    def text(self) -> str:
        return self.source.data[self.start : self.end].decode("utf-8", errors="replace")

    def to(self, other: Span) -> Span:
        """The span from the start of `self` to the end of `other`."""
        return Span(self.source, min(self.start, other.start), max(self.end, other.end))

    def __repr__(self) -> str:
        return f"Span({self.source.name}:{self.start}..{self.end})"


class SourceMap:
    """Maps byte ranges of a generated file back to spans of the file the user wrote.

    The Python front end prints the Phobos its kernels spell; every node printed
    records `(generated range, original span)`. A diagnostic found in the generated
    text is then reported at the smallest recorded range that holds it.
    """

    def __init__(self, generated: SourceFile, original: SourceFile):
        self.generated = generated
        self.original = original
        self.entries: list[tuple[int, int, int, int]] = []

    def add(self, gen_start: int, gen_end: int, orig: Span) -> None:
        self.entries.append((gen_start, gen_end, orig.start, orig.end))

    def lookup(self, span: Span) -> Span:
        """The original span for a span of the generated file (itself if unmapped)."""
        if span.source is not self.generated:
            return span
        best: tuple[int, int, int, int] | None = None
        for entry in self.entries:
            gs, ge, _, _ = entry
            if gs <= span.start and span.end <= ge:
                if best is None or (ge - gs) < (best[1] - best[0]):
                    best = entry
        if best is None:
            return span
        return self.original.span(best[2], best[3])

    def to_json(self) -> dict:
        return {
            "version": 1,
            "generated": self.generated.name,
            "original": self.original.name,
            "entries": [list(e) for e in self.entries],
        }
