"""interp.threads: `cvt` against phobos.semantics (round to nearest, truncation with
saturation, wrapping) and against exact arithmetic for the directed roundings."""

import math
from fractions import Fraction

import numpy as np
import pytest

from phobos import semantics
from phobos.interp import GlobalMemory, run_lir
from phobos.interp.threads_values import cvt
from phobos.lower.lir import Block, Imm, Kernel, Param, Reg, inst
from phobos.lower.verify import verify

S = {
    "f16": semantics.F16,
    "bf16": semantics.BF16,
    "f32": semantics.F32,
    "f64": semantics.F64,
    "s8": semantics.I8,
    "s32": semantics.I32,
    "s64": semantics.I64,
    "u8": semantics.U8,
    "u16": semantics.U16,
    "u32": semantics.U32,
}
SPECIALS = [0.0, -0.0, 0.5, 1.5, 2.5, -2.5, 65504.0, 65520.0, 1e-8, 3e38, 1e39, 2.0**-149]
SPECIALS += [math.inf, -math.inf, math.nan, 2.0**31, -(2.0**31), 2.0**63, 4e9, -1.5]


def floats(n=400, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n) * 10.0 ** rng.integers(-10, 12, n)
    return np.concatenate([x, SPECIALS])


def same(got, want):
    got, want = float(got), float(want)
    if math.isnan(want):
        return math.isnan(got)
    return got == want and math.copysign(1, got) == math.copysign(1, want)


@pytest.mark.parametrize(("src", "dst"), [("f64", "f32"), ("f64", "f16"), ("f64", "bf16"),
                                          ("f32", "f16"), ("f32", "bf16"), ("f16", "f32"),
                                          ("bf16", "f16"), ("f16", "bf16")])  # fmt: skip
def test_float_to_float_rounds_to_nearest_as_semantics(src, dst):
    x = cvt(floats(), "f64", src)  # values of the source type
    got = cvt(x, src, dst, "rn")
    for xi, g in zip(x, got, strict=True):
        assert same(g, semantics.convert(float(xi), S[src], S[dst])), (src, dst, float(xi))


@pytest.mark.parametrize("src", ["f32", "f64", "f16"])
@pytest.mark.parametrize("dst", ["s8", "s32", "s64", "u8", "u16", "u32"])
def test_float_to_int_truncates_and_saturates_as_semantics(src, dst):
    x = cvt(floats(seed=1), "f64", src)
    got = cvt(x, src, dst, "rzi")
    for xi, g in zip(x, got, strict=True):
        assert int(g) == semantics.convert(float(xi), S[src], S[dst]), (src, dst, float(xi))


@pytest.mark.parametrize(
    ("rounding", "fn"), [("rni", None), ("rmi", math.floor), ("rpi", math.ceil)]
)
def test_float_to_int_other_roundings(rounding, fn):
    x = cvt(floats(seed=2), "f64", "f32")
    got = cvt(x, "f32", "s32", rounding)
    for xi, g in zip(x, got, strict=True):
        xi = float(xi)
        if math.isnan(xi):
            assert g == 0
            continue
        if math.isinf(xi):
            assert g == (2**31 - 1 if xi > 0 else -(2**31))
            continue
        r = round(xi) if fn is None else fn(xi)  # Python's round: half to even
        assert int(g) == min(max(r, -(2**31)), 2**31 - 1), xi


@pytest.mark.parametrize("src", ["s32", "s64"])
@pytest.mark.parametrize("dst", ["f16", "bf16", "f32", "f64"])
def test_int_to_float_rounds_once_as_semantics(src, dst):
    rng = np.random.default_rng(3)
    hi = 2**31 if src == "s32" else 2**63
    values = rng.integers(-hi, hi, 300, dtype=np.int64)
    values = np.concatenate([values, [0, 1, -1, hi - 1, -hi, 2**24 + 1, 2**53 + 1]])
    if src == "s64":
        values = np.concatenate([values, [2**60 + 2**36 + 1, -(2**62) - 2**38 - 1]])
    x = values.astype(np.int32 if src == "s32" else np.int64)
    got = cvt(x, src, dst, "rn")
    for xi, g in zip(x, got, strict=True):
        assert same(g, semantics.convert(int(xi), S[src], S[dst])), (src, dst, int(xi))


def test_int_to_int_wraps_as_semantics_or_saturates():
    x = np.array([-129, -128, -1, 0, 127, 128, 255, 256, 70000], np.int32)
    assert cvt(x, "s32", "s8").tolist() == [semantics.convert(int(v), S["s32"], S["s8"]) for v in x]
    assert cvt(x, "s32", "u8").tolist() == [int(v) & 0xFF for v in x]
    assert cvt(x, "s32", "s8", sat=True).tolist() == [-128, -128, -1, 0, 127, 127, 127, 127, 127]
    assert cvt(x, "s32", "u16", sat=True).tolist() == [0, 0, 0, 0, 127, 128, 255, 256, 65535]
    big = np.array([2**32 - 1, 2**31], np.uint32)
    assert cvt(big, "u32", "s32", sat=True).tolist() == [2**31 - 1, 2**31 - 1]
    assert cvt(big, "u32", "s64").tolist() == [2**32 - 1, 2**31]
    assert cvt(np.array([-1], np.int32), "s32", "u64").tolist() == [2**64 - 1]


