"""Integer arithmetic as the card does it: two's complement, wrapping at a width.

Every function takes Python ints already in range for `bits` (a signed width; the
unsigned types take no arithmetic) and returns one in range. `bits=None` computes exactly,
with no width: the folder of compile-time constants uses that (see `phobos.semantics.fold`).

    >>> add(2147483647, 1, 32), add(2147483647, 1, 64), add(2147483647, 1, None)
    (-2147483648, 2147483648, 2147483648)
    >>> div(-7, 2, 32), rem(-7, 3, 32), rem(7, -3, 32)
    (-3, -1, 1)
"""

from __future__ import annotations

from phobos.semantics.errors import DivisionByZero, ShiftOutOfRange


def wrap(value: int, bits: int | None) -> int:
    """`value` read as a `bits`-wide two's-complement word: its low bits, sign-extended.

    >>> wrap(2**31, 32), wrap(255, 8), wrap(-129, 8), wrap(2**40, None)
    (-2147483648, -1, 127, 1099511627776)
    """
    if bits is None:
        return value
    half = 1 << (bits - 1)
    return ((value + half) & ((1 << bits) - 1)) - half


def wrap_unsigned(value: int, bits: int) -> int:
    """`value`'s low `bits` bits, zero-extended: what an unsigned word holds and reads as.

    >>> wrap_unsigned(-1, 8), wrap_unsigned(256 + 7, 8)
    (255, 7)
    """
    return value & ((1 << bits) - 1)


def add(a: int, b: int, bits: int | None) -> int:
    return wrap(a + b, bits)


def sub(a: int, b: int, bits: int | None) -> int:
    return wrap(a - b, bits)


def mul(a: int, b: int, bits: int | None) -> int:
    return wrap(a * b, bits)


def neg(a: int, bits: int | None) -> int:
    """`-a`; the least value negates to itself.

    >>> neg(-2147483648, 32)
    -2147483648
    """
    return wrap(-a, bits)


def div(a: int, b: int, bits: int | None) -> int:
    """`a / b` truncated toward zero, as C and PTX `div.s` do (Python's `//` floors).

    The least value divided by -1 wraps to itself. A zero divisor raises `DivisionByZero`.

    >>> div(-7, 2, 32), div(7, -2, 32), div(-2147483648, -1, 32)
    (-3, -3, -2147483648)
    """
    if b == 0:
        raise DivisionByZero(f"attempt to divide `{a}` by zero")
    q = abs(a) // abs(b)
    return wrap(q if (a < 0) == (b < 0) else -q, bits)


def rem(a: int, b: int, bits: int | None) -> int:
    """`a % b` with the dividend's sign, as C's `%` and PTX `rem.s`: `a - b * (a / b)`.

    >>> rem(-7, 3, 32), rem(7, -3, 32), rem(-2147483648, -1, 32)
    (-1, 1, 0)
    """
    if b == 0:
        raise DivisionByZero(f"attempt to calculate the remainder of `{a}` with a divisor of zero")
    r = abs(a) % abs(b)
    return wrap(-r if a < 0 else r, bits)


def shl(a: int, count: int, bits: int | None) -> int:
    """`a << count`.

    At a width, as PTX `shl`: the count is read as an unsigned word and a count at or past
    the width shifts every bit out, so the result is 0 (a negative count, read unsigned, is
    past it too). Exactly (`bits=None`), `a * 2**count`; a negative count has no meaning
    there and raises `ShiftOutOfRange`.

    >>> shl(1, 31, 32), shl(1, 32, 32), shl(1, 99, 32), shl(1, -1, 32), shl(1, 40, None)
    (-2147483648, 0, 0, 0, 1099511627776)
    """
    if bits is None:
        _check_exact_count(a, "<<", count)
        return a << count
    if count < 0 or count >= bits:
        return 0
    return wrap(a << count, bits)


def shr(a: int, count: int, bits: int | None) -> int:
    """`a >> count`, arithmetic: the sign fills from the left (the integers are signed).

    At a width, as PTX `shr.s`: a count at or past the width (a negative one included, read
    unsigned) shifts by the width, leaving 0 or -1 by the sign.

    >>> shr(-8, 1, 32), shr(-8, 32, 32), shr(8, 99, 32), shr(-1, -1, 32), shr(-8, 1, None)
    (-4, -1, 0, -1, -4)
    """
    if bits is None:
        _check_exact_count(a, ">>", count)
        return a >> count
    if count < 0 or count >= bits:
        return -1 if a < 0 else 0
    return a >> count


def _check_exact_count(a: int, op: str, count: int) -> None:
    if count < 0:
        raise ShiftOutOfRange(f"attempt to shift `{a}` by a negative count: `{a} {op} {count}`")


def bit_and(a: int, b: int, bits: int | None) -> int:
    return wrap(a & b, bits)


def bit_or(a: int, b: int, bits: int | None) -> int:
    return wrap(a | b, bits)


def bit_xor(a: int, b: int, bits: int | None) -> int:
    return wrap(a ^ b, bits)


def bit_not(a: int, bits: int | None) -> int:
    """`~a`: every bit flipped, `-a - 1` in two's complement.

    >>> bit_not(0, 32), bit_not(-1, 8)
    (-1, 0)
    """
    return wrap(~a, bits)


def int_min(a: int, b: int) -> int:
    return a if a <= b else b


def int_max(a: int, b: int) -> int:
    return a if a >= b else b


def int_abs(a: int, bits: int | None) -> int:
    """`abs(a)` as SPEC.md has it, `max(a, -a)`: the least value, whose negation wraps to
    itself, stays negative.

    >>> int_abs(-5, 32), int_abs(-2147483648, 32), int_abs(-128, 8)
    (5, -2147483648, -128)
    """
    return int_max(a, neg(a, bits))


def popcount(a: int) -> int:
    """The number of set bits in the low 32 bits of `a` (SPEC.md `popcount`).

    >>> popcount(-1), popcount(0b1011), popcount(2**32 + 1)
    (32, 3, 1)
    """
    return bin(a & 0xFFFFFFFF).count("1")
