"""The operators of the AST on scalar values: what the constant folder computes and what
the interpreter computes per element, from one table.

Two stages fold, and differ only in how integers overflow:

- compile-time constants (literals, `@autotune` constants, sums of them) fold *exactly*,
  `exact=True`: `2147483647 + 1` is 2147483648 whatever the index width. The sum wraps
  (`to_index`) only where it becomes a run-time index, and is checked there first;
- every value computed at run time, in the interpreter or by a folder that simplifies
  run-time expressions, wraps at its type's width, `exact=False` (the default).

Floats round at their type's precision in both.

    >>> fold_binary("+", 2147483647, 1, I32), fold_binary("+", 2147483647, 1, I32, exact=True)
    (-2147483648, 2147483648)
    >>> fold_binary("/", -7, 2, I32), fold_binary("%", -7.5, 2.0, F32), fold_binary("<", 1, 2, I32)
    (-3, -1.5, True)
"""

from __future__ import annotations

from phobos.semantics import floats, integers
from phobos.semantics.convert import convert
from phobos.semantics.errors import BadOperand
from phobos.semantics.types import Scalar, operator_reason

Value = int | float | bool

_INT_BINARY = {
    "+": integers.add,
    "-": integers.sub,
    "*": integers.mul,
    "/": integers.div,
    "%": integers.rem,
    "<<": integers.shl,
    ">>": integers.shr,
    "&": integers.bit_and,
    "|": integers.bit_or,
    "^": integers.bit_xor,
}

_COMPARE = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


def fold_binary(op: str, a: Value, b: Value, t: Scalar, *, exact: bool = False) -> Value:
    """`a op b`, both operands values of `t` (the join of their types, converted first).

    Arithmetic and bitwise operators give a `t`; comparisons, `&&` and `||` a bool
    (a float comparison with a NaN is false, but `!=` true, as IEEE has it). An operator
    `t` does not take raises `BadOperand`; an integer divisor of zero `DivisionByZero`.

    >>> fold_binary("%", 7, -3, I32), fold_binary("<<", 1, 32, I32), fold_binary(">>", -16, 2, I64)
    (1, 0, -4)
    >>> fold_binary("+", 2048.0, 1.0, F16), fold_binary("&&", True, False, BOOL)
    (2048.0, False)
    >>> fold_binary("+", 1, 2, U8)
    Traceback (most recent call last):
    ...
    phobos.semantics.errors.BadOperand: no arithmetic on `u8`: it is storage, convert it first, as in `i32(x)`
    """
    reason = operator_reason(op, t)
    if reason is not None:
        raise BadOperand(reason)
    if op in _COMPARE:
        return _COMPARE[op](a, b)
    if op == "&&":
        return a and b
    if op == "||":
        return a or b
    if t.is_float:
        return floats.binary(op, a, b, t)
    return _INT_BINARY[op](a, b, None if exact else t.bits)


def fold_unary(op: str, a: Value, t: Scalar, *, exact: bool = False) -> Value:
    """`op a` for the unary `-`, `!` and `~`, `a` a value of `t`.

    >>> fold_unary("-", -2147483648, I32), fold_unary("-", -2147483648, I32, exact=True)
    (-2147483648, 2147483648)
    >>> fold_unary("-", 0.0, F32), fold_unary("~", 5, I32), fold_unary("!", True, BOOL)
    (-0.0, -6, False)
    """
    reason = operator_reason(op, t, unary=True)
    if reason is not None:
        raise BadOperand(reason)
    if op == "!":
        return not a
    if t.is_float:  # `-` only: the sign flips, a NaN's too, and no rounding is needed
        return -a
    bits = None if exact else t.bits
    return integers.neg(a, bits) if op == "-" else integers.bit_not(a, bits)


def fold_convert(value: Value, source: Scalar, target: Scalar) -> Value:
    """`target(value)`, `value` a value of `source`: see `convert`.

    >>> fold_convert(0.1, F64, F32), fold_convert(2**31, I64, I32)
    (0.10000000149011612, -2147483648)
    """
    return convert(value, source, target)


def to_index(value: int, width: int) -> int:
    """An exactly folded constant where it becomes a run-time index of `width` bits: it
    wraps, as the sum computed at run time would have.

    >>> to_index(2**31, 32), to_index(2**31, 64)
    (-2147483648, 2147483648)
    """
    return integers.wrap(value, width)


def index_fits(value: int, width: int) -> bool:
    """Whether an exactly folded constant is an index of `width` bits as it is, without
    wrapping; the checker may warn where it does not.

    >>> index_fits(2**31 - 1, 32), index_fits(2**31, 32), index_fits(2**31, 64)
    (True, False, True)
    """
    return -(1 << (width - 1)) <= value < 1 << (width - 1)
