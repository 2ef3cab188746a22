"""interp.threads: the value ops of lir against Python's exact integers and fractions
and against phobos.semantics."""

import math
import struct
from fractions import Fraction

import numpy as np
import pytest

from phobos import semantics
from phobos.interp import GlobalMemory, InterpError, run_lir
from phobos.interp.threads_ops import arith, bits, compare
from phobos.interp.threads_ops import math as lir_math
from phobos.lower.lir import Block, Imm, Kernel, Param, Reg, inst
from phobos.lower.verify import verify

RNG = np.random.default_rng(11)
INTS = {"s32": (np.int32, 32, True), "u32": (np.uint32, 32, False),
        "s64": (np.int64, 64, True), "u64": (np.uint64, 64, False),
        "s16": (np.int16, 16, True), "u16": (np.uint16, 16, False)}  # fmt: skip


def wrap(v: int, bits_: int, signed: bool) -> int:
    v &= (1 << bits_) - 1
    return v - (1 << bits_) if signed and v >> (bits_ - 1) else v


def sample(t: str, n=200):
    dtype, width, signed = INTS[t]
    lo, hi = (-(1 << (width - 1)), 1 << (width - 1)) if signed else (0, 1 << width)
    edges = [lo, hi - 1, 0, 1, -1 if signed else 2, lo + 1]
    x = RNG.integers(lo, hi, n, dtype=dtype)
    return np.concatenate([x, np.array(edges, dtype=dtype)])


@pytest.mark.parametrize("t", list(INTS))
@pytest.mark.parametrize("op", ["add", "sub", "mul", "mul_hi", "min", "max", "div", "rem"])
def test_integer_arithmetic_wraps(op, t):
    dtype, width, signed = INTS[t]
    a, b = sample(t), np.roll(sample(t), 3)
    if op in ("div", "rem"):
        b = np.where(b == 0, dtype(3), b).astype(dtype)
    got = arith(op, t, [a, b])
    for x, y, g in zip(a.tolist(), b.tolist(), got.tolist(), strict=True):
        if op == "add":
            want = x + y
        elif op == "sub":
            want = x - y
        elif op == "mul":
            want = x * y
        elif op == "mul_hi":
            want = (x * y) >> width
        elif op in ("min", "max"):
            want = min(x, y) if op == "min" else max(x, y)
        else:  # C division: toward zero, remainder with the dividend's sign
            q = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
            want = q if op == "div" else x - q * y
        assert g == wrap(want, width, signed), (op, t, x, y)


def test_division_agrees_with_semantics():
    a, b = sample("s32"), np.roll(sample("s32"), 5)
    b = np.where(b == 0, np.int32(7), b).astype(np.int32)
    q, r = arith("div", "s32", [a, b]), arith("rem", "s32", [a, b])
    for x, y, gq, gr in zip(a.tolist(), b.tolist(), q.tolist(), r.tolist(), strict=True):
        if x == -(2**31) and y == -1:
            assert (gq, gr) == (-(2**31), 0)  # PTX wraps; the language refuses it elsewhere
            continue
        assert gq == semantics.fold_binary("/", x, y, semantics.I32)
        assert gr == semantics.fold_binary("%", x, y, semantics.I32)


def test_division_by_zero_only_counts_where_threads_run():
    a, b = np.array([1, 2], np.int32), np.array([1, 0], np.int32)
    with pytest.raises(InterpError, match="division by zero"):
        arith("div", "s32", [a, b])
    assert arith("div", "s32", [a, b], np.array([True, False]))[0] == 1


@pytest.mark.parametrize("t", ["s16", "u16", "s32", "u32"])
def test_mul_wide(t):
    dtype, width, signed = INTS[t]
    a, b = sample(t), np.roll(sample(t), 1)
    got = arith("mul_wide", t, [a, b])
    assert got.dtype.itemsize == 2 * dtype().itemsize
    assert got.tolist() == [x * y for x, y in zip(a.tolist(), b.tolist(), strict=True)]


def test_neg_and_abs_wrap_at_the_least_value():
    x = np.array([-(2**31), -5, 0, 7], np.int32)
    assert arith("neg", "s32", [x]).tolist() == [-(2**31), 5, 0, -7]
    assert arith("abs", "s32", [x]).tolist() == [-(2**31), 5, 0, 7]


def test_saturating_add():
    a = np.array([2**31 - 1, -(2**31), 5], np.int32)
    assert arith("add", "s32", [a, np.array([1, -1, 1], np.int32)], sat=True).tolist() == [
        2**31 - 1,
        -(2**31),
        6,
    ]


