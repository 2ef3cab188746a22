"""Constant folding for the checker: exact for index constants, in-type for the rest.

A thin adapter over `phobos.semantics`, where the scalar rules live: it takes type
names, as the checker holds them, and turns a constant with no value into `FoldError`.

    >>> fold_binary("/", -7, 2, "i32"), fold_binary("%", -7, 3, "i32")
    (-3, -1)
    >>> fold_binary("+", 2147483647, 1, "i32", exact=True)
    2147483648
"""

from __future__ import annotations

from phobos import semantics
from phobos.semantics.errors import ScalarError


class FoldError(Exception):
    """A constant with no value (`1 / 0`); `str()` is the diagnostic's message."""


def wrap(value: int, type_name: str) -> int:
    """`value` wrapped into the integer type `type_name`.

    >>> wrap(128, "i8"), wrap(-1, "u8")
    (-128, 255)
    """
    t = semantics.scalar(type_name)
    if t.kind == "unsigned":
        return semantics.wrap_unsigned(value, t.bits)
    return semantics.wrap(value, t.bits)


def round_float(value: float, type_name: str) -> float:
    """`value` rounded to the float type `type_name` (f64 unchanged).

    >>> round_float(0.1, "f32")
    0.10000000149011612
    """
    return semantics.round_to(value, semantics.scalar(type_name))


def fold_binary(op: str, a, b, type_name: str, *, exact: bool = False):
    """`a op b` of two constants of `type_name` (`phobos.semantics.fold_binary`)."""
    try:
        return semantics.fold_binary(op, a, b, semantics.scalar(type_name), exact=exact)
    except ScalarError as exc:
        raise FoldError(str(exc)) from None


def fold_unary(op: str, a, type_name: str, *, exact: bool = False):
    """`op a` of a constant (`phobos.semantics.fold_unary`)."""
    try:
        return semantics.fold_unary(op, a, semantics.scalar(type_name), exact=exact)
    except ScalarError as exc:
        raise FoldError(str(exc)) from None


def fold_convert(value, type_name: str):
    """`type_name(value)` (`phobos.semantics.fold_convert`)."""
    if isinstance(value, bool):
        source = "bool"
    elif isinstance(value, float):
        source = "f64"
    else:
        source = "i64"
    try:
        return semantics.fold_convert(value, semantics.scalar(source), semantics.scalar(type_name))
    except ScalarError as exc:
        raise FoldError(str(exc)) from None
    except (OverflowError, ValueError):
        raise FoldError(f"`{value}` has no value as `{type_name}`") from None
