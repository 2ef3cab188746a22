"""16-bit floats sweep 8 to a 16-byte access: `ld.global.v4.b32` words unpacked into two
f16 registers each (`mov.b32 {lo, hi}`), packed back before `st.global.v4.b32`; the
accesses are as wide as the alignment proves, and a bound between a vector's halves
takes the first 8 bytes alone."""

import sys
from pathlib import Path

import numpy as np
import pytest
from lowerkit import lowered, ops, ptxas, run_both, text

from phobos.interp.errors import InterpError
from phobos.interp.threads import GlobalMemory, run_lir
from phobos.lower import lir
from phobos.lower.kernel import lower_kernel
from phobos.lower.lir import Block, Imm, Kernel, Param, Reg, inst
from phobos.lower.lirparse import parse_kernel
from phobos.lower.verify import LirError, verify

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks import kernels  # noqa: E402

rng = np.random.default_rng(11)


def packed_kernel(offset: int = 0) -> Kernel:
    """Each thread: 8 f16 at x + 16 * tid (+ offset bytes) doubled into out."""
    x, out = Reg("x", "u64"), Reg("out", "u64")
    tid, off, ax, ao = Reg("tid", "u32"), Reg("off", "u64"), Reg("ax", "u64"), Reg("ao", "u64")
    words = [Reg(f"w{k}", "b32") for k in range(4)]
    halves = [Reg(f"h{k}", "f16") for k in range(8)]
    doubled = [Reg(f"d{k}", "f16") for k in range(8)]
    packed = [Reg(f"p{k}", "b32") for k in range(4)]
    body = [
        inst("sreg", (tid,), (), name="tid.x"),
        inst("mul_wide", (off,), (tid, Imm(16, "u32")), type="u32"),
        inst("add", (off,), (off, Imm(offset, "u64")), type="u64"),
        inst("add", (ax,), (x, off), type="u64"),
        inst("add", (ao,), (out, off), type="u64"),
        inst("ld", words, (ax,), space="global", type="b32", vec=4),
        *[inst("mov", halves[2 * k : 2 * k + 2], (words[k],), type="b32") for k in range(4)],
        *[inst("add", (d,), (h, h), type="f16") for d, h in zip(doubled, halves, strict=True)],
        *[inst("mov", (packed[k],), doubled[2 * k : 2 * k + 2], type="b32") for k in range(4)],
        inst("st", (), (ao, *packed), space="global", type="b32", vec=4),
    ]
    return Kernel("k", (Param("x", "u64"), Param("out", "u64")), Block(tuple(body)), threads=32)


def test_pack_and_unpack_verify_round_trip_and_run():
    k = packed_kernel()
    verify(k)
    t = text(k)
    assert "%h0, %h1 = mov.b32 %w0" in t and "%p0 = mov.b32 %d0, %d1" in t
    assert parse_kernel(t) == k
    x = rng.standard_normal(256).astype(np.float16)
    mem = GlobalMemory()
    xa, oa = mem.place(x.copy(), "x"), mem.place(np.zeros(256, np.float16), "out")
    run_lir(k, 1, {"x": xa, "out": oa}, mem)
    assert np.array_equal(mem.read(oa), x + x)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_pack_and_unpack_emit_and_assemble(arch):
    from phobos.ptx.emit import emit_module

    ptx = emit_module([packed_kernel()], arch)
    assert "ld.global.v4.b32" in ptx and "st.global.v4.b32" in ptx
    assert "mov.b32 {%h" in ptx and "mov.b32 %r" in ptx
    ptxas(packed_kernel(), arch)


def test_a_misaligned_16_byte_access_is_refused():
    mem = GlobalMemory()
    xa = mem.place(np.zeros(512, np.float16), "x")
    oa = mem.place(np.zeros(512, np.float16), "out")
    with pytest.raises(InterpError, match="misaligned address"):
        run_lir(packed_kernel(offset=8), 1, {"x": xa, "out": oa}, mem)


@pytest.mark.parametrize(
    "bad",
    [
        # one 16-bit half, or three
        lambda w, h, f: inst("mov", (h[0],), (w, h[1]), type="b32"),
        lambda w, h, f: inst("mov", (h[0], h[1], h[2]), (w,), type="b32"),
        # halves of the wrong width, or an immediate half
        lambda w, h, f: inst("mov", (w,), (f, h[0]), type="b32"),
        lambda w, h, f: inst("mov", (w,), (h[0], Imm(0, "b16")), type="b32"),
        # not b32 / b64
        lambda w, h, f: inst("mov", (h[0], h[1]), (w,), type="u32"),
    ],
)
def test_other_packing_forms_are_refused(bad):
    w, f = Reg("w", "b32"), Reg("f", "f32")
    h = [Reg(f"h{k}", "f16") for k in range(3)]
    init = [inst("mov", (r,), (Imm(0, r.type),), type=r.type) for r in (w, f, *h)]
    with pytest.raises(LirError, match="packs two registers"):
        verify(Kernel("k", (), Block((*init, bad(w, h, f)))))


# ---------------------------------------------------------------------------
# The benchmark kernels


