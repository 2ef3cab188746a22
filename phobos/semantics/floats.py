"""Float values of each width, held as Python floats (an f64 holds every f16, bf16 and f32
exactly), rounded to nearest with ties to even, and IEEE arithmetic on them.

    >>> round_to(0.1, F32), round_to(0.1, F16), round_to(0.1, BF16)
    (0.10000000149011612, 0.0999755859375, 0.10009765625)
    >>> binary("/", 1.0, 0.0, F32), binary("%", -7.5, 2.0, F32)
    (inf, -1.5)
"""

from __future__ import annotations

import math
import struct
from fractions import Fraction

from phobos.semantics.types import BF16, F16, F32, F64, Scalar

INF = math.inf
NAN = math.nan

# (significand bits with the implicit one, least normal exponent, greatest exponent)
FORMATS: dict[Scalar, tuple[int, int, int]] = {
    F16: (11, -14, 15),
    BF16: (8, -126, 127),
    F32: (24, -126, 127),
    F64: (53, -1022, 1023),
}


def max_finite(t: Scalar) -> float:
    """The greatest finite value of the float type `t`.

    >>> max_finite(F16), max_finite(BF16), max_finite(F32)
    (65504.0, 3.3895313892515355e+38, 3.4028234663852886e+38)
    """
    p, _, emax = FORMATS[t]
    return math.ldexp((1 << p) - 1, emax - p + 1)


def round_f32(x: float) -> float:
    """`x` rounded to the nearest f32, ties to even; past f32's range, an infinity.

    >>> round_f32(0.1), round_f32(1e39), round_f32(-1e39), round_f32(1e-46)
    (0.10000000149011612, inf, -inf, 0.0)
    """
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:  # struct refuses a finite value that rounds past the range
        return math.copysign(INF, x)


def round_f16(x: float) -> float:
    """`x` rounded to the nearest f16, ties to even, subnormals kept; past 65504 (from
    65520 on), an infinity.

    >>> round_f16(2049.0), round_f16(2051.0), round_f16(65519.0), round_f16(65520.0)
    (2048.0, 2052.0, 65504.0, inf)
    >>> round_f16(2.0**-24), round_f16(2.0**-26)
    (5.960464477539063e-08, 0.0)
    """
    try:
        return struct.unpack("<e", struct.pack("<e", x))[0]
    except OverflowError:
        return math.copysign(INF, x)


def round_bf16(x: float) -> float:
    """`x` rounded to the nearest bf16 (f32's exponent, 8 significant bits), ties to even.

    `x` is first rounded to f32 *to odd* (an inexact result takes the neighbour whose last
    bit is 1), which keeps the information a tie needs, so the second rounding of the f32
    bits is as if from `x` itself; a plain f32 rounding first could turn a value just past
    a bf16 tie into the tie.

    >>> round_bf16(1.0 + 2.0**-8), round_bf16(1.0 + 3 * 2.0**-8), round_bf16(1.0 + 2.0**-8 + 2.0**-40)
    (1.0, 1.015625, 1.0078125)
    >>> round_bf16(3.4e38), round_bf16(-math.inf), math.isnan(round_bf16(math.nan))
    (inf, -inf, True)
    """
    if math.isnan(x):
        return x
    bits = _f32_bits_to_odd(x)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000  # round half to even on bit 16
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def _f32_bits_to_odd(x: float) -> int:
    y = round_f32(x)
    bits = struct.unpack("<I", struct.pack("<f", y))[0]
    if y != x and not math.isinf(x) and bits & 1 == 0:
        # the other neighbour of x: one step toward x in magnitude (sign-magnitude bits)
        bits += 1 if abs(y) < abs(x) else -1
    return bits


def round_to(x: float, t: Scalar) -> float:
    """`x` rounded to the nearest value of the float type `t`, ties to even.

    >>> round_to(1 / 3, F16), round_to(1 / 3, F64) == 1 / 3
    (0.333251953125, True)
    """
    if t == F32:
        return round_f32(x)
    if t == F16:
        return round_f16(x)
    if t == BF16:
        return round_bf16(x)
    if t == F64:
        return float(x)
    raise TypeError(f"`{t}` is not a float type")


def round_exact(q: int | Fraction, t: Scalar) -> float:
    """The exact rational `q` rounded once to the nearest value of the float type `t`, ties
    to even: for an integer past 2**53 or a decimal literal, where going through an f64
    first would round twice.

    >>> round_exact(2**60 + 2**36 + 1, F32) == 2.0**60 + 2.0**37  # via f64: 2**60
    True
    >>> round_exact(Fraction(1, 10), F32), round_exact(10**40, F32)
    (0.10000000149011612, inf)
    """
    p, emin, emax = FORMATS[t]
    if q == 0:
        return 0.0
    sign = -1.0 if q < 0 else 1.0
    a = abs(Fraction(q))
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if a < Fraction(2) ** e:  # now 2**e <= a < 2**(e+1)
        e -= 1
    if e > emax:
        return sign * INF
    shift = max(e, emin) - p + 1  # the weight of the last significant bit
    m = round(a / Fraction(2) ** shift)  # Fraction's round() ties to even
    if m == 1 << p and e == emax:  # rounded up past the greatest finite value
        return sign * INF
    return sign * math.ldexp(m, shift)


