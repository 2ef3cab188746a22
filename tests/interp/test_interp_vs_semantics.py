"""The interpreter's vectorised scalar rules against `phobos.semantics`, element by element.

Every operator, conversion, rounding and math built-in the interpreter computes with numpy
on arrays is compared with `phobos.semantics` applied to each element of seeded random
arrays that also hold the edge values (zeros of both signs, NaN, infinities, the least and
greatest values, ties of f16 and bf16, shift counts past the width, INT_MIN / -1).

The comparison is exact: integers equal, floats equal bit for bit (the sign of a zero
counts; any NaN equals any NaN, as semantics does not say which NaN). That holds for the
approximate math built-ins too: semantics defines each as the exact function computed in
f64 and rounded to f32, and the interpreter computes it the same way (numpy's f64
function, then the same roundings). Where the two f64 libraries could differ, in the last
f64 bit, the f32 result is the same unless that bit decides an f32 tie, which no seeded
value here meets; an f64 operand's result keeps every f64 bit, so there the two may differ
by one unit in the last place, and that is the tolerance `F64_MATH_ULPS`.

Arrays of one element or more take the numpy code; a numpy scalar (a uniform value) goes
through `phobos.semantics` itself, which `test_uniform_values_take_semantics_itself` checks.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from phobos import semantics as sem
from phobos.interp import InterpError, ops
from phobos.interp.values import DTYPES, convert, round_bf16

SEED = 20240603
SIGNED = ("i8", "i32", "i64")
UNSIGNED = ("u8", "u16", "u32")
FLOATS = ("f16", "bf16", "f32", "f64")
NUMBERS = FLOATS + SIGNED + UNSIGNED
F64_MATH_ULPS = 1
RANDOM = 600  # random values per array, on top of the edges


@pytest.fixture(autouse=True)
def quiet_numpy():
    with np.errstate(all="ignore"):  # as `run_kernel` runs a kernel
        yield


def rng_for(*key) -> np.random.Generator:
    return np.random.default_rng([SEED, *(sum(map(ord, str(k))) for k in key)])


# -- values of each type -------------------------------------------------------------------


def random_floats(name: str, n: int, rng) -> np.ndarray:
    """Values of the float type `name`: every bit pattern equally likely (so every
    exponent, subnormals, infinities and NaNs), and half of them moderate normals."""
    if name == "f64":
        raw = rng.integers(0, 2**64, n, dtype=np.uint64).view(np.float64)
    elif name == "f32":
        raw = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    elif name == "f16":
        raw = rng.integers(0, 2**16, n, dtype=np.uint32).astype(np.uint16).view(np.float16)
    else:
        bits = rng.integers(0, 2**16, n, dtype=np.uint32).astype(np.uint32) << 16
        raw = bits.view(np.float32)
    moderate = rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)
    mixed = np.where(rng.random(n) < 0.5, raw.astype(np.float64), moderate)
    return typed_array(mixed.tolist(), name)


def typed_array(values, name: str) -> np.ndarray:
    """Python numbers as an array of `name`, each rounded by semantics (not by numpy)."""
    t = sem.scalar(name)
    if t.is_float:
        vals = [sem.round_to(float(v), t) for v in values]
    elif t.is_signed:
        vals = [sem.wrap(int(v), t.bits) for v in values]
    else:
        vals = [sem.wrap_unsigned(int(v), t.bits) for v in values]
    return np.array(vals, DTYPES[name])


def float_edges(name: str) -> list[float]:
    t = sem.scalar(name)
    big = sem.max_finite(t)
    p = {"f16": 11, "bf16": 8, "f32": 24, "f64": 53}[name]
    emin = {"f16": -14, "bf16": -126, "f32": -126, "f64": -1022}[name]
    tiny = math.ldexp(1.0, emin - p + 1)  # the least subnormal
    return [
        0.0,
        -0.0,
        math.nan,
        math.inf,
        -math.inf,
        big,
        -big,
        tiny,
        -tiny,
        math.ldexp(1.0, emin),
        1.0,
        -1.0,
        0.5,
        -0.5,
        1.5,
        2.5,
        -2.5,
        3.0,
        -7.5,
        2.0,
        1.0 + math.ldexp(1.0, 1 - p),  # one ulp past 1
        100.0,
        -1e4,
    ]


def _int_edges(t: sem.Scalar) -> list[int]:
    base = {0, 1, 2, 3, 7, 8, 31, 32, 33, t.hi, t.hi - 1, t.lo, t.lo + 1}
    if t.is_signed:
        base |= {-1, -2, -3, -7, -8}
    return sorted(v for v in base if t.lo <= v <= t.hi)


def values(name: str, rng, n: int = RANDOM) -> np.ndarray:
    """Edges then random values of `name`."""
    t = sem.scalar(name)
    if t.is_float:
        return np.concatenate([typed_array(float_edges(name), name), random_floats(name, n, rng)])
    wide = rng.integers(t.lo, t.hi, n, dtype=np.int64, endpoint=True)
    small = rng.integers(max(t.lo, -300), min(t.hi, 300), n // 2, dtype=np.int64, endpoint=True)
    edges = np.array(_int_edges(t), np.int64)
    return typed_array(np.concatenate([edges, wide, small]).tolist(), name)


def pairs(name: str, rng, n: int = RANDOM) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of edges, then random pairs (and a few with equal operands)."""
    t = sem.scalar(name)
    edges = float_edges(name) if t.is_float else _int_edges(t)
    e = typed_array(edges, name)
    a_e, b_e = np.repeat(e, len(e)), np.tile(e, len(e))
    a_r, b_r = values(name, rng, n)[len(e) :], values(name, rng, n)[len(e) :]
    same = a_r[: n // 8]
    return np.concatenate([a_e, a_r, same]), np.concatenate([b_e, b_r, same])


# -- comparison -----------------------------------------------------------------------------


def assert_same(got, want: list, name: str, what: str, inputs=()) -> None:
    """`got` (the interpreter's array) equals `want` (semantics' values) exactly."""
    got = np.asarray(got)
    assert got.shape == (len(want),), what
    if name == "bool":
        assert got.dtype == np.bool_, what
        bad = [k for k, (g, w) in enumerate(zip(got.tolist(), want, strict=True)) if g != w]
    elif name in FLOATS:
        assert got.dtype == DTYPES[name], (what, got.dtype)
        w = np.array(want, np.float64)
        g = got.astype(np.float64)
        same = (g == w) & (np.signbit(g) == np.signbit(w))
        same |= np.isnan(g) & np.isnan(w)
        bad = np.flatnonzero(~same).tolist()
    else:
        assert got.dtype == DTYPES[name], (what, got.dtype)
        bad = [k for k, (g, w) in enumerate(zip(got.tolist(), want, strict=True)) if g != w]
    if bad:
        k = bad[0]
        args = [np.asarray(x)[k].item() for x in inputs]
        pytest.fail(
            f"{what}: {len(bad)} of {len(want)} differ; first at {args}: "
            f"interpreter {got[k].item()!r}, semantics {want[k]!r}"
        )


def ulps_apart(g: np.ndarray, w: np.ndarray) -> np.ndarray:
    """How many f64 values lie between `g` and `w` (finite, same sign), elementwise."""
    gi, wi = g.view(np.int64), w.view(np.int64)
    return np.abs(gi - wi)


# -- binary and unary operators ---------------------------------------------------------------

ARITH = ("+", "-", "*", "/", "%")
CMP = ("==", "!=", "<", "<=", ">", ">=")
BITS = ("&", "|", "^")
SHIFTS = ("<<", ">>")


def binary_cases():
    for name in FLOATS:
        for op in ARITH + CMP:
            yield name, op
    for name in SIGNED:
        for op in ARITH + CMP + BITS + SHIFTS:
            yield name, op
    for op in ("==", "!=", "&&", "||"):
        yield "bool", op


@pytest.mark.parametrize(("name", "op"), list(binary_cases()))
def test_binary_operator(name, op):
    rng = rng_for("binary", name, op)
    t = sem.scalar(name)
    if name == "bool":
        a, b = np.array([0, 0, 1, 1], bool), np.array([0, 1, 0, 1], bool)
    else:
        a, b = pairs(name, rng)
    if op in SHIFTS:
        counts = [0, 1, 2, t.bits - 1, t.bits, t.bits + 1, 63, 64, 65, 127, 255, -1, -2, t.lo]
        counts += rng.integers(-2 * t.bits, 2 * t.bits, len(a) - len(counts)).tolist()
        b = typed_array(counts, name)
    if t.is_integer and op in ("/", "%"):
        b = np.where(b == 0, typed_array([-1], name), b)  # a zero divisor raises: see below
        a = np.concatenate([a, typed_array([t.lo, t.lo, -7, 7, -7, 7], name)])
        b = np.concatenate([b, typed_array([-1, 1, 2, -2, -2, 2], name)])
    got = ops.binary(op, a, b, "bool" if name == "bool" else name, active=np.ones(len(a), bool))
    want = [sem.fold_binary(op, x, y, t) for x, y in zip(a.tolist(), b.tolist(), strict=True)]
    result = "bool" if op in CMP or op in ("&&", "||") else name
    assert_same(got, want, result, f"{name} `{op}`", (a, b))


@pytest.mark.parametrize("name", SIGNED)
def test_integer_division_by_zero_raises_in_an_active_thread_only(name):
    a, b = typed_array([5, -5, 6], name), typed_array([0, 2, 0], name)
    for op in ("/", "%"):
        with pytest.raises(InterpError, match="integer division by zero"):
            ops.binary(op, a, b, name, active=np.array([True, True, False]))
        out = ops.binary(op, a, b, name, active=np.array([False, True, False]))
        assert out[1] == sem.fold_binary(op, -5, 2, sem.scalar(name))
        with pytest.raises(InterpError, match="integer division by zero"):
            ops.binary(op, a[0], b[0], name, active=np.array([True]))  # a uniform divisor


@pytest.mark.parametrize("name", SIGNED)
def test_tile_division_by_zero_is_quiet_only_in_padding(name):
    a = typed_array([5, -5, 6], name).reshape(1, 3)
    b = typed_array([0, 2, 0], name).reshape(1, 3)
    with pytest.raises(InterpError, match="integer division by zero"):
        ops.binary("/", a, b, name)  # no padding: every element is real
    with pytest.raises(InterpError, match="integer division by zero"):
        ops.binary("/", a, b, name, padding=np.array([[True, False, False]]))
    out = ops.binary("/", a, b, name, padding=np.array([[True, False, True]]))
    assert out.tolist() == [[0, -2, 0]]


def unary_cases():
    for name in FLOATS:
        yield name, "-"
    for name in SIGNED:
        yield name, "-"
        yield name, "~"
    yield "bool", "!"


@pytest.mark.parametrize(("name", "op"), list(unary_cases()))
def test_unary_operator(name, op):
    t = sem.scalar(name)
    a = np.array([False, True]) if name == "bool" else values(name, rng_for("unary", name, op))
    got = ops.unary(op, a, name)
    want = [sem.fold_unary(op, x, t) for x in a.tolist()]
    assert_same(got, want, name, f"`{op}` {name}", (a,))


@pytest.mark.parametrize("name", FLOATS + SIGNED)
@pytest.mark.parametrize("which", ["min", "max"])
def test_min_max(name, which):
    t = sem.scalar(name)
    a, b = pairs(name, rng_for(which, name))
    got = ops.minmax(which, a, b, name)
    want = [sem.fold_call(which, [x, y], t) for x, y in zip(a.tolist(), b.tolist(), strict=True)]
    assert_same(got, want, name, f"{which} {name}", (a, b))


# -- conversions and rounding ------------------------------------------------------------------


def conversion_inputs(source: str, rng) -> np.ndarray:
    """Values of `source`, and where it is an integer, values at and beside the ties of
    every narrower float (an i64 past 2**53 rounds once, not through an f64)."""
    v = values(source, rng)
    t = sem.scalar(source)
    if t.is_float:
        # near the ends of every integer type, where saturation starts
        ends = [x + d for k in (7, 15, 31, 63) for x in (2.0**k, -(2.0**k)) for d in (-1, 0)]
        ends += [255.5, 256.0, 65535.5, 65536.0, -0.99, 0.99, -128.5, 127.5, 1e10, -1e19]
        return np.concatenate([v, typed_array(ends, source)])
    extra = []
    for p in (8, 11, 24, 53):
        for e in range(p, t.bits if t.is_unsigned else t.bits - 1):
            ulp = 1 << (e - p + 1)
            m = int(rng.integers(1 << (p - 1), 1 << p))
            for d in (-1, 0, 1):
                x = (m << (e - p + 1)) + ulp // 2 + d  # at, below and past a tie
                if t.lo <= x <= t.hi:
                    extra += [x, -x] if t.is_signed and -x >= t.lo else [x]
    return np.concatenate([v, typed_array(extra, source)]) if extra else v


CONVERSIONS = [(s, d) for s in NUMBERS for d in NUMBERS]


@pytest.mark.parametrize(("source", "target"), CONVERSIONS)
def test_conversion(source, target):
    s, d = sem.scalar(source), sem.scalar(target)
    a = conversion_inputs(source, rng_for("convert", source, target))
    got = convert(a, target)
    want = [sem.convert(x, s, d) for x in a.tolist()]
    assert_same(got, want, target, f"{target}({source})", (a,))


def test_bool_converts_to_bool():
    assert convert(np.array([True, False]), "bool").tolist() == [True, False]
    assert sem.convert(True, sem.BOOL, sem.BOOL) is True


def ties(p: int, emin: int, emax: int, rng, n: int = 400) -> list[float]:
    """f64 values at a tie of a p-bit float, and one f64 unit and a far smaller step
    either side, over the exponents (subnormals and the overflow edge included)."""
    out = []
    for _ in range(n):
        e = int(rng.integers(emin - p, emax + 1))
        m = int(rng.integers(1 << (p - 1), 1 << p))
        q = max(e, emin) - p + 1  # the weight of the last bit
        tie = math.ldexp(2 * m + 1, q - 1)
        if math.isinf(tie):
            continue
        sign = -1.0 if rng.random() < 0.5 else 1.0
        for x in (tie, math.nextafter(tie, 0.0), math.nextafter(tie, math.inf)):
            out += [sign * x, sign * (x + math.ldexp(tie, -45))]
    top = math.ldexp((1 << p) - 1, emax - p + 1)  # the greatest finite value
    half = math.ldexp(1.0, emax - p)  # half its ulp: the tie with the infinity
    out += [top + half, top + half * (1 - 2.0**-40), math.nextafter(top + half, 0.0)]
    return out


@pytest.mark.parametrize("name", ["f16", "bf16", "f32"])
def test_rounding_from_f64_is_once_to_nearest_even(name):
    p, emin, emax = {"f16": (11, -14, 15), "bf16": (8, -126, 127), "f32": (24, -126, 127)}[name]
    rng = rng_for("round", name)
    xs = ties(p, emin, emax, rng) + random_floats("f64", 2000, rng).tolist()
    a = np.array(xs, np.float64)
    want = [sem.round_to(x, sem.scalar(name)) for x in xs]
    assert_same(convert(a, name), want, name, f"f64 -> {name}", (a,))
    if name == "bf16":
        assert_same(round_bf16(a), want, name, "round_bf16(f64)", (a,))
        f32 = a.astype(np.float32)  # from f32 values as well (a bf16 operation's result)
        want32 = [sem.round_bf16(x) for x in f32.astype(np.float64).tolist()]
        assert_same(round_bf16(f32), want32, name, "round_bf16(f32)", (f32,))


def test_bf16_from_f64_rounds_once_where_through_f32_would_not():
    x = 1.0 + 2.0**-8 + 2.0**-40  # f32 rounding would land on the bf16 tie, then down to 1.0
    assert float(np.float32(x)) == 1.0 + 2.0**-8
    assert float(convert(np.array([x]), "bf16")[0]) == sem.round_bf16(x) == 1.0 + 2.0**-7


def test_i64_to_float_rounds_once():
    x = 2**62 + 2**54 + 1  # through an f64: 2**62 + 2**54, a bf16 tie, then down to 2**62
    got = convert(np.array([x, -x], np.int64), "bf16").tolist()
    assert got == [sem.convert(x, sem.I64, sem.BF16), sem.convert(-x, sem.I64, sem.BF16)]
    assert got[0] == 2.0**62 + 2.0**55


# -- math built-ins ------------------------------------------------------------------------------

MATH1 = ("exp", "log", "sqrt", "rsqrt", "tanh", "sin", "cos", "round", "floor", "ceil", "abs")


def math_inputs(name: str, rng) -> np.ndarray:
    v = values(name, rng)
    near = rng.uniform(-100.0, 100.0, RANDOM)  # where exp and the rest are not 0, 1 or inf
    return np.concatenate([v, typed_array(near.tolist(), name)])


def check_math(got, want, name, what, inputs):
    if name != "f64":
        assert_same(got, want, name, what, inputs)
        return
    g, w = np.asarray(got, np.float64), np.array(want, np.float64)
    assert g.dtype == np.float64
    both_nan = np.isnan(g) & np.isnan(w)
    exact = (g == w) & (np.signbit(g) == np.signbit(w))
    close = np.isfinite(g) & np.isfinite(w) & (np.signbit(g) == np.signbit(w))
    close &= ulps_apart(g, w) <= F64_MATH_ULPS
    assert np.all(both_nan | exact | close), what


@pytest.mark.parametrize("name", FLOATS)
@pytest.mark.parametrize("fname", MATH1)
def test_math_builtin(fname, name):
    rng = rng_for("math", fname, name)
    a = math_inputs(name, rng)
    got = ops.math1(fname, a, name)
    want = [sem.call(fname, [x], sem.scalar(name)) for x in a.tolist()]
    check_math(got, want, name, f"{fname}({name})", (a,))


@pytest.mark.parametrize("name", FLOATS)
def test_pow(name):
    rng = rng_for("pow", name)
    a, b = pairs(name, rng)
    a2 = typed_array(rng.uniform(0.0, 50.0, RANDOM).tolist(), name)
    b2 = typed_array(rng.uniform(-20.0, 20.0, RANDOM).tolist(), name)
    a, b = np.concatenate([a, a2]), np.concatenate([b, b2])
    got = ops.power(a, b, name)
    t = sem.scalar(name)
    want = [sem.call("pow", [x, y], t) for x, y in zip(a.tolist(), b.tolist(), strict=True)]
    check_math(got, want, name, f"pow({name})", (a, b))


@pytest.mark.parametrize("name", SIGNED)
def test_integer_abs(name):
    a = values(name, rng_for("abs", name))
    want = [sem.call("abs", [x], sem.scalar(name)) for x in a.tolist()]
    assert_same(ops.math1("abs", a, name), want, name, f"abs({name})", (a,))


# -- uniform values -------------------------------------------------------------------------------


def test_uniform_values_take_semantics_itself():
    i32, f16, bf16 = np.int32, np.float16, np.float32
    assert ops.binary("/", i32(-7), i32(2), "i32") == -3
    assert ops.binary(">>", i32(-8), i32(-1), "i32") == -1
    assert ops.binary("<<", i32(1), i32(32), "i32") == 0
    assert ops.binary("/", i32(-(2**31)), i32(-1), "i32") == -(2**31)
    assert ops.binary("+", f16(2048.0), f16(1.0), "f16") == 2048.0
    out = ops.binary("*", bf16(1.0 + 2.0**-7), bf16(1.0 + 2.0**-7), "bf16")
    assert out.dtype == np.float32 and float(out) == sem.round_bf16((1.0 + 2.0**-7) ** 2)
    assert ops.binary("<", np.float32(np.nan), np.float32(1.0), "f32").dtype == np.bool_
    assert math.copysign(1.0, ops.minmax("min", np.float32(0.0), np.float32(-0.0), "f32")) < 0
    assert float(ops.math1("exp", np.float32(1.0), "f32")) == sem.call("exp", [1.0], sem.F32)
    assert ops.math1("abs", np.int8(-128), "i8") == -128
    assert ops.unary("-", np.int32(-(2**31)), "i32") == -(2**31)
    with pytest.raises(InterpError, match="integer division by zero"):
        ops.binary("%", i32(1), i32(0), "i32")
