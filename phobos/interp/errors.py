"""The error a kernel raises at run time in the interpreter."""

from __future__ import annotations

from phobos.diagnostics import CompileError, Diagnostic, Label

FAULT = "E0911"  # a kernel faulted in the interpreter


class InterpError(CompileError):
    """A run-time fault of the program (division by zero, an index past a tensor, ...).

    `span` is the source span of the statement or access that faulted, when known;
    `str()` puts its place first. It is a `CompileError` whose one diagnostic (E0911)
    is at that span, so an uncaught one prints as the compiler prints an error, at the
    kernel's own line, and without the interpreter's frames (`phobos.lang`'s hook).

    >>> str(InterpError("integer division by zero"))
    'integer division by zero'
    >>> InterpError("integer division by zero").diagnostics[0].code
    'E0911'
    """

    def __init__(self, message: str, span=None):
        Exception.__init__(self, message)
        self.message = message
        self.span = span

    @property
    def diagnostics(self) -> list[Diagnostic]:  # type: ignore[override]
        primary = Label(self.span, "the kernel stopped here") if self.span is not None else None
        return [
            Diagnostic.error(
                FAULT,
                self.message,
                primary,
                notes=("the interpreter ran the kernel on the CPU",),
            )
        ]

    def __str__(self) -> str:
        span = self.span
        if span is None:
            return self.message
        line, col = span.source.line_col(span.start)
        return f"{span.source.name}:{line}:{col}: {self.message}"
