"""The error a kernel raises at run time in the interpreter."""

from __future__ import annotations


class InterpError(Exception):
    """A run-time fault of the program (division by zero, an index past a tensor, ...).

    `span` is the statement's source span, when known; `str()` puts its place first.

    >>> str(InterpError("integer division by zero"))
    'integer division by zero'
    """

    def __init__(self, message: str, span=None):
        super().__init__(message)
        self.message = message
        self.span = span

    def __str__(self) -> str:
        span = self.span
        if span is None:
            return self.message
        line, col = span.source.line_col(span.start)
        return f"{span.source.name}:{line}:{col}: {self.message}"
