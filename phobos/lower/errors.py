"""The lowering's refusals: a construct it cannot lower yet, at the user's line.

>>> err = NotLowered("`dot`")
>>> err.message, err.code
('`dot` is not lowered yet', 'E0500')
"""

from __future__ import annotations

from phobos.diagnostics.diagnostic import Diagnostic, Label


class NotLowered(Exception):
    """Raised where a construct has no lowering yet (E0500) or breaks a limit of one."""

    def __init__(self, what: str, span=None, *, code: str = "E0500", message: str | None = None,
                 note: str | None = None, help: str | None = None):  # fmt: skip
        self.what = what
        self.span = span
        self.code = code
        self.message = message or f"{what} is not lowered yet"
        self.note = note
        self.help = help
        super().__init__(self.message)

    def diagnostic(self, fallback_span=None) -> Diagnostic:
        span = self.span or fallback_span
        label = Label(span, "here") if span is not None else None
        notes = (self.note,) if self.note else ()
        helps = (self.help,) if self.help else ()
        return Diagnostic.error(self.code, self.message, label, notes=notes, help=helps)