# -- arithmetic ---------------------------------------------------------------------------
#
# An operation on operands of type t is computed in f64 and rounded once to t. For + - * /
# (and sqrt) of two values of a type of p bits this is the correctly rounded result when
# 53 >= 2p + 2, which holds for f32 (24), f16 (11) and bf16 (8): the f64 rounding in between
# never turns a result into a tie of t, so the double rounding is innocuous.


def ieee_div(a: float, b: float) -> float:
    """`a / b` as IEEE has it, where Python raises: a zero divisor gives a signed infinity,
    or NaN for `0 / 0`.

    >>> ieee_div(1.0, -0.0), ieee_div(-1.0, 0.0), math.isnan(ieee_div(0.0, 0.0))
    (-inf, -inf, True)
    """
    if b == 0.0:
        if a == 0.0 or math.isnan(a):
            return NAN
        return math.copysign(INF, a) * math.copysign(1.0, b)
    return a / b


def fmod(a: float, b: float) -> float:
    """C's `fmod`: the remainder of `a / b` truncated, with the dividend's sign; exact.

    >>> fmod(-7.5, 2.0), fmod(7.5, -2.0), fmod(-4.0, 2.0), fmod(5.0, math.inf)
    (-1.5, 1.5, -0.0, 5.0)
    >>> math.isnan(fmod(1.0, 0.0)), math.isnan(fmod(math.inf, 1.0))
    (True, True)
    """
    if math.isnan(a) or math.isnan(b) or math.isinf(a) or b == 0.0:
        return NAN
    if math.isinf(b):
        return a
    return math.fmod(a, b)


def binary(op: str, a: float, b: float, t: Scalar) -> float:
    """`a op b` for `op` in `+ - * / %`, at the precision of the float type `t`.

    >>> binary("+", 16777216.0, 1.0, F32), binary("+", 16777216.0, 1.0, F64)
    (16777216.0, 16777217.0)
    """
    if op == "+":
        r = a + b
    elif op == "-":
        r = a - b
    elif op == "*":
        r = a * b
    elif op == "/":
        r = ieee_div(a, b)
    elif op == "%":
        r = fmod(a, b)
    else:
        raise ValueError(f"`{op}` is not a float arithmetic operator")
    return round_to(r, t)


def float_min(a: float, b: float) -> float:
    """`min(a, b)`: a NaN operand gives the other one (SPEC.md), NaN only when both are;
    `-0.0` is below `0.0`.

    >>> float_min(math.nan, 1.0), float_min(1.0, math.nan), float_min(0.0, -0.0)
    (1.0, 1.0, -0.0)
    """
    if math.isnan(a):
        return b
    if math.isnan(b):
        return a
    if a == b:
        return a if math.copysign(1.0, a) < 0 else b
    return a if a < b else b


def float_max(a: float, b: float) -> float:
    """`max(a, b)`: a NaN operand gives the other one, `0.0` is above `-0.0`.

    >>> float_max(math.nan, -1.0), float_max(-0.0, 0.0)
    (-1.0, 0.0)
    """
    if math.isnan(a):
        return b
    if math.isnan(b):
        return a
    if a == b:
        return a if math.copysign(1.0, a) > 0 else b
    return a if a > b else b


# -- bits ---------------------------------------------------------------------------------

_PACK = {F16: "<e", F32: "<f", F64: "<d"}
_UINT = {16: "<H", 32: "<I", 64: "<Q"}


def to_bits(x: float, t: Scalar) -> int:
    """The bits of the float type `t` that hold `x` (a value of `t`), as an unsigned int.

    >>> hex(to_bits(1.0, F16)), hex(to_bits(1.0, BF16)), hex(to_bits(-2.0, F32))
    ('0x3c00', '0x3f80', '0xc0000000')
    """
    if t == BF16:
        return to_bits(x, F32) >> 16
    return struct.unpack(_UINT[t.bits], struct.pack(_PACK[t], x))[0]


def from_bits(bits: int, t: Scalar) -> float:
    """The value of the float type `t` whose bits are the low `t.bits` of `bits`.

    >>> from_bits(0x3C00, F16), from_bits(0x7C00, F16), from_bits(0x3F80, BF16)
    (1.0, inf, 1.0)
    """
    if t == BF16:
        return from_bits((bits & 0xFFFF) << 16, F32)
    return struct.unpack(_PACK[t], struct.pack(_UINT[t.bits], bits & ((1 << t.bits) - 1)))[0]


def f16bits(x: int) -> float:
    """SPEC.md `f16bits(x)`: the f16 whose bits are the low 16 of the integer `x`.

    >>> f16bits(0x3C00), f16bits(-1 << 16 | 0xC000)
    (1.0, -2.0)
    """
    return from_bits(x, F16)