@pytest.mark.parametrize("t", ["s32", "u32", "b32", "s64", "u64"])
def test_shifts_clamp_the_amount(t):
    dtype = {
        "s32": np.int32,
        "u32": np.uint32,
        "b32": np.uint32,
        "s64": np.int64,
        "u64": np.uint64,
    }[t]
    width = 8 * np.dtype(dtype).itemsize
    signed = t.startswith("s")
    x = np.array([-5 if signed else 0xF0, 1, 123456], dtype=dtype)
    for n in (0, 1, 4, width - 1, width, width + 7, 2**32 - 1):
        amounts = np.full(3, n, np.uint32)
        left = bits("shl", t, [x, amounts]).tolist()
        right = bits("shr", t, [x, amounts]).tolist()
        for v, g_l, g_r in zip(x.tolist(), left, right, strict=True):
            m = min(n, width)
            assert g_l == wrap(v << m, width, signed)
            assert g_r == (v >> min(m, width - 1) if signed else (v >> m))


def test_popc_prmt_dp4a():
    x = np.array([0, 1, 0xFFFFFFFF, 0x80000001], np.uint32)
    assert bits("popc", "b32", [x]).tolist() == [0, 1, 32, 2]
    a, b = np.array([0x03020100], np.uint32), np.array([0x87868584], np.uint32)
    assert bits("prmt", "b32", [a, b, np.array([0x5410], np.uint32)]).tolist() == [0x85840100]
    assert bits("prmt", "b32", [a, b, np.array([0x000C], np.uint32)]).tolist() == [
        0xFF
    ]  # sign of byte 4
    # The special modes with selector 1 (c = 5: only c[1:0] counts), pool bytes 0..7.
    pool_a, pool_b = np.array([0x03020100], np.uint32), np.array([0x07060504], np.uint32)
    sel = np.array([5], np.uint32)
    for mode, want in [("f4e", 0x04030201), ("b4e", 0x06070001), ("rc8", 0x01010101),
                       ("ecl", 0x03020101), ("ecr", 0x01010100), ("rc16", 0x03020302)]:  # fmt: skip
        assert bits("prmt", "b32", [pool_a, pool_b, sel], mode=mode).tolist() == [want], mode
    a = np.array([0x01FF7F80], np.uint32)  # bytes (low first) 0x80, 0x7F, 0xFF, 0x01
    b = np.array([0x02020202], np.uint32)
    c = np.array([10], np.int32)
    assert bits("dp4a", "s32", [a, b, c], from_type="s32").tolist() == [
        10 + 2 * (-128 + 127 - 1 + 1)
    ]
    assert bits("dp4a", "u32", [a, b, c.astype(np.uint32)], from_type="u32").tolist() == [
        10 + 2 * (128 + 127 + 255 + 1)
    ]


FLOATS = np.array([1.0, -2.5, 0.0, -0.0, np.nan, np.inf, -np.inf, 3.0], np.float32)


@pytest.mark.parametrize("cmp", ["eq", "ne", "lt", "le", "gt", "ge"])
def test_float_comparisons_ordered_and_unordered(cmp):
    a, b = FLOATS, np.roll(FLOATS, 1)
    ordered = compare(cmp, "f32", a, b)
    unordered = compare(cmp + "u", "f32", a, b)
    for x, y, o, u in zip(a.tolist(), b.tolist(), ordered, unordered, strict=True):
        nan = math.isnan(x) or math.isnan(y)
        py = {"eq": x == y, "ne": x != y, "lt": x < y, "le": x <= y, "gt": x > y, "ge": x >= y}[cmp]
        assert o == (py and not nan)
        assert u == (py or nan)
    assert compare("nan", "f32", a, b).tolist() == [
        bool(np.isnan(x) or np.isnan(y)) for x, y in zip(a, b, strict=True)
    ]
    assert compare("num", "f32", a, b).tolist() == [
        not (np.isnan(x) or np.isnan(y)) for x, y in zip(a, b, strict=True)
    ]


def test_unsigned_comparison_names():
    a, b = np.array([-1, 1], np.int32), np.array([1, -1], np.int32)
    assert compare("lt", "s32", a, b).tolist() == [True, False]
    assert compare("lo", "s32", a, b).tolist() == [False, True]
    assert compare("hs", "s32", a, b).tolist() == [True, False]


def test_float_min_max_follow_semantics():
    a, b = FLOATS, np.roll(FLOATS, 3)
    for op, fn in (("min", semantics.float_min), ("max", semantics.float_max)):
        got = arith(op, "f32", [a, b])
        for x, y, g in zip(a.tolist(), b.tolist(), got.tolist(), strict=True):
            want = fn(x, y)
            assert (math.isnan(g) and math.isnan(want)) or (
                g == want and math.copysign(1, g) == math.copysign(1, want)
            )
    assert math.copysign(1, float(arith("min", "f32", [np.float32(0.0), np.float32(-0.0)]))) < 0


def f32_exact_round(q: Fraction) -> float:
    return semantics.round_exact(q, semantics.F32)


