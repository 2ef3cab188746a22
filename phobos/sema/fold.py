"""Constant folding for the checker: exact for index constants, in-type for the rest.

`phobos.semantics` holds the scalar rules; where it is not importable yet, the small
fallback here follows the same rules (C division and modulo, wrapping to the type).

    >>> fold_binary("/", -7, 2, "i32"), fold_binary("%", -7, 3, "i32")
    (-3, -1)
    >>> fold_binary("+", 2147483647, 1, "i32", exact=True)
    2147483648
"""

from __future__ import annotations

import math
import struct

INT_BITS = {"i8": 8, "i32": 32, "i64": 64, "u8": 8, "u16": 16, "u32": 32}


class FoldError(Exception):
    """A constant with no value (`1 / 0`); `str()` is the diagnostic's message."""


def wrap(value: int, type_name: str) -> int:
    """`value` wrapped into the integer type `type_name`.

    >>> wrap(128, "i8"), wrap(-1, "u8")
    (-128, 255)
    """
    bits = INT_BITS[type_name]
    value &= (1 << bits) - 1
    if not type_name.startswith("u") and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def round_float(value: float, type_name: str) -> float:
    """`value` rounded to the float type `type_name` (f64 unchanged).

    >>> round_float(0.1, "f32")
    0.10000000149011612
    """
    if type_name == "f64" or math.isnan(value) or math.isinf(value):
        return value
    if type_name == "f32":
        try:
            return struct.unpack("f", struct.pack("f", value))[0]
        except OverflowError:
            return math.copysign(math.inf, value)
    if type_name == "f16":
        try:
            return struct.unpack("e", struct.pack("e", value))[0]
        except OverflowError:
            return math.copysign(math.inf, value)
    if type_name == "bf16":
        bits = struct.unpack("I", struct.pack("f", round_float(value, "f32")))[0]
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        return struct.unpack("f", struct.pack("I", bits))[0]
    return value


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def fold_binary(op: str, a, b, type_name: str, *, exact: bool = False):
    """`a op b` of two constants of `type_name`; comparisons give a bool.

    Integers wrap to the type unless `exact` (an index constant folds exactly).
    """
    if op in ("==", "!=", "<", "<=", ">", ">="):
        return {
            "==": a == b,
            "!=": a != b,
            "<": a < b,
            "<=": a <= b,
            ">": a > b,
            ">=": a >= b,
        }[op]
    if op == "&&":
        return bool(a and b)
    if op == "||":
        return bool(a or b)
    is_float = isinstance(a, float) or isinstance(b, float) or type_name.startswith(("f", "bf"))
    if is_float:
        a, b = float(a), float(b)
        if op == "+":
            r = a + b
        elif op == "-":
            r = a - b
        elif op == "*":
            r = a * b
        elif op == "/":
            if b == 0.0:
                r = (
                    math.nan
                    if a == 0.0 or math.isnan(a)
                    else math.copysign(math.inf, a) * (math.copysign(1.0, b))
                )
            else:
                r = a / b
        elif op == "%":
            r = math.nan if b == 0.0 else math.fmod(a, b)
        else:
            raise FoldError(f"no `{op}` on floats")
        return round_float(r, type_name)
    if op in ("/", "%") and b == 0:
        raise FoldError(
            f"attempt to {'divide' if op == '/' else 'take the remainder of'} `{a}` by zero"
        )
    if op == "+":
        r = a + b
    elif op == "-":
        r = a - b
    elif op == "*":
        r = a * b
    elif op == "/":
        r = _trunc_div(a, b)
    elif op == "%":
        r = a - _trunc_div(a, b) * b
    elif op == "&":
        r = a & b
    elif op == "|":
        r = a | b
    elif op == "^":
        r = a ^ b
    elif op in ("<<", ">>"):
        if b < 0:
            raise FoldError(f"attempt to shift `{a}` by a negative count `{b}`")
        if not exact:
            b &= INT_BITS.get(type_name, 32) - 1
        r = a << b if op == "<<" else a >> b
    else:
        raise FoldError(f"no `{op}` on integers")
    return r if exact else wrap(r, type_name)


def fold_unary(op: str, a, type_name: str, *, exact: bool = False):
    """`op a` of a constant."""
    if op == "!":
        return not a
    if op == "-":
        if isinstance(a, float):
            return -a
        return -a if exact else wrap(-a, type_name)
    if op == "~":
        return ~a if exact else wrap(~a, type_name)
    raise FoldError(f"no unary `{op}`")


def fold_convert(value, type_name: str):
    """`type_name(value)`: float to integer truncates, to float rounds to nearest.

    >>> fold_convert(-2.7, "i32"), fold_convert(300, "i8")
    (-2, 44)
    """
    if type_name in INT_BITS:
        if isinstance(value, float):
            if math.isnan(value) or math.isinf(value):
                raise FoldError(f"`{value}` has no integer value")
            value = int(value)  # truncates toward zero
        return wrap(int(value), type_name)
    return round_float(float(value), type_name)


# The shared scalar rules, when they are importable, replace the fallback above.
try:
    from phobos import semantics as _semantics
    from phobos.semantics.errors import ScalarError as _ScalarError
except ImportError:  # pragma: no cover - only while phobos.semantics is being written
    _semantics = None

if _semantics is not None:
    _fallback_binary, _fallback_unary, _fallback_convert = fold_binary, fold_unary, fold_convert

    def fold_binary(op: str, a, b, type_name: str, *, exact: bool = False):  # noqa: F811
        """`a op b` of two constants of `type_name` (`phobos.semantics.fold_binary`)."""
        try:
            return _semantics.fold_binary(op, a, b, _semantics.scalar(type_name), exact=exact)
        except _ScalarError as exc:
            raise FoldError(str(exc)) from None

    def fold_unary(op: str, a, type_name: str, *, exact: bool = False):  # noqa: F811
        """`op a` of a constant (`phobos.semantics.fold_unary`)."""
        try:
            return _semantics.fold_unary(op, a, _semantics.scalar(type_name), exact=exact)
        except _ScalarError as exc:
            raise FoldError(str(exc)) from None

    def fold_convert(value, type_name: str):  # noqa: F811
        """`type_name(value)` (`phobos.semantics.fold_convert`)."""
        if isinstance(value, bool):
            source = "bool"
        elif isinstance(value, float):
            source = "f64"
        else:
            source = "i64"
        try:
            return _semantics.fold_convert(
                value, _semantics.scalar(source), _semantics.scalar(type_name)
            )
        except _ScalarError as exc:
            raise FoldError(str(exc)) from None
        except (OverflowError, ValueError):
            return _fallback_convert(value, type_name)
