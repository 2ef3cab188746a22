"""Rendering diagnostics: the rustc layout for people, one JSON object per line for tools.

`render_human` lays a diagnostic out as rustc lays out its own: a header, the
` --> file:line:col` arrow, a gutter as wide as the largest line number shown, the
source lines with `^` under the primary span and `-` under secondary ones, and the
`= note:` / `= help:` lines.

    >>> from phobos.source import SourceFile
    >>> from phobos.diagnostics.diagnostic import Diagnostic, Label
    >>> src = SourceFile("k.ph", "let y = x + 1\\n")
    >>> d = Diagnostic.error("E0012", "cannot find value `x` in this scope",
    ...                      Label(src.span(8, 9), "not found in this scope"))
    >>> print(render_human([d]), end="")
    error[E0012]: cannot find value `x` in this scope
     --> k.ph:1:9
      |
    1 | let y = x + 1
      |         ^ not found in this scope
    <BLANKLINE>

Columns are counted in characters; on screen a tab is four columns (as rustc draws
it) and a wide East Asian character two, so carets stay under what they point at.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from phobos.diagnostics.diagnostic import Diagnostic, Label
from phobos.source import SourceFile, Span

TAB_WIDTH = 4
# A multi-line span longer than this many lines shows only its first and last lines.
MAX_MULTILINE_SHOWN = 6

# ANSI styles, as rustc colours its output.
_RESET = "\x1b[0m"
_STYLES = {
    "error": "\x1b[1m\x1b[31m",
    "warning": "\x1b[1m\x1b[33m",
    "note": "\x1b[1m\x1b[32m",
    "help": "\x1b[1m\x1b[36m",
    "gutter": "\x1b[1m\x1b[34m",
    "secondary": "\x1b[1m\x1b[34m",
    "bold": "\x1b[1m",
}


# ---------------------------------------------------------------------------
# Public API


def render_human(diags: Iterable[Diagnostic], color: bool = False) -> str:
    """Every diagnostic in the rustc layout, each followed by a blank line.

    The summary line (`error: aborting due to 2 previous errors`) is not part of it:
    see `summary`.
    """
    out = []
    for diag in diags:
        out.append(_render_one(diag, color))
        out.append("\n")
    return "".join(out)


# The layout of `render_json`'s objects; documented in docs/tools.md.
JSON_VERSION = 1


def render_json(diags: Iterable[Diagnostic]) -> str:
    """One JSON object per diagnostic, one per line.

    Each object starts with `"version": JSON_VERSION`, the version of this layout, which
    grows only when a field changes meaning or goes (a new field leaves it as it is).
    Lines and columns are 1-based, columns count characters, `end_column` is the
    column just past the span; `byte_start`/`byte_end` are UTF-8 offsets. A
    diagnostic without a span has null location fields.

        >>> from phobos.source import SourceFile
        >>> src = SourceFile("k.ph", "x\\n")
        >>> d = Diagnostic.error("E0001", "bad", Label(src.span(0, 1), "here"))
        >>> json.loads(render_json([d]))["column"]
        1
    """
    lines = []
    for diag in diags:
        lines.append(json.dumps(diagnostic_to_dict(diag), ensure_ascii=False))
    return "".join(line + "\n" for line in lines)


def diagnostic_to_dict(diag: Diagnostic) -> dict:
    """The JSON form of one diagnostic, as a dict (see `render_json`)."""
    where = _location(diag.primary.span) if diag.primary else None
    labels = []
    if diag.primary is not None:
        labels.append(_label_dict(diag.primary, True))
    labels.extend(_label_dict(lbl, False) for lbl in diag.secondary)
    return {
        "version": JSON_VERSION,
        "severity": diag.severity,
        "code": diag.code,
        "message": diag.message,
        "file": where["file"] if where else None,
        "line": where["line"] if where else None,
        "column": where["column"] if where else None,
        "end_line": where["end_line"] if where else None,
        "end_column": where["end_column"] if where else None,
        "byte_start": diag.primary.span.start if diag.primary else None,
        "byte_end": diag.primary.span.end if diag.primary else None,
        "labels": labels,
        "notes": list(diag.notes),
        "help": list(diag.help),
    }


def summary(diags: Iterable[Diagnostic], color: bool = False) -> str:
    """rustc's closing line: `error: aborting due to 2 previous errors`, or "" if no error.

    >>> summary([])
    ''
    """
    diags = list(diags)
    errors = sum(1 for d in diags if d.severity == "error")
    warnings = sum(1 for d in diags if d.severity == "warning")
    warned = f"{warnings} warning{'s' if warnings != 1 else ''} emitted"
    if errors:
        text = f"aborting due to {errors} previous error{'s' if errors != 1 else ''}"
        if warnings:
            text += f"; {warned}"
        return _paint("error", "error", color) + _paint(f": {text}", "bold", color) + "\n"
    if warnings:
        return _paint("warning", "warning", color) + _paint(f": {warned}", "bold", color) + "\n"
    return ""


# ---------------------------------------------------------------------------
# Positions


def _location(span: Span) -> dict:
    line, col = span.source.line_col(span.start)
    end_line, end_col = span.source.line_col(span.end)
    return {
        "file": span.source.name,
        "line": line,
        "column": col,
        "end_line": end_line,
        "end_column": end_col,
    }


def _label_dict(label: Label, primary: bool) -> dict:
    out = _location(label.span)
    out["message"] = label.message
    out["primary"] = primary
    return out


def _char_width(ch: str) -> int:
    if ch == "\t":
        return TAB_WIDTH
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def _display(text: str) -> str:
    """A source line as drawn: tabs expanded to a fixed four spaces, as rustc does."""
    return text.replace("\t", " " * TAB_WIDTH)


def _column(text: str, chars: int) -> int:
    """The display column (0-based) of character `chars` of a line."""
    width = sum(_char_width(ch) for ch in text[:chars])
    return width + max(0, chars - len(text))


# ---------------------------------------------------------------------------
# Marks: labels resolved to lines and display columns


@dataclass
class _Mark:
    start_line: int  # 0-based line index
    start_col: int  # display column, 0-based
    end_line: int
    end_col: int  # display column just past the last character
    primary: bool
    message: str
    depth: int = 0  # the column pair a multi-line mark draws in
    slash: bool = False  # a multi-line mark that starts at its line's indentation

    @property
    def multiline(self) -> bool:
        return self.end_line != self.start_line


def _mark(label: Label, primary: bool) -> _Mark:
    span = label.span
    src = span.source
    start_line, start_char = src.line_col(span.start)
    end_line, end_char = src.line_col(span.end)
    start_line -= 1
    end_line -= 1
    start_char -= 1
    end_char -= 1
    if end_line > start_line and end_char == 0:
        # A span that ends just after a newline ends on the line it covered.
        end_line -= 1
        end_char = len(src.line_text(end_line)) + 1
    start_text = src.line_text(start_line)
    end_text = src.line_text(end_line)
    start_col = _column(start_text, start_char)
    end_col = _column(end_text, end_char)
    if end_line == start_line:
        end_col = max(end_col, start_col + 1)  # an empty span still gets one caret
    else:
        end_col = max(end_col, 1)
    mark = _Mark(start_line, start_col, end_line, end_col, primary, label.message)
    indent = len(start_text) - len(start_text.lstrip())
    mark.slash = start_col <= _column(start_text, indent)
    return mark


# ---------------------------------------------------------------------------
# Rows: a row is a list of (character, style) cells


class _Row:
    def __init__(self) -> None:
        self.cells: list[tuple[str, str | None]] = []

    def put(self, col: int, text: str, style: str | None = None) -> None:
        while len(self.cells) < col + len(text):
            self.cells.append((" ", None))
        for i, ch in enumerate(text):
            self.cells[col + i] = (ch, style)

    def render(self, color: bool) -> str:
        cells = list(self.cells)
        while cells and cells[-1][0] == " ":
            cells.pop()
        out = []
        current: str | None = None
        for ch, style in cells:
            style = style if color else None
            if style != current:
                if current is not None:
                    out.append(_RESET)
                if style is not None:
                    out.append(_STYLES[style])
                current = style
            out.append(ch)
        if current is not None:
            out.append(_RESET)
        return "".join(out)


def _paint(text: str, style: str, color: bool) -> str:
    return f"{_STYLES[style]}{text}{_RESET}" if color and text else text


# ---------------------------------------------------------------------------
# The layout


def _render_one(diag: Diagnostic, color: bool) -> str:
    sev = diag.severity
    header = _paint(sev + (f"[{diag.code}]" if diag.code else ""), sev, color)
    header += _paint(f": {diag.message}", "bold", color)
    lines = [header]

    labels: list[tuple[Label, bool]] = []
    if diag.primary is not None:
        labels.append((diag.primary, True))
    labels.extend((lbl, False) for lbl in diag.secondary)

    # Group labels by file, the primary's file first, others in order of appearance.
    files: list[SourceFile] = []
    by_file: dict[int, list[_Mark]] = {}
    anchors: dict[int, Span] = {}
    for label, primary in labels:
        src = label.span.source
        if id(src) not in by_file:
            files.append(src)
            by_file[id(src)] = []
            anchors[id(src)] = label.span
        by_file[id(src)].append(_mark(label, primary))

    shown = {id(src): _shown_lines(by_file[id(src)]) for src in files}
    width = max(
        (len(str(line + 1)) for rows in shown.values() for line in rows if line is not None),
        default=1,
    )
    pad = " " * width

    def gutter_row() -> _Row:
        row = _Row()
        row.put(width + 1, "|", "gutter")
        return row

    for n, src in enumerate(files):
        anchor = anchors[id(src)]
        line, col = src.line_col(anchor.start)
        arrow = "-->" if n == 0 else ":::"
        if n > 0:
            lines.append(gutter_row().render(color))
        lines.append(_paint(f"{pad}{arrow}", "gutter", color) + f" {src.name}:{line}:{col}")
        lines.append(gutter_row().render(color))
        for row in _snippet(src, by_file[id(src)], shown[id(src)], width):
            lines.append(row.render(color))

    extras = [("note", text) for text in diag.notes] + [("help", text) for text in diag.help]
    if extras:
        lines.append(gutter_row().render(color))
        for kind, text in extras:
            head = _paint(f"{pad} =", "gutter", color) + " " + _paint(kind, "bold", color) + ": "
            hang = " " * (width + 5 + len(kind))
            body = text.split("\n")
            lines.append(head + body[0])
            lines.extend((hang + more) if more else "" for more in body[1:])
    return "".join(line + "\n" for line in lines)


def _shown_lines(marks: list[_Mark]) -> list[int | None]:
    """The line indices a snippet shows, in order; None stands for an elided gap."""
    wanted: set[int] = set()
    for m in marks:
        if not m.multiline:
            wanted.add(m.start_line)
        elif m.end_line - m.start_line + 1 <= MAX_MULTILINE_SHOWN:
            wanted.update(range(m.start_line, m.end_line + 1))
        else:
            wanted.update(range(m.start_line, m.start_line + 3))
            wanted.update((m.end_line - 1, m.end_line))
    ordered = sorted(wanted)
    out: list[int | None] = []
    for line in ordered:
        if out:
            prev = out[-1]
            assert prev is not None
            if line - prev == 2:
                out.append(prev + 1)  # a gap of one line is cheaper shown than elided
            elif line - prev > 2:
                out.append(None)
        out.append(line)
    return out


def _snippet(src: SourceFile, marks: list[_Mark], shown: list[int | None], width: int):
    """The rows of one file's snippet: source lines and the annotations under them."""
    multi = [m for m in marks if m.multiline]
    # Outer spans take the leftmost columns: order by start, longer first.
    multi.sort(key=lambda m: (m.start_line, m.start_col, -m.end_line))
    for depth, m in enumerate(multi):
        m.depth = depth
    area = 2 * len(multi)  # columns between the gutter and the source text
    text_at = width + 3 + area

    def style(m: _Mark) -> str:
        return "error" if m.primary else "secondary"

    def new_row(line_number: int | None = None) -> _Row:
        row = _Row()
        if line_number is not None:
            row.put(0, str(line_number), "gutter")
        row.put(width + 1, "|", "gutter")
        return row

    def verticals(row: _Row, open_marks: Iterable[_Mark]) -> None:
        for m in open_marks:
            row.put(width + 3 + 2 * m.depth, "|", style(m))

    previous = -1
    for line in shown:
        if line is None:
            # Elided lines inside a multi-line span keep its vertical line going.
            row = _elision()
            verticals(row, [m for m in multi if m.start_line <= previous < m.end_line])
            yield row
            continue
        previous = line
        text = src.line_text(line)
        row = new_row(line + 1)
        for m in multi:
            if m.start_line == line and m.slash:
                row.put(width + 3 + 2 * m.depth, "/", style(m))
            elif m.start_line < line <= m.end_line:
                row.put(width + 3 + 2 * m.depth, "|", style(m))
        row.put(text_at, _display(text))
        yield row

        # Multi-line spans still open below this line, and whether each is drawn yet.
        def still_open(exclude: set[int], line: int = line) -> list[_Mark]:
            return [
                m
                for m in multi
                if id(m) not in exclude
                and m.start_line <= line <= m.end_line
                and (m.start_line < line or m.slash)
            ]

        ended: set[int] = set()
        # 1. Multi-line spans ending here, innermost first: `|___^ label`.
        for m in sorted((m for m in multi if m.end_line == line), key=lambda m: -m.depth):
            row = new_row()
            verticals(row, [o for o in still_open(ended) if o.depth < m.depth])
            col = width + 3 + 2 * m.depth
            caret = text_at + m.end_col - 1
            row.put(col, "|", style(m))
            row.put(col + 1, "_" * max(0, caret - col - 1), style(m))
            row.put(caret, "^" if m.primary else "-", style(m))
            if m.message:
                row.put(caret + 2, m.message, style(m))
            ended.add(id(m))
            yield row
        # 2. Single-line spans on this line.
        singles = sorted(
            (m for m in marks if not m.multiline and m.start_line == line),
            key=lambda m: (m.start_col, m.end_col),
        )
        if singles:
            yield from _underlines(singles, still_open(ended), text_at, new_row, verticals, style)
        # 3. Multi-line spans starting here (not at the indentation): ` ____^`.
        for m in sorted((m for m in multi if m.start_line == line and not m.slash), key=_depth):
            row = new_row()
            verticals(row, [o for o in still_open(ended) if o.depth < m.depth])
            col = width + 3 + 2 * m.depth
            caret = text_at + m.start_col
            row.put(col + 1, "_" * max(0, caret - col - 1), style(m))
            row.put(caret, "^" if m.primary else "-", style(m))
            m.slash = True  # from here on it is drawn as open
            yield row


