"""What a scalar rule raises when a value has no meaning; the caller reports it at its span.

Each exception's `str()` is a message in the diagnostics' style (lowercase, code in
backticks, no trailing period), ready for a `Diagnostic`.
"""

from __future__ import annotations


class ScalarError(Exception):
    """Base of the errors the scalar rules raise."""


class DivisionByZero(ScalarError):
    """An integer `/` or `%` by zero (a float one gives an IEEE infinity or NaN instead).

    >>> from phobos.semantics import I32, fold_binary
    >>> fold_binary("/", 1, 0, I32)
    Traceback (most recent call last):
    ...
    phobos.semantics.errors.DivisionByZero: attempt to divide `1` by zero
    """


class ShiftOutOfRange(ScalarError):
    """A constant shifted by a negative count while folding exactly (no width to clamp to)."""


class BadOperand(ScalarError):
    """An operator or conversion the operand's type does not take (`u8 + u8`, `f32(true)`)."""
