"""Row reductions (softmax, layer norm, RMSNorm) and collectives: shuffles within a warp,
shared memory between warps, barriers only where threads meet other threads' bytes."""

import numpy as np
import pytest
from lowerkit import lowered, ops, ptxas, run_both

rng = np.random.default_rng(5)

SOFTMAX = """
@autotune(C in [1024, 2048])
kernel k(X: tensor<f32>[M, N], Y: tensor<f32>[M, N]) {
  let r = ctx.block.x
  var x: tile<f32>[1, C] = X[r :+ 1, 0 :+ C]
  x = where(iota(1) < N, x, -1.0e30)
  var m: tile<f32>[1, 1] = rowmax(x)
  var e: tile<f32>[1, C] = exp(x - m)
  Y[r :+ 1, 0 :+ C] = e / rowsum(e)
}
"""

LAYERNORM = """
@autotune(C in [1024])
kernel k(X: tensor<f16>[M, N], W: tensor<f16>[1, N], B: tensor<f16>[1, N],
         Y: tensor<f16>[M, N], eps: f32) {
  let r = ctx.block.x
  var x: tile<f32>[1, C] = f32(X[r :+ 1, 0 :+ C])
  var mean: tile<f32>[1, 1] = rowsum(x) / f32(N)
  var d: tile<f32>[1, C] = where(iota(1) < N, x - mean, 0.0)
  var rstd: tile<f32>[1, 1] = rsqrt(rowsum(d * d) / f32(N) + eps)
  Y[r :+ 1, 0 :+ C] = f16(d * rstd * f32(W[0 :+ 1, 0 :+ C]) + f32(B[0 :+ 1, 0 :+ C]))
}
"""

RMSNORM = """
@autotune(C in [1024])
kernel k(X: tensor<f32>[M, N], W: tensor<f32>[1, N], Y: tensor<f32>[M, N], eps: f32) {
  let r = ctx.block.x
  var acc: tile<f32>[1, 1] = 0.0
  for c in range(0, N, C) {
    acc += rowsum(X[r :+ 1, c :+ C] * X[r :+ 1, c :+ C])
  }
  var rs: tile<f32>[1, 1] = rsqrt(acc / f32(N) + eps)
  for c in range(0, N, C) {
    Y[r :+ 1, c :+ C] = X[r :+ 1, c :+ C] * rs * W[0 :+ 1, c :+ C]
  }
}
"""


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("c", [1024, 2048])
def test_softmax_rows_shuffle_and_exchange_through_shared_memory(c):
    hk, k = lowered(SOFTMAX, variant={"C": c})
    assert len(ops(k, "shfl", mode="bfly")) == 10  # two folds of five butterfly steps
    assert ops(k, "bar")
    assert {i.attr("vec") for i in ops(k, "ld", space="global")} == {4}
    assert [b.name for b in k.shared] == ["scratch"]  # x and e stay in registers
    m, n = 3, c - 24
    ref, got = run_both(hk, k, (m,), {"X": f32(m, n), "Y": np.zeros((m, n), np.float32)})
    np.testing.assert_allclose(got["Y"], ref["Y"], rtol=1e-5, atol=1e-8)
    ptxas(k)


def test_layer_norm_f16():
    hk, k = lowered(LAYERNORM)
    m, n = 3, 1000
    arrays = {
        "X": rng.standard_normal((m, n)).astype(np.float16),
        "W": rng.standard_normal((1, n)).astype(np.float16),
        "B": rng.standard_normal((1, n)).astype(np.float16),
        "Y": np.zeros((m, n), np.float16),
    }
    ref, got = run_both(hk, k, (m,), arrays, {"eps": np.float32(1e-5)})
    diff = np.abs(ref["Y"].astype(np.float32) - got["Y"].astype(np.float32))
    assert diff.max() <= 1e-2
    ptxas(k)


def test_rms_norm_loops_over_column_blocks():
    hk, k = lowered(RMSNORM)
    m, n = 3, 2500
    arrays = {"X": f32(m, n), "W": f32(1, n), "Y": np.zeros((m, n), np.float32)}
    ref, got = run_both(hk, k, (m,), arrays, {"eps": np.float32(1e-5)})
    np.testing.assert_allclose(got["Y"], ref["Y"], rtol=1e-5, atol=1e-6)
    ptxas(k)


def test_several_rows_per_cta_fold_on_lane_groups():
    src = """
kernel k(X: tensor<f32>[M, N], S: tensor<f32>[M, 1], Y: tensor<f32>[M, N]) {
  let r = ctx.block.x * 16
  var x: tile<f32>[16, 64] = X[r :+ 16, 0 :+ 64]
  var s: tile<f32>[16, 1] = rowsum(x)
  var mx: tile<f32>[16, 1] = rowmax(x)
  S[r :+ 16, 0 :+ 1] = s
  Y[r :+ 16, 0 :+ 64] = x - mx
}"""
    hk, k = lowered(src)
    # a row is 64 / 4 = 16 lanes: four butterfly steps per group, per fold
    assert len(ops(k, "shfl", mode="bfly")) == 2 * 4
    m, n = 20, 60
    arrays = {"X": f32(m, n), "S": np.zeros((m, 1), np.float32), "Y": np.zeros((m, n), np.float32)}
    ref, got = run_both(hk, k, (2,), arrays)
    np.testing.assert_allclose(got["S"], ref["S"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["Y"], ref["Y"], rtol=1e-6)
    ptxas(k)


def test_a_few_rows_spanning_the_cta():
    src = """
kernel k(X: tensor<f32>[M, N], Y: tensor<f32>[M, N]) {
  let r = ctx.block.x * 2
  var x: tile<f32>[2, 2048] = X[r :+ 2, 0 :+ 2048]
  var s: tile<f32>[2, 1] = rowsum(x * x)
  Y[r :+ 2, 0 :+ 2048] = x / s
}"""
    hk, k = lowered(src)
    m, n = 3, 2000
    ref, got = run_both(hk, k, (2,), {"X": f32(m, n), "Y": np.zeros((m, n), np.float32)})
    np.testing.assert_allclose(got["Y"], ref["Y"], rtol=1e-5)
    ptxas(k)


def test_lane_and_cta_collectives_and_shuffles():
    src = """
kernel k(A: tensor<f32>[N], O: tensor<f32>[N], I: tensor<i32>[N]) {
  let i = ctx.block.x * ctx.threads + ctx.thread
  let v = A[i]
  let s = sum<over ctx.lane>(v)
  let m = max<over ctx.lane, width 8>(v)
  let t = sum<over ctx.thread>(v)
  let x = shfl<xor 3>(v)
  let d = shfl<down 1>(v)
  let n = min<over ctx.thread>(i32(v * 100.0))
  O[i] = s + m * 2.0 + t * 3.0 + x * 5.0 + d * 7.0
  I[i] = n
}"""
    hk, k = lowered(src)
    n = 512
    arrays = {"A": f32(n), "O": np.zeros(n, np.float32), "I": np.zeros(n, np.int32)}
    ref, got = run_both(hk, k, (2,), arrays)
    np.testing.assert_allclose(got["O"], ref["O"], rtol=1e-5, atol=1e-5)
    assert np.array_equal(got["I"], ref["I"])
    ptxas(k)