def lowered_benchmark(name, block):
    hk = getattr(kernels, name).checked({"BLOCK": block})
    k, diags = lower_kernel(hk)
    assert k is not None, [d.message for d in diags]
    verify(k)
    assert parse_kernel(lir.print_kernel(k)) == k
    return hk, k


def norm_arrays(name, m, n):
    f16 = lambda *s: rng.standard_normal(s).astype(np.float16)  # noqa: E731
    arrays = {"X": f16(m, n), "Y": np.full((m, n), np.nan, np.float16), "W": f16(1, n)}
    if name == "layer_norm":
        arrays["B"] = f16(1, n)
    return arrays


@pytest.mark.parametrize("name", ["layer_norm", "rms_norm"])
@pytest.mark.parametrize("block, n", [(1024, 1000), (1024, 1024), (8192, 8000), (8192, 8192)])
def test_norm_benchmarks_agree_with_the_tile_interpreter(name, block, n):
    hk, k = lowered_benchmark(name, block)
    # Rows of X and Y start at row * N, N dynamic: only a multiple of 4 elements (8
    # bytes) is provable, so their sweeps are versioned on N % 8 (16 bytes, or 8).
    loads = {(i.attr("vec"), i.attr("type")) for i in ops(k, "ld", space="global")}
    assert {(4, "b16"), (4, "b32")} <= loads
    m = 3
    ref, got = run_both(hk, k, (m,), norm_arrays(name, m, n), {"eps": np.float32(1e-5)})
    diff = np.abs(ref["Y"].astype(np.float32) - got["Y"].astype(np.float32))
    assert diff.max() <= 2e-2


STATIC_ROWS = """
@autotune(C in [1024, 8192])
kernel k(X: tensor<f16>[M, ROW], W: tensor<f16>[1, N], Y: tensor<f16>[M, ROW], eps: f32) {
  let r = ctx.block.x
  var x: tile<f32>[1, C] = f32(X[r :+ 1, 0 :+ C])
  var rstd: tile<f32>[1, 1] = rsqrt(rowsum(x * x) / f32(N) + eps)
  Y[r :+ 1, 0 :+ C] = f16(x * rstd * f32(W[0 :+ 1, 0 :+ C]))
}
"""


@pytest.mark.parametrize("c, row", [(1024, "1000"), (8192, "8000"), (1024, "1024")])
def test_rms_norm_over_static_rows_takes_16_bytes(c, row):
    hk, k = lowered(STATIC_ROWS.replace("ROW", row), variant={"C": c})
    loads = {(i.attr("vec"), i.attr("type")) for i in ops(k, "ld", space="global")}
    assert (4, "b32") in loads and not any(t == "b16" for _, t in loads)
    stores = {(i.attr("vec"), i.attr("type")) for i in ops(k, "st", space="global")}
    assert (4, "b32") in stores and not any(t == "b16" for _, t in stores)
    assert "mov.b32 {" not in text(k)  # lir's own form: `%h0, %h1 = mov.b32 %w`
    m, n = 3, int(row)
    arrays = {"X": norm_arrays("rms_norm", m, n)["X"], "W": norm_arrays("rms_norm", 1, n)["W"],
              "Y": np.full((m, n), np.nan, np.float16)}  # fmt: skip
    ref, got = run_both(hk, k, (m,), arrays, {"eps": np.float32(1e-5)}, {"N": n})
    diff = np.abs(ref["Y"].astype(np.float32) - got["Y"].astype(np.float32))
    assert diff.max() <= 2e-2
    ptxas(k)
    ptxas(k, "sm_80")


def test_a_dynamic_row_extent_of_1004_keeps_8_bytes_after_row_0():
    src = """
kernel k(X: tensor<f16>[M, N], W: tensor<f16>[1, N], Y: tensor<f16>[M, N],
         Z: tensor<f16>[1, N]) {
  let r = ctx.block.x
  Y[r :+ 1, 0 :+ 1024] = X[r :+ 1, 0 :+ 1024] * W[0 :+ 1, 0 :+ 1024]
  Z[0 :+ 1, 0 :+ 1024] = W[0 :+ 1, 0 :+ 1024] + W[0 :+ 1, 0 :+ 1024]
}"""
    hk, k = lowered(src)
    first, second = [], []
    for i in ops(k, "ld", space="global") + ops(k, "st", space="global"):
        (second if i.attr("type") == "b32" else first).append(i.attr("vec"))
    assert set(first) == {4}  # X, Y and (in their sweep) W: 8 bytes
    assert set(second) == {4, 2}  # row 0 of W into Z: 16 bytes, 8 past a bound mid-vector
    m, n = 5, 1004
    x = rng.standard_normal((m, n)).astype(np.float16)
    w = rng.standard_normal((1, n)).astype(np.float16)
    arrays = {"X": x, "W": w, "Y": np.zeros((m, n), np.float16), "Z": np.zeros((1, n), np.float16)}
    ref, got = run_both(hk, k, (m,), arrays)  # misaligned accesses would be refused
    assert np.array_equal(ref["Y"], got["Y"]) and np.array_equal(ref["Z"], got["Z"])
    ptxas(k)
