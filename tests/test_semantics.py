"""The scalar rules, checked against references that do not share their code: numpy's
float16, float32 and fixed-width integers, exact rationals, and C's definitions.

The first tests are the rows of spec/PYTHON.md "Where Phobos and Python differ" that
concern values, on the constants the compiler folds.
"""

import doctest
import importlib
import math
import random
import struct
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest

import phobos.semantics as S
from phobos.semantics import (
    BF16,
    BOOL,
    F16,
    F32,
    F64,
    I8,
    I32,
    I64,
    U8,
    U16,
    U32,
    BadOperand,
    DivisionByZero,
    ShiftOutOfRange,
    fold_binary,
    fold_call,
    fold_convert,
    fold_unary,
)

MODULES = ["", ".types", ".integers", ".floats", ".convert", ".fold", ".elementwise", ".errors"]


@pytest.mark.parametrize("module", MODULES)
def test_doctests(module):
    mod = importlib.import_module("phobos.semantics" + module)
    globs = {**vars(S), "math": math, "Fraction": Fraction}
    result = doctest.testmod(mod, extraglobs=globs, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


# -- spec/PYTHON.md "Where Phobos and Python differ" -------------------------------------


def test_floor_division_truncates():
    # Python's -7 // 2 is -4; Phobos's integer `/` (spelled `//` in Python) truncates
    assert -7 // 2 == -4
    assert fold_binary("/", -7, 2, I32) == -3
    assert fold_binary("/", -7, 2, I64) == -3
    assert fold_binary("/", -7, 2, I32, exact=True) == -3


def test_remainder_takes_the_dividends_sign():
    assert -7 % 3 == 2  # Python: the divisor's sign
    assert fold_binary("%", -7, 3, I32) == -1
    assert fold_binary("%", 7, -3, I32) == 1
    assert fold_binary("%", -7, 3, I32, exact=True) == -1


def test_float_remainder_of_constants_is_fmod():
    a, b = S.literal_float("-7.5"), S.literal_float("2.0")
    assert fold_binary("%", a, b, F32) == -1.5
    assert -7.5 % 2.0 == 0.5  # Python's
    assert fold_binary("%", -7.5, 2.0, F64) == -1.5


def test_float_literal_is_f32_widened_into_f64():
    value = fold_convert(S.literal_float("0.1"), F32, F64)
    assert value == 0.10000000149011612
    assert value == float(np.float32(0.1))
    assert value != 0.1


def test_integers_wrap_at_the_index_width():
    n = 1
    assert fold_binary("+", 2147483647, n, S.index_type(32)) == -2147483648
    assert fold_binary("+", 2147483647, n, S.index_type(64)) == 2147483648


def test_a_constant_sum_folds_exactly():
    total = fold_binary("+", 2147483647, 1, I32, exact=True)
    assert total == 2147483648
    assert not S.index_fits(total, 32) and S.index_fits(total, 64)
    assert S.to_index(total, 32) == -2147483648  # where it becomes a run-time index
    assert fold_binary("*", 2**40, 2**40, I64, exact=True) == 2**80


def test_float_literal_outside_f32_is_refused():
    for text in ["1e39", "3.5e38", "1e300", "340282356779733661637539395458142568448.0"]:
        reason = S.float_literal_reason(text)
        assert reason is not None and "out of range for `f32`" in reason, text
    for text in ["3.4028234e38", "3.4028235e38", "1e-45", "1e-50", "0.0", "65504.0"]:
        assert S.float_literal_reason(text) is None, text
    assert S.float_literal_reason(1e39) is not None  # from a value, as the AST holds it


def test_integer_literal_range_at_each_index_width():
    assert S.int_literal_reason(4294967295, 32) is None
    assert S.literal_int(4294967295, 32) == -1
    assert S.literal_int(2147483648, 32) == -(2**31)
    reason = S.int_literal_reason(4294967296, 32)
    assert reason is not None and "32-bit index" in reason and "4294967295" in reason
    assert S.int_literal_reason(4294967296, 64) is None
    assert S.literal_int(4294967296, 64) == 4294967296
    assert S.int_literal_reason(2**64 - 1, 64) is None
    assert S.literal_int(2**64 - 1, 64) == -1
    assert S.int_literal_reason(2**64, 64) is not None


# -- types --------------------------------------------------------------------------------

JOINS = [
    (F16, F16, F16),
    (F16, F32, F32),
    (F32, F64, F64),
    (BF16, F32, F32),
    (BF16, F64, F64),
    (F16, BF16, F32),
    (I32, F16, F16),
    (I64, F32, F32),
    (I8, BF16, BF16),
    (I8, I32, I32),
    (I32, I64, I64),
    (I8, I64, I64),
    (U8, U8, U8),
    (U8, I32, None),
    (U32, F32, None),
    (U8, U16, None),
    (BOOL, BOOL, BOOL),
    (BOOL, I32, None),
    (BOOL, F32, None),
]


@pytest.mark.parametrize(("a", "b", "expected"), JOINS, ids=lambda t: str(t))
def test_join(a, b, expected):
    assert S.join(a, b) == expected
    assert S.join(b, a) == expected


def test_the_eleven_scalars():
    assert list(S.SCALARS) == ["f16", "bf16", "f32", "f64", "i8", "i32", "i64"] + [
        "u8",
        "u16",
        "u32",
        "bool",
    ]
    assert [S.scalar(n).bits for n in ("f16", "bf16", "i8", "u16", "u32", "i64")] == [
        16,
        16,
        8,
        16,
        32,
        64,
    ]
    for name, t in S.SCALARS.items():
        if t.is_integer:
            info = np.iinfo(getattr(np, {"i": "int", "u": "uint"}[name[0]] + name[1:]))
            assert (t.lo, t.hi) == (info.min, info.max)
    with pytest.raises(ValueError):
        S.index_type(16)


def test_which_operators_take_which_types():
    assert S.operator_reason("+", U8) is not None
    assert S.operator_reason("<", U32) is not None
    assert S.operator_reason(">>", F32) is not None
    assert S.operator_reason("~", F16, unary=True) is not None
    assert S.operator_reason("&&", I32) is not None
    assert S.operator_reason("+", BOOL) is not None
    assert S.operator_reason("-", BOOL, unary=True) is not None
    for op in ["+", "-", "*", "/", "%", "<", "==", ">="]:
        assert S.operator_reason(op, F16) is None and S.operator_reason(op, I8) is None
    for op in ["&", "|", "^", "<<", ">>"]:
        assert S.operator_reason(op, I32) is None
    assert S.operator_reason("==", BOOL) is None and S.operator_reason("||", BOOL) is None
    assert S.takes_arithmetic(I64) and not S.takes_arithmetic(U16)
    with pytest.raises(BadOperand, match="no bitwise `&` on `f32`"):
        fold_binary("&", 1.0, 2.0, F32)
    with pytest.raises(BadOperand):
        fold_unary("!", 1, I32)


# -- integers -----------------------------------------------------------------------------

NP_INT = {I8: np.int8, I32: np.int32, I64: np.int64}


def _random_ints(rng, t, n):
    edges = [t.lo, t.lo + 1, -1, 0, 1, t.hi - 1, t.hi]
    return edges + [rng.randint(t.lo, t.hi) for _ in range(n)] + [rng.randint(-9, 9)] * 3


@pytest.mark.parametrize("t", [I8, I32, I64], ids=str)
@pytest.mark.parametrize("op", ["+", "-", "*", "&", "|", "^"])
def test_wrapping_arithmetic_against_numpy(t, op):
    rng = random.Random(f"{t}{op}")
    xs, ys = _random_ints(rng, t, 200), _random_ints(rng, t, 200)
    rng.shuffle(ys)
    a, b = np.array(xs, NP_INT[t]), np.array(ys, NP_INT[t])
    with np.errstate(over="ignore"):
        ref = {"+": a + b, "-": a - b, "*": a * b, "&": a & b, "|": a | b, "^": a ^ b}[op]
    assert [fold_binary(op, x, y, t) for x, y in zip(xs, ys, strict=True)] == ref.tolist()


@pytest.mark.parametrize("t", [I8, I32, I64], ids=str)
def test_division_and_remainder_are_cs(t):
    rng = random.Random(str(t))
    xs, ys = _random_ints(rng, t, 300), _random_ints(rng, t, 300)
    rng.shuffle(ys)
    pairs = [(x, y) for x, y in zip(xs, ys, strict=True) if y != 0 and not (x == t.lo and y == -1)]
    for x, y in pairs:
        q, r = fold_binary("/", x, y, t), fold_binary("%", x, y, t)
        assert x == y * q + r and abs(r) < abs(y)  # C's definition of / and %
        assert r == 0 or (r < 0) == (x < 0)
        assert q == math.trunc(Fraction(x, y))
    a = np.array([x for x, _ in pairs], NP_INT[t])
    b = np.array([y for _, y in pairs], NP_INT[t])
    assert [fold_binary("%", x, y, t) for x, y in pairs] == np.fmod(a, b).tolist()
    # the least value over -1 overflows: it wraps, as two's complement does
    assert fold_binary("/", t.lo, -1, t) == t.lo
    assert fold_binary("%", t.lo, -1, t) == 0


@pytest.mark.parametrize("op", ["/", "%"])
def test_integer_division_by_zero_raises(op):
    for exact in (False, True):
        with pytest.raises(DivisionByZero, match="zero"):
            fold_binary(op, 7, 0, I32, exact=exact)
    # a float divisor of zero is IEEE's business, not an error
    assert fold_binary("/", -1.0, 0.0, F32) == -math.inf
    assert math.isnan(fold_binary("%", 1.0, 0.0, F32))


def test_negation_and_not_wrap():
    assert fold_unary("-", -(2**31), I32) == -(2**31)
    assert fold_unary("-", -(2**31), I32, exact=True) == 2**31
    assert fold_unary("-", -128, I8) == -128
    assert fold_unary("~", 0, I64) == -1
    assert fold_unary("~", 127, I8) == -128


@pytest.mark.parametrize("t", [I8, I32, I64], ids=str)
def test_shifts_in_range_against_numpy(t):
    rng = random.Random(f"shift{t}")
    xs = _random_ints(rng, t, 100)
    counts = [rng.randrange(t.bits) for _ in xs]
    a, c = np.array(xs, NP_INT[t]), np.array(counts, NP_INT[t])
    assert [fold_binary("<<", x, n, t) for x, n in zip(xs, counts, strict=True)] == (
        a << c
    ).tolist()
    assert [fold_binary(">>", x, n, t) for x, n in zip(xs, counts, strict=True)] == (
        a >> c
    ).tolist()


def test_shift_counts_past_the_width_clamp_as_ptx():
    # shl/shr.s clamp a count (read unsigned) at the width: all bits out, or the sign fill
    assert fold_binary("<<", 1, 31, I32) == -(2**31)
    assert fold_binary("<<", 1, 32, I32) == 0
    assert fold_binary("<<", -1, 1000, I32) == 0
    assert fold_binary("<<", 1, 63, I64) == -(2**63)
    assert fold_binary("<<", 1, 64, I64) == 0
    assert fold_binary(">>", -(2**31), 31, I32) == -1
    assert fold_binary(">>", -5, 32, I32) == -1
    assert fold_binary(">>", 5, 32, I32) == 0
    assert fold_binary(">>", -5, 64, I64) == -1
    assert fold_binary("<<", 1, -1, I32) == 0  # -1 reads as 4294967295
    assert fold_binary(">>", -7, -1, I32) == -1
    # exactly: no width, no clamp, and a negative count has no meaning
    assert fold_binary("<<", 1, 40, I32, exact=True) == 2**40
    assert fold_binary(">>", -(2**40), 38, I32, exact=True) == -4
    with pytest.raises(ShiftOutOfRange):
        fold_binary("<<", 1, -1, I32, exact=True)


def test_comparisons_give_bool():
    assert fold_binary("<", -1, 0, I32) is True
    assert fold_binary(">=", 2, 3, I64) is False
    assert fold_binary("==", math.nan, math.nan, F32) is False
    assert fold_binary("!=", math.nan, math.nan, F32) is True
    assert fold_binary("==", -0.0, 0.0, F32) is True
    assert fold_binary("||", False, True, BOOL) is True
    assert fold_unary("!", False, BOOL) is True


# -- float rounding -----------------------------------------------------------------------


def _grid_round(x, to_value, top):
    """x (a float or an exact Fraction) rounded to nearest-even on the grid
    `to_value(0..top)` (non-negative bit patterns, increasing), by binary search and exact
    rational distances."""
    if isinstance(x, float) and math.isnan(x):
        return x
    a = abs(x)
    lo, hi = 0, top  # to_value(top) is inf
    if a >= to_value(top):
        return math.copysign(math.inf, x)
    while hi - lo > 1:  # invariant: to_value(lo) <= a < to_value(hi)
        mid = (lo + hi) // 2
        if to_value(mid) <= a:
            lo = mid
        else:
            hi = mid
    below, above = to_value(lo), to_value(hi)
    if math.isinf(above):  # past the greatest finite value, IEEE rounds as if the grid went on
        above = Fraction(below) * 2 - Fraction(to_value(lo - 1))
    d_lo, d_hi = Fraction(a) - Fraction(below), Fraction(above) - Fraction(a)
    pick = lo if d_lo < d_hi or (d_lo == d_hi and lo % 2 == 0) else hi
    return math.copysign(to_value(pick), x)


def _bf16_value(b):
    return float(np.array([b << 16], np.uint32).view(np.float32)[0])


def _f16_value(b):
    return float(np.array([b], np.uint16).view(np.float16)[0])


def _f32_value(b):
    return float(np.array([b], np.uint32).view(np.float32)[0])


GRIDS = {F16: (_f16_value, 0x7C00), BF16: (_bf16_value, 0x7F80), F32: (_f32_value, 0x7F800000)}


def _samples(t, rng, n):
    """Values around t's grid: random bit patterns, their exact midpoints (ties), points just
    off the midpoints, subnormals, values near the top, and plain random f64s."""
    to_value, top = GRIDS[t]
    out = [0.0, -0.0, math.inf, -math.inf, 1e-300, 1e300, max(S.max_finite(t), 1.0)]
    for _ in range(n):
        b = rng.randrange(top - 1)
        lo, hi = to_value(b), to_value(b + 1)
        mid = (lo + hi) / 2  # exact in f64
        off = (hi - lo) * 2.0**-30
        sign = rng.choice([1.0, -1.0])
        out += [sign * lo, sign * mid, sign * (mid + off), sign * (mid - off)]
        out.append(rng.uniform(-1, 1) * 2.0 ** rng.randint(-160, 130))
    sub = to_value(1)  # the least subnormal
    out += [sub / 2, sub * 1.5, sub * 2.5, -sub / 2, sub / 2 + sub * 2.0**-20]
    return out


@pytest.mark.parametrize("t", [F16, BF16, F32], ids=str)
def test_rounding_against_an_exact_grid(t):
    to_value, top = GRIDS[t]
    for x in _samples(t, random.Random(str(t)), 300):
        got, want = S.round_to(x, t), _grid_round(x, to_value, top)
        assert got == want and math.copysign(1, got) == math.copysign(1, want), (x, got, want)


@pytest.mark.parametrize(("t", "np_t"), [(F16, np.float16), (F32, np.float32)], ids=str)
def test_rounding_against_numpy(t, np_t):
    xs = _samples(t, random.Random(f"np{t}"), 300)
    with np.errstate(over="ignore"):
        want = np.array(xs, np.float64).astype(np_t).astype(np.float64).tolist()
    assert [S.round_to(x, t) for x in xs] == want


def test_f16_rounding_examples():
    assert S.round_f16(2049.0) == 2048.0  # a tie, to even
    assert S.round_f16(2051.0) == 2052.0
    assert S.round_f16(65504.0) == 65504.0
    assert S.round_f16(65519.99) == 65504.0
    assert S.round_f16(65520.0) == math.inf  # the tie past the top rounds to infinity
    assert S.round_f16(-1e6) == -math.inf
    assert S.round_f16(2.0**-24) == 2.0**-24  # the least subnormal
    assert S.round_f16(3 * 2.0**-25) == 2.0**-23  # a subnormal tie, to even
    assert S.round_f16(2.0**-25) == 0.0
    assert math.isnan(S.round_f16(math.nan))


def test_bf16_rounds_once_from_f64():
    one = 1.0
    assert S.round_bf16(one + 2.0**-8) == 1.0  # a tie, to even
    assert S.round_bf16(one + 3 * 2.0**-8) == 1.0 + 2.0**-6
    # just past a tie: through a plain f32 rounding it would become the tie and go down
    assert S.round_bf16(one + 2.0**-8 + 2.0**-40) == 1.0 + 2.0**-7
    assert S.round_bf16(-(one + 2.0**-8 + 2.0**-40)) == -(1.0 + 2.0**-7)
    assert S.round_bf16(S.max_finite(BF16)) == S.max_finite(BF16)
    assert S.round_bf16(3.3961e38) == S.max_finite(BF16)  # the tie above it is 255.5 * 2**120
    assert S.round_bf16(255.5 * 2.0**120) == math.inf
    assert S.round_bf16(1e-45) == _bf16_value(0)
    assert math.isnan(S.round_bf16(math.nan))


@pytest.mark.parametrize("t", [F16, BF16, F32, F64], ids=str)
def test_round_exact_agrees_with_rounding_an_f64(t):
    rng = random.Random(f"exact{t}")
    xs = _samples(t, rng, 200) if t != F64 else [rng.uniform(-1e6, 1e6) for _ in range(200)]
    for x in xs:
        if math.isfinite(x) and x != 0:
            assert S.round_exact(Fraction(x), t) == S.round_to(x, t), x


def test_literals_round_once_from_the_decimal():
    rng = random.Random("literals")
    to_value, top = GRIDS[F32]
    for _ in range(300):
        text = f"{rng.randint(0, 10**12)}.{rng.randint(0, 10**12):012d}e{rng.randint(-60, 30)}"
        want = _grid_round(Fraction(Decimal(text)), to_value, top)
        assert S.literal_float(text) == want, text
    for _ in range(100):  # decimals just off an f32 tie, where an f64 in between rounds twice
        b = rng.randrange(0x7F000000)
        tie = (Fraction(to_value(b)) + Fraction(to_value(b + 1))) / 2
        with localcontext() as ctx:
            ctx.prec = 400  # a tie's decimal is exact at this length
            exact = Decimal(tie.numerator) / Decimal(tie.denominator)
            text = str(exact * (1 + rng.choice([1, -1]) * Decimal("1e-30")))
        want = _grid_round(Fraction(Decimal(text)), to_value, top)
        assert S.literal_float(text) == want, text
    # one decimal digit past an f32 tie: the f64 in between would make it the tie
    assert S.literal_float("1.00000005960464477539062500001") == 1.0 + 2.0**-23
    assert S.literal_float(1.00000005960464477539062500001) == 1.0
    assert S.literal_float("1_000.5") == 1000.5


# -- float arithmetic ---------------------------------------------------------------------


@pytest.mark.parametrize(("t", "np_t"), [(F16, np.float16), (F32, np.float32)], ids=str)
@pytest.mark.parametrize("op", ["+", "-", "*", "/", "%"])
def test_float_arithmetic_against_numpy(t, np_t, op):
    rng = random.Random(f"{t}{op}")
    xs = [S.round_to(rng.uniform(-1, 1) * 2.0 ** rng.randint(-20, 14), t) for _ in range(300)]
    ys = [S.round_to(rng.uniform(-1, 1) * 2.0 ** rng.randint(-20, 14), t) for _ in range(300)]
    xs += [0.0, -0.0, math.inf, 1.0, math.nan, 3.0]
    ys += [0.0, 0.0, 2.0, math.inf, 1.0, -0.0]
    a, b = np.array(xs, np_t), np.array(ys, np_t)
    with np.errstate(all="ignore"):
        ref = {"+": a + b, "-": a - b, "*": a * b, "/": a / b, "%": np.fmod(a, b)}[op]
    for x, y, want in zip(xs, ys, ref.astype(np.float64).tolist(), strict=True):
        got = fold_binary(op, x, y, t)
        assert got == want or (math.isnan(got) and math.isnan(want)), (x, op, y, got, want)
        if got == 0:
            assert math.copysign(1, got) == math.copysign(1, want), (x, op, y)


def test_f32_arithmetic_rounds_at_f32():
    assert fold_binary("+", 16777216.0, 1.0, F32) == 16777216.0
    assert fold_binary("+", 16777216.0, 1.0, F64) == 16777217.0
    assert fold_binary("*", 3.0e38, 10.0, F32) == math.inf


def test_min_and_max_with_nan_give_the_other_operand():
    rng = random.Random("minmax")
    xs = [rng.uniform(-5, 5) for _ in range(100)] + [math.nan] * 20 + [math.inf, -math.inf]
    ys = [rng.uniform(-5, 5) for _ in range(100)] + [math.nan] * 20 + [1.0, 1.0]
    rng.shuffle(ys)
    a, b = np.array(xs), np.array(ys)
    for name, ref in [("min", np.fmin(a, b)), ("max", np.fmax(a, b))]:
        got = [fold_call(name, [x, y], F64) for x, y in zip(xs, ys, strict=True)]
        want = ref.tolist()
        assert all(
            g == w or (math.isnan(g) and math.isnan(w)) for g, w in zip(got, want, strict=True)
        )
    assert fold_call("min", [math.nan, 2.0], F32) == 2.0
    assert fold_call("max", [-3.0, math.nan], F32) == -3.0
    assert math.isnan(fold_call("max", [math.nan, math.nan], F32))
    assert fold_call("min", [-7, 3], I32) == -7 and fold_call("max", [-7, 3], I8) == 3


# -- conversions --------------------------------------------------------------------------


def test_float_to_integer_truncates_and_saturates():
    cases = [
        (2.9, I32, 2),
        (-2.9, I32, -2),
        (-0.5, I32, 0),
        (1e10, I32, 2**31 - 1),
        (-1e10, I32, -(2**31)),
        (2147483647.5, I32, 2**31 - 1),
        (math.inf, I64, 2**63 - 1),
        (-math.inf, I64, -(2**63)),
        (math.nan, I32, 0),
        (math.nan, I8, 0),
        (200.7, I8, 127),
        (-200.7, I8, -128),
        (300.0, U8, 255),
        (-1.0, U8, 0),
        (1e20, U32, 2**32 - 1),
    ]
    for value, target, want in cases:
        assert fold_convert(value, F32, target) == want, (value, target)


def test_float_to_integer_in_range_against_numpy():
    rng = random.Random("f2i")
    xs = [rng.uniform(-2e9, 2e9) for _ in range(300)] + [rng.uniform(-5, 5) for _ in range(50)]
    want = np.array(xs).astype(np.int32).tolist()  # C's cast: truncation, in range
    assert [fold_convert(x, F64, I32) for x in xs] == want


@pytest.mark.parametrize(
    ("target", "np_t"),
    [(I8, np.int8), (I32, np.int32), (I64, np.int64), (U8, np.uint8), (U16, np.uint16)]
    + [(U32, np.uint32)],
    ids=str,
)
def test_integer_to_integer_keeps_the_low_bits(target, np_t):
    rng = random.Random(f"i2i{target}")
    xs = [rng.randint(-(2**63), 2**63 - 1) for _ in range(200)] + [-1, 0, 127, 128, 255, 256]
    want = np.array(xs, np.int64).astype(np_t).tolist()
    assert [fold_convert(x, I64, target) for x in xs] == want


def test_i8_sign_extends_and_u8_zero_extends():
    assert fold_convert(200, I32, I8) == -56
    assert fold_convert(-56, I8, I32) == -56  # a read widens with the sign
    assert fold_convert(-56, I32, U8) == 200
    assert fold_convert(200, U8, I32) == 200  # a read widens with zeros
    assert fold_convert(200, U8, I8) == -56
    assert fold_convert(2**32 - 1, U32, I64) == 2**32 - 1
    assert fold_convert(2**32 - 1, U32, I32) == -1  # a u32 above 2**31 needs 64-bit indices
    assert fold_convert(65535, U16, F32) == 65535.0


@pytest.mark.parametrize("t", [F16, BF16, F32, F64], ids=str)
def test_integer_to_float_rounds_once(t):
    rng = random.Random(f"i2f{t}")
    for _ in range(300):
        n = rng.randint(-(2**63), 2**63 - 1) >> rng.randrange(63)
        want = S.round_exact(Fraction(n), t)  # checked against the grid above
        assert fold_convert(n, I64, t) == want
        if t in (F16, F32) and abs(n) < 2**53:  # exact in f64: numpy agrees
            with np.errstate(over="ignore"):
                assert want == float(np.float64(n).astype({F16: np.float16, F32: np.float32}[t]))
    big = 2**60 + 2**36 + 1  # via an f64 first it would be 2**60
    assert fold_convert(big, I64, F32) == 2.0**60 + 2.0**37
    assert fold_convert(70000, I32, F16) == math.inf


def test_float_to_float_rounds_to_nearest():
    assert fold_convert(0.1, F64, F32) == float(np.float32(0.1))
    assert fold_convert(S.literal_float("0.1"), F32, F16) == float(np.float16(np.float32(0.1)))
    assert fold_convert(1e5, F32, F16) == math.inf
    assert fold_convert(1e5, F32, BF16) == 99840.0
    assert math.isnan(fold_convert(math.nan, F32, F16))
    assert fold_convert(-0.0, F32, F64) == 0.0


def test_bool_has_no_conversion():
    for t in [F16, BF16, F32, F64, I8, I32, I64, U8]:
        assert S.conversion_reason(BOOL, t) is not None
        assert S.conversion_reason(t, BOOL) is not None
        with pytest.raises(BadOperand, match="no conversion"):
            fold_convert(True, BOOL, t)
        with pytest.raises(BadOperand, match="no conversion"):
            fold_convert(1, t, BOOL)
    assert S.conversion_reason(I32, U8) is not None  # storage: written by a store, not u8(x)
    assert S.conversion_reason(U8, I32) is None and S.conversion_reason(F32, I8) is None


# -- bits and elementwise built-ins --------------------------------------------------------


def test_bits_against_numpy():
    rng = random.Random("bits")
    for _ in range(200):
        b16, b32 = rng.randrange(2**16), rng.randrange(2**32)
        h = np.array([b16], np.uint16).view(np.float16)[0]
        f = np.array([b32], np.uint32).view(np.float32)[0]
        if not np.isnan(h):
            assert S.f16bits(b16 | rng.randrange(2**16) << 16) == float(h)
            assert S.to_bits(float(h), F16) == b16
        if not np.isnan(f):
            assert S.from_bits(b32, F32) == float(f) and S.to_bits(float(f), F32) == b32
    assert S.from_bits(0x3F80, BF16) == 1.0 and S.to_bits(-2.0, BF16) == 0xC000
    assert struct.pack("<d", S.from_bits(S.to_bits(0.1, F64), F64)) == struct.pack("<d", 0.1)
    assert S.popcount(-1) == 32 and S.popcount(0xF0F0) == 8


def test_exact_built_ins_against_numpy():
    xs = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.7, -3.7, -0.2, 0.0, 1e10, -1e-3]
    a = np.array(xs, np.float32)
    for name, ref in [("round", np.rint(a)), ("floor", np.floor(a)), ("ceil", np.ceil(a))]:
        got = [fold_call(name, [float(x)], F32) for x in a]
        want = ref.astype(np.float64).tolist()
        assert got == want, name
        assert [math.copysign(1, g) for g in got] == [math.copysign(1, w) for w in want], name
    assert fold_call("abs", [-2.5], F32) == 2.5
    assert fold_call("abs", [-(2**31)], I32) == -(2**31)  # max(x, -x), -x wrapping
    assert fold_call("abs", [-(2**31)], I64) == 2**31
    with pytest.raises(BadOperand):
        fold_call("abs", [1], U8)


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "rsqrt", "tanh", "sin", "cos"])
def test_approximate_built_ins_are_the_f64_function_rounded_to_f32(name):
    rng = random.Random(name)
    xs = [S.round_f32(rng.uniform(0.01, 20)) for _ in range(100)]
    xs += [S.round_f32(-rng.uniform(0.01, 20)) for _ in range(20)]
    fn = (lambda v: 1 / np.sqrt(v)) if name == "rsqrt" else getattr(np, name)
    with np.errstate(all="ignore"):
        want = fn(np.array(xs, np.float64)).astype(np.float32).astype(np.float64).tolist()
    got = [fold_call(name, [x], F32) for x in xs]
    assert all(g == w or (math.isnan(g) and math.isnan(w)) for g, w in zip(got, want, strict=True))


def test_pow_is_exp_of_b_log_a():
    assert fold_call("pow", [2.0, 10.0], F32) == 1024.0
    assert math.isnan(fold_call("pow", [-8.0, 1.0 / 3.0], F32))  # a > 0 only
    assert math.isnan(fold_call("pow", [0.0, 0.0], F32))
    assert fold_call("pow", [0.0, 2.0], F32) == 0.0
    assert fold_call("pow", [2.0, 0.5], F16) == float(np.float16(np.sqrt(2)))
    with pytest.raises(BadOperand, match="takes a float"):
        fold_call("exp", [1], I32)
