"""Elementwise tile statements: fused sweeps at the widest provable vector width, masks
only where a slice may run past its tensor, broadcasting, tile placements."""

from pathlib import Path

import numpy as np
import pytest
from lowerkit import insts, lowered, ops, ptxas, run_both

from phobos.lower import lir

rng = np.random.default_rng(11)

VADD = """
@autotune(BLOCK in [1024, 4096])
kernel k(x: tensor<f32>[N], y: tensor<f32>[N], out: tensor<f32>[N]) {
  let base = ctx.block.x * BLOCK
  out[base :+ BLOCK] = x[base :+ BLOCK] + y[base :+ BLOCK]
}
"""


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("block", [1024, 4096])
def test_vector_add_is_one_v4_load_per_operand_masked_at_the_tail(block):
    hk, k = lowered(VADD, variant={"BLOCK": block})
    loads = ops(k, "ld", space="global")
    assert loads and all(i.attr("vec") == 4 and i.attr("type") == "f32" for i in loads)
    assert all(i.guard is not None for i in loads + ops(k, "st"))
    assert len(loads) == 2 * block // 1024  # straight-line: block / (256 threads * 4) groups
    n = 3 * block - 12  # ragged: the last CTA runs past N
    ref, got = run_both(
        hk, k, (3,), {"x": f32(n), "y": f32(n), "out": np.full(n, np.nan, np.float32)}
    )
    assert np.array_equal(ref["out"], got["out"])
    ptxas(k)
    ptxas(k, "sm_80")


def test_aligned_kernel_has_no_guards_and_traps_at_entry():
    src = "@aligned(N = BLOCK)\n" + VADD
    hk, k = lowered(src)
    assert all(i.guard is None for i in ops(k, "ld") + ops(k, "st"))
    assert len(ops(k, "trap")) == 1 and ops(k, "trap")[0].guard is not None
    n = 2048
    ref, got = run_both(hk, k, (2,), {"x": f32(n), "y": f32(n), "out": np.zeros(n, np.float32)})
    assert np.array_equal(ref["out"], got["out"])
    ptxas(k)


def test_saxpy_example_lowers_and_agrees():
    with open(Path(__file__).parents[2] / "examples" / "saxpy.ph") as f:
        src = f.read()
    hk, k = lowered(src, "saxpy", variant={"BLOCK": 16})
    assert {i.attr("vec") for i in ops(k, "ld")} == {4}
    n = 100
    arrays = {"x": f32(n), "y": f32(n), "out": np.zeros(n, np.float32)}
    ref, got = run_both(hk, k, (7,), arrays, {"alpha": np.float32(1.5)})
    np.testing.assert_array_equal(ref["out"], got["out"])
    ptxas(k)


def test_unaligned_start_falls_back_to_scalar_accesses():
    src = """
kernel k(x: tensor<f32>[N], out: tensor<f32>[N], s: i32) {
  out[s :+ 256] = x[s :+ 256] * 2.0
}"""
    hk, k = lowered(src)
    assert {i.attr("vec", 1) for i in ops(k, "ld")} == {1}
    n = 300
    ref, got = run_both(hk, k, (1,), {"x": f32(n), "out": np.zeros(n, np.float32)},
                        {"s": np.int32(5)})  # fmt: skip
    assert np.array_equal(ref["out"], got["out"])


def test_two_dimensional_slices_broadcast_a_column_and_a_row():
    src = """
kernel k(A: tensor<f32>[M, N], C: tensor<f32>[M, 1], R: tensor<f32>[1, N], O: tensor<f32>[M, N]) {
  let r = ctx.block.x * 8
  O[r :+ 8, 0 :+ 64] = A[r :+ 8, 0 :+ 64] * C[r :+ 8, 0 :+ 1] + R[0 :+ 1, 0 :+ 64]
}"""
    hk, k = lowered(src)
    m, n = 13, 60  # ragged on both axes
    arrays = {"A": f32(m, n), "C": f32(m, 1), "R": f32(1, n), "O": np.zeros((m, n), np.float32)}
    ref, got = run_both(hk, k, (2,), arrays)
    np.testing.assert_allclose(got["O"], ref["O"], rtol=1e-6)
    ptxas(k)


