"""Conversions between scalar types (SPEC.md "T(x) conversion") and what a literal reads as.

>>> convert(-2.7, F32, I32), convert(300, I32, I8), convert(-1, I32, U8)
(-2, 44, 255)
>>> literal_float("0.1"), literal_int(4294967295, 32)
(0.10000000149011612, -1)
"""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation
from fractions import Fraction

from phobos.semantics import floats, integers
from phobos.semantics.errors import BadOperand
from phobos.semantics.types import F32, Scalar


def conversion_reason(source: Scalar, target: Scalar) -> str | None:
    """Why `target(x)` of an `x` of type `source` is refused, or None when it converts.

    bool converts to nothing and nothing converts to it; the unsigned types are storage,
    which a store writes (see `convert`) but no `u8(x)` spells.

    >>> conversion_reason(F32, BOOL)
    'no conversion from `f32` to `bool`: compare instead, as in `x != 0`'
    >>> conversion_reason(BOOL, I32)
    'no conversion from `bool` to `i32`: select instead, as in `where(c, 1, 0)`'
    >>> conversion_reason(I32, U8)
    'no conversion to `u8`: it is storage, store the value into a `u8` tensor or tile'
    >>> conversion_reason(U8, F32) is None
    True
    """
    if source.is_bool and target.is_bool:
        return None
    if target.is_bool:
        return f"no conversion from `{source}` to `bool`: compare instead, as in `x != 0`"
    if source.is_bool:
        return f"no conversion from `bool` to `{target}`: select instead, as in `where(c, 1, 0)`"
    if target.is_unsigned and source != target:
        return (
            f"no conversion to `{target}`: it is storage, "
            f"store the value into a `{target}` tensor or tile"
        )
    return None


def convert(value: int | float | bool, source: Scalar, target: Scalar) -> int | float | bool:
    """`value`, of type `source`, as a value of type `target`.

    - float to float rounds to nearest, ties to even;
    - integer to float is a signed conversion, rounded to nearest once (an i64 past 2**53
      does not go through an f64 first);
    - float to integer truncates toward zero and, as PTX `cvt.rzi` does, saturates: a value
      past the range, an infinity included, gives the nearest end, and NaN gives 0;
    - integer to integer keeps the low bits: a signed target sign-extends them (`i8`), an
      unsigned one zero-extends them (`u8`, `u16`, `u32`, what a store writes and a read
      gives back);
    - bool converts to and from nothing: `BadOperand`.

    >>> convert(2.5, F64, F16), convert(16777217, I32, F32), convert(-7.9, F64, I8)
    (2.5, 16777216.0, -7)
    >>> convert(1e10, F32, I32), convert(-math.inf, F32, I8), convert(math.nan, F32, I32)
    (2147483647, -128, 0)
    >>> convert(-3.5, F32, U8), convert(200, U8, I8), convert(200, U8, I32)
    (0, -56, 200)
    """
    if source.is_bool or target.is_bool:
        if source.is_bool and target.is_bool:
            return bool(value)
        raise BadOperand(conversion_reason(source, target))
    if target.is_float:
        if source.is_float:
            return floats.round_to(value, target)
        return floats.round_exact(value, target)
    if source.is_float:
        return float_to_int(value, target)
    if target.is_signed:
        return integers.wrap(value, target.bits)
    return integers.wrap_unsigned(value, target.bits)


def float_to_int(x: float, target: Scalar) -> int:
    """`x` truncated toward zero into the integer type `target`, saturating; NaN gives 0.

    >>> float_to_int(-0.99, I32), float_to_int(3e9, I32), float_to_int(-3e9, I64)
    (0, 2147483647, -3000000000)
    """
    if math.isnan(x):
        return 0
    if math.isinf(x):
        return target.hi if x > 0 else target.lo
    return min(max(math.trunc(x), target.lo), target.hi)


# -- literals -----------------------------------------------------------------------------


def literal_float(literal: str | float) -> float:
    """The value of a float literal, an f32 (SPEC.md "Types"), given its text or its value.

    From the text the decimal is rounded once, straight to f32; from a Python float (itself
    the decimal rounded to f64) it is rounded again. Where the literal meets an f64 it
    widens exactly, so `0.1` into an f64 is 0.10000000149011612, not Python's 0.1. Past
    f32's range it is an infinity, which `float_literal_reason` refuses.

    >>> literal_float("0.1"), literal_float(0.5), literal_float("1e39")
    (0.10000000149011612, 0.5, inf)
    >>> literal_float("1.00000005960464477539062500001")  # just past a tie: rounds up
    1.0000001192092896
    """
    if isinstance(literal, str):
        try:
            exact = Fraction(Decimal(literal.replace("_", "")))
        except (InvalidOperation, ValueError):
            return floats.round_f32(float(literal))
        return floats.round_exact(exact, F32)
    return floats.round_f32(float(literal))


def float_literal_reason(literal: str | float) -> str | None:
    """Why a float literal is refused: it rounds past f32's greatest finite value. A tiny
    one rounds to a subnormal or to zero, as C's does, and is kept.

    >>> float_literal_reason("1e39")
    'float literal `1e39` is out of range for `f32`: its largest value is about 3.4028235e38'
    >>> float_literal_reason("3.4028235e38") is None, float_literal_reason("1e-50") is None
    (True, True)
    """
    if math.isinf(literal_float(literal)):
        return (
            f"float literal `{literal}` is out of range for `f32`: "
            "its largest value is about 3.4028235e38"
        )
    return None


def int_literal_reason(value: int, width: int) -> str | None:
    """Why an integer literal (unsigned as written) is refused at `width`-bit indices: past
    what a word of that width spells, 4294967295 at 32 bits and 18446744073709551615 at 64.

    >>> int_literal_reason(4294967296, 32)
    'integer literal `4294967296` does not fit a 32-bit index: the largest is 4294967295'
    >>> int_literal_reason(4294967295, 32) is None, int_literal_reason(4294967296, 64) is None
    (True, True)
    """
    if value > (1 << width) - 1:
        return (
            f"integer literal `{value}` does not fit a {width}-bit index: "
            f"the largest is {(1 << width) - 1}"
        )
    return None


def literal_int(value: int, width: int) -> int:
    """The index an integer literal reads as at `width`-bit indices: the word it spells,
    read as its two's-complement bits (the literal is in range, see `int_literal_reason`).

    >>> literal_int(4294967295, 32), literal_int(4294967295, 64), literal_int(2147483648, 32)
    (-1, 4294967295, -2147483648)
    """
    return integers.wrap(value, width)
