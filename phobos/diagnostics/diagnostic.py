"""Diagnostics as data: what went wrong, where, and how to fix it.

A `Diagnostic` is built by a stage and rendered late, by `render.human` or
`render.json`. Message style follows rustc's guide: lowercase, no trailing period,
code in backticks, the smallest span, labels that read alone, the fix in `help`.

    >>> from phobos.source import SourceFile
    >>> src = SourceFile("k.ph", "let x = 1 ** 2\\n")
    >>> d = Diagnostic.error("E0001", "unexpected `*`", Label(src.span(11, 12), "not an operand"))
    >>> d.code, d.severity
    ('E0001', 'error')
"""

from __future__ import annotations

from dataclasses import dataclass, field

from phobos.source import Span


@dataclass(frozen=True)
class Label:
    """A span with a short message that reads on its own."""

    span: Span
    message: str = ""


@dataclass(frozen=True)
class Diagnostic:
    """One error or warning, at `primary`, with optional context."""

    severity: str  # "error" | "warning"
    code: str | None
    message: str
    primary: Label | None
    secondary: tuple[Label, ...] = ()
    notes: tuple[str, ...] = ()
    help: tuple[str, ...] = ()

    @classmethod
    def error(
        cls,
        code: str | None,
        message: str,
        primary: Label | None,
        *,
        secondary: tuple[Label, ...] | list[Label] = (),
        notes: tuple[str, ...] | list[str] = (),
        help: tuple[str, ...] | list[str] | str = (),
    ) -> Diagnostic:
        if isinstance(help, str):
            help = (help,)
        return cls("error", code, message, primary, tuple(secondary), tuple(notes), tuple(help))

    @classmethod
    def warning(
        cls,
        code: str | None,
        message: str,
        primary: Label | None,
        *,
        notes: tuple[str, ...] | list[str] = (),
        help: tuple[str, ...] | list[str] | str = (),
    ) -> Diagnostic:
        if isinstance(help, str):
            help = (help,)
        return cls("warning", code, message, primary, (), tuple(notes), tuple(help))

    @property
    def span(self) -> Span | None:
        return self.primary.span if self.primary else None

    def mapped(self, remap) -> Diagnostic:
        """This diagnostic with every span passed through `remap(span) -> span`."""

        def label(lbl: Label | None) -> Label | None:
            return None if lbl is None else Label(remap(lbl.span), lbl.message)

        return Diagnostic(
            self.severity,
            self.code,
            self.message,
            label(self.primary),
            tuple(label(s) for s in self.secondary),
            self.notes,
            self.help,
        )


class CompileError(Exception):
    """Raised to stop a stage; carries the diagnostics it found.

    Front ends collect diagnostics and raise this once, at the end of a stage, so one
    run shows every independent error.
    """

    def __init__(self, diagnostics: list[Diagnostic]):
        self.diagnostics = list(diagnostics)
        first = self.diagnostics[0].message if self.diagnostics else "compile error"
        super().__init__(first)


@dataclass
class DiagnosticSink:
    """Collects diagnostics for one stage."""

    items: list[Diagnostic] = field(default_factory=list)

    def add(self, diagnostic: Diagnostic) -> None:
        self.items.append(diagnostic)

    def error(self, code: str | None, message: str, span: Span, label: str = "", **kw) -> None:
        self.items.append(Diagnostic.error(code, message, Label(span, label), **kw))

    @property
    def has_errors(self) -> bool:
        return any(d.severity == "error" for d in self.items)

    def raise_if_errors(self) -> None:
        if self.has_errors:
            raise CompileError(self.items)