def exact(v) -> Fraction:
    return Fraction(float(v)) if isinstance(v, (float, np.floating)) else Fraction(int(v))


@pytest.mark.parametrize(("src", "dst"), [("f64", "f32"), ("f64", "f16"), ("f64", "bf16"),
                                          ("s64", "f32"), ("s64", "f64"), ("u64", "bf16"),
                                          ("s32", "f16"), ("f32", "bf16")])  # fmt: skip
def test_directed_roundings_bracket_the_exact_value(src, dst):
    rng = np.random.default_rng(4)
    if src.startswith("f"):
        x = cvt(rng.standard_normal(300) * 10.0 ** rng.integers(-6, 6, 300), "f64", src)
    elif src == "u64":
        x = rng.integers(0, 2**64, 300, dtype=np.uint64)
    else:
        x = rng.integers(-(2**62), 2**62, 300, dtype=np.int64).astype(
            {"s64": np.int64, "s32": np.int32}[src]
        )
    rn, rz, rm, rp = (cvt(x, src, dst, r) for r in ("rn", "rz", "rm", "rp"))
    for k, xi in enumerate(x):
        e = exact(xi)
        lo, hi, near, zero = (float(r[k]) for r in (rm, rp, rn, rz))
        if math.isinf(lo) or math.isinf(hi):
            continue  # past the target's range
        assert Fraction(lo) <= e <= Fraction(hi), (src, dst, xi)
        if Fraction(lo) != e:
            assert float(cvt(np.array([lo]), "f64", dst, "rp")[0]) == lo
            assert float(cvt(np.array([hi]), "f64", dst)[0]) == hi
            # lo and hi are neighbours: nothing of the type lies between them
            up = float(cvt(np.array([np.nextafter(lo, math.inf)]), "f64", dst, "rp")[0])
            assert up == hi, (src, dst, xi)
        assert zero == (lo if e >= 0 else hi)
        assert near in (lo, hi)
        assert abs(Fraction(near) - e) <= abs(Fraction(lo if near == hi else hi) - e)


def test_directed_rounding_past_the_range():
    big = np.array([1e6, -1e6])
    assert cvt(big, "f64", "f16", "rz").tolist() == [65504.0, -65504.0]
    assert cvt(big, "f64", "f16", "rn").tolist() == [math.inf, -math.inf]
    assert cvt(big, "f64", "f16", "rm").tolist() == [65504.0, -math.inf]
    assert cvt(big, "f64", "f16", "rp").tolist() == [math.inf, -65504.0]


def test_saturation_to_the_unit_interval():
    x = np.array([-0.5, 0.25, 1.5, math.nan, math.inf], np.float32)
    assert cvt(x, "f32", "f32", sat=True).tolist() == [0.0, 0.25, 1.0, 0.0, 1.0]
    assert cvt(x, "f32", "f16", "rn", sat=True).tolist() == [0.0, 0.25, 1.0, 0.0, 1.0]
    assert cvt(np.array([3, -3], np.int32), "s32", "f32", sat=True).tolist() == [1.0, 0.0]


def test_round_to_integral_float():
    x = np.array([2.5, 3.5, -2.5, -0.4, 1.7], np.float32)
    assert cvt(x, "f32", "f32", "rni").tolist() == [2.0, 4.0, -2.0, -0.0, 2.0]
    assert cvt(x, "f32", "f32", "rmi").tolist() == [2.0, 3.0, -3.0, -1.0, 1.0]
    assert cvt(x, "f32", "f32", "rpi").tolist() == [3.0, 4.0, -2.0, -0.0, 2.0]
    assert cvt(x, "f32", "f32", "rzi").tolist() == [2.0, 3.0, -2.0, -0.0, 1.0]


def test_cvt_in_a_kernel_stores_bf16_bits():
    t, a, x, h = Reg("t", "u32"), Reg("a", "u64"), Reg("x", "f32"), Reg("h", "bf16")
    a2 = Reg("a2", "u64")
    body = Block(
        (
            inst("sreg", (t,), (), name="tid.x"),
            inst("mul_wide", (a,), (t, Imm(4, "u32")), type="u32"),
            inst("add", (a,), (a, Reg("inp", "u64")), type="u64"),
            inst("ld", (x,), (a,), space="global", type="f32"),
            inst("cvt", (h,), (x,), type="bf16", from_type="f32", rounding="rn"),
            inst("mul_wide", (a2,), (t, Imm(2, "u32")), type="u32"),
            inst("add", (a2,), (a2, Reg("out", "u64")), type="u64"),
            inst("st", (), (a2, h), space="global", type="bf16"),
        )
    )
    kernel = Kernel("k", (Param("inp", "u64"), Param("out", "u64")), body, threads=64)
    verify(kernel)
    data = np.random.default_rng(5).standard_normal(64).astype(np.float32) * 1000
    mem = GlobalMemory()
    pi, po = mem.place(data), mem.place(np.zeros(64, np.uint16))
    run_lir(kernel, 1, {"inp": pi, "out": po}, mem)
    want = [semantics.to_bits(semantics.round_bf16(float(v)), semantics.BF16) for v in data]
    assert mem.read(po).tolist() == want