def _depth(m: _Mark) -> int:
    return m.depth


def _elision() -> _Row:
    row = _Row()
    row.put(0, "...", "gutter")
    return row


def _underlines(singles, open_marks, text_at, new_row, verticals, style):
    """The underline row for the single-line spans of one line, then hanging labels.

    The rightmost label is written after its underline when nothing else extends past
    it; the others hang below on `|` connectors, rightmost first (rustc's layout).
    """
    row = new_row()
    verticals(row, open_marks)
    # Secondary underlines first, so a primary caret wins where they overlap.
    for m in sorted(singles, key=lambda m: m.primary):
        row.put(
            text_at + m.start_col, ("^" if m.primary else "-") * (m.end_col - m.start_col), style(m)
        )
    last = singles[-1]
    inline = last if last.message and last.end_col >= max(m.end_col for m in singles) else None
    if inline is not None:
        row.put(text_at + inline.end_col + 1, inline.message, style(inline))
    yield row

    hanging = [m for m in singles if m.message and m is not inline]
    if not hanging:
        return
    row = new_row()
    verticals(row, open_marks)
    for m in hanging:
        row.put(text_at + m.start_col, "|", style(m))
    yield row
    for i in range(len(hanging) - 1, -1, -1):
        row = new_row()
        verticals(row, open_marks)
        for m in hanging[:i]:
            row.put(text_at + m.start_col, "|", style(m))
        m = hanging[i]
        row.put(text_at + m.start_col, m.message, style(m))
        yield row