def test_f32_fma_rounds_once():
    a = RNG.standard_normal(300).astype(np.float32)
    b = RNG.standard_normal(300).astype(np.float32)
    c = (-(a.astype(np.float64) * b)).astype(np.float32)  # cancels: the product's tail matters
    got = arith("fma", "f32", [a, b, c])
    for x, y, z, g in zip(a.tolist(), b.tolist(), c.tolist(), got.tolist(), strict=True):
        assert g == f32_exact_round(Fraction(x) * Fraction(y) + Fraction(z))


@pytest.mark.parametrize("t", ["f16", "bf16", "f32"])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
@pytest.mark.parametrize("rounding", ["rn", "rz", "rm", "rp"])
def test_float_arithmetic_roundings_are_exact(op, t, rounding):
    from phobos.interp.threads_values import cvt, step

    a = cvt(RNG.standard_normal(100) * 8, "f64", t)
    b = cvt(RNG.standard_normal(100) * 8, "f64", t)
    got = arith(op, t, [a, b], rounding=rounding)
    st = {"f16": semantics.F16, "bf16": semantics.BF16, "f32": semantics.F32}[t]
    for x, y, g in zip(a.tolist(), b.tolist(), got.tolist(), strict=True):
        x, y = Fraction(x), Fraction(y)
        q = {"add": x + y, "sub": x - y, "mul": x * y, "div": x / y}[op]
        if rounding == "rn":
            assert g == semantics.round_exact(q, st)
            continue
        up = Fraction(float(step(np.array([g]), t, True)[0]))
        down = Fraction(float(step(np.array([g]), t, False)[0]))
        below = rounding == "rm" or (rounding == "rz" and q > 0)
        if below:  # the greatest value of t at most q
            assert Fraction(g) <= q < up, (x, y)
        else:  # the least value of t at least q
            assert down < q <= Fraction(g), (x, y)


def test_math_is_f64_rounded_to_f32():
    x = np.array([0.5, -1.25, 3.0, 10.0], np.float32)
    for op, fn in (("ex2", lambda v: 2.0**v), ("sin", math.sin), ("tanh", math.tanh)):
        got = lir_math(op, "f32", x)
        assert got.dtype == np.float32
        assert got.tolist() == [struct.unpack("f", struct.pack("f", fn(v)))[0] for v in x.tolist()]
    assert lir_math("rsqrt", "f32", np.array([4.0], np.float32)).tolist() == [0.5]
    assert lir_math("lg2", "f16", np.array([8.0], np.float16)).dtype == np.float16
    assert lir_math("sqrt", "f32", np.array([2.0], np.float32), "rn").tolist() == [
        f32_exact_round(Fraction(math.sqrt(2.0)))
    ]


def test_mov_and_bitcast_pack_and_reinterpret():
    f, b, h0, h1, w = (
        Reg("f", "f32"),
        Reg("b", "b32"),
        Reg("h0", "f16"),
        Reg("h1", "f16"),
        Reg("w", "b32"),
    )
    u0, a = Reg("u0", "b16"), Reg("out", "u64")
    body = Block(
        (
            inst("mov", (f,), (Imm(1.5, "f32"),), type="f32"),
            inst("bitcast", (b,), (f,)),
            inst("st", (), (a, b), space="global", type="b32"),
            inst("cvt", (h0,), (f,), type="f16", from_type="f32", rounding="rn"),
            inst("mov", (h1,), (Imm(-2.0, "f16"),), type="f16"),
            inst("mov", (w,), (h0, h1), type="b32"),  # {h0, h1}: h0 in the low half
            inst("add", (a,), (a, Imm(4, "u64")), type="u64"),
            inst("st", (), (a, w), space="global", type="b32"),
            inst("bitcast", (u0,), (h1,)),
            inst("add", (a,), (a, Imm(4, "u64")), type="u64"),
            inst("st", (), (a, u0), space="global", type="b16"),
        )
    )
    kernel = Kernel("k", (Param("out", "u64"),), body, threads=1)
    verify(kernel)
    mem = GlobalMemory()
    out = mem.place(np.zeros(3, np.uint32))
    run_lir(kernel, 1, {"out": out}, mem)
    got = mem.read(out).tolist()
    assert got[0] == 0x3FC00000
    assert got[1] == 0xC0003E00
    assert got[2] == 0xC000


def test_a_register_read_as_a_float_of_another_width_is_refused():
    d, x = Reg("d", "f64"), Reg("x", "f32")
    body = Block(
        (
            inst("mov", (x,), (Imm(1.0, "f32"),), type="f32"),
            inst("add", (d,), (x, x), type="f64"),
        )
    )
    with pytest.raises(InterpError, match="register `%x` of type f32 cannot be read as f64"):
        run_lir(Kernel("k", (), body, threads=1), 1, {}, GlobalMemory())