def test_static_extents_are_masked_in_place_or_not_at_all():
    src = """
kernel k(A: tensor<f32>[16, 64], O: tensor<f32>[16, 64]) {
  O[0 :+ 16, 0 :+ 64] = A[0 :+ 16, 0 :+ 64] + 1.0
  O[ctx.block.x * 16 :+ 16, 0 :+ 64] += A[0 :+ 16, 0 :+ 64]
}"""
    hk, k = lowered(src)
    first = [i for i in insts(k.body) if i.op in ("ld", "st")][:2]
    assert all(i.guard is None for i in first)  # provably inside
    arrays = {"A": f32(16, 64), "O": np.zeros((16, 64), np.float32)}
    ref, got = run_both(hk, k, (1,), arrays)
    np.testing.assert_allclose(got["O"], ref["O"])


def test_register_tiles_and_a_barrier_only_between_different_layouts():
    src = """
kernel k(A: tensor<f32>[M, N], O: tensor<f32>[M, N]) {
  let r = ctx.block.x * 4
  var t = A[r :+ 4, 0 :+ 256]
  t = t * 2.0 + 1.0
  var u: tile<f32>[4, 256] = t - 3.0
  var c: tile<f32>[4, 1] = A[r :+ 4, 0 :+ 1]
  O[r :+ 4, 0 :+ 256] = u * c
}"""
    hk, k = lowered(src)
    # t and u stay in registers: the only shared tile is `c`, read broadcast
    assert [b.name.split("_")[1] for b in k.shared] == ["c"]
    assert len(ops(k, "bar")) == 1
    m, n = 7, 256
    ref, got = run_both(hk, k, (2,), {"A": f32(m, n), "O": np.zeros((m, n), np.float32)})
    np.testing.assert_allclose(got["O"], ref["O"], rtol=1e-6)
    ptxas(k)


def test_f16_storage_converts_in_the_sweep():
    src = """
kernel k(X: tensor<f16>[N], O: tensor<f16>[N], Z: tensor<u8>[N]) {
  let b = ctx.block.x * 512
  O[b :+ 512] = f16(f32(X[b :+ 512]) * 1.5 + 0.25)
}"""
    hk, k = lowered(src)
    # 16 bytes an access (4 words of two f16), the first 8 alone where N ends mid-vector
    assert {(i.attr("vec"), i.attr("type")) for i in ops(k, "ld")} == {(4, "b32"), (2, "b32")}
    n = 1004
    x = rng.standard_normal(n).astype(np.float16)
    ref, got = run_both(
        hk, k, (2,), {"X": x, "O": np.zeros(n, np.float16), "Z": np.zeros(n, np.uint8)}
    )
    assert np.array_equal(ref["O"], got["O"])
    ptxas(k)


def test_large_tiles_sweep_in_a_loop():
    src = """
kernel k(x: tensor<f32>[N], out: tensor<f32>[N]) {
  out[ctx.block.x * 32768 :+ 32768] = exp(x[ctx.block.x * 32768 :+ 32768])
}"""
    hk, k = lowered(src)
    assert any(isinstance(i, lir.For) for i in k.body.items)
    n = 40000
    ref, got = run_both(hk, k, (2,), {"x": f32(n), "out": np.zeros(n, np.float32)})
    np.testing.assert_allclose(got["out"], ref["out"], rtol=1e-5)


def test_narrow_integers_load_widened_and_wrap():
    src = """
kernel k(A: tensor<i8>[N], B: tensor<u8>[N], O: tensor<i32>[N], P: tensor<i8>[N]) {
  let b = ctx.block.x * 256
  O[b :+ 256] = i32(A[b :+ 256]) * 3 + i32(B[b :+ 256])
  P[b :+ 256] = A[b :+ 256] * A[b :+ 256]
  let i = ctx.block.x * ctx.threads + ctx.thread
  if i < N { let q: i8 = A[i]; O[i] += i32(q + q) }
}"""
    hk, k = lowered(src)
    n = 600
    arrays = {
        "A": rng.integers(-128, 127, n).astype(np.int8),
        "B": rng.integers(0, 255, n).astype(np.uint8),
        "O": np.zeros(n, np.int32),
        "P": np.zeros(n, np.int8),
    }
    ref, got = run_both(hk, k, (3,), arrays)
    assert np.array_equal(ref["O"], got["O"]) and np.array_equal(ref["P"], got["P"])
    ptxas(k)
