"""`@launch(T)`: each variant lowers with its own CTA size (`.maxntid` in the PTX, the
lir kernel's threads, the layouts), and runs on the threads interpreter as the tile
interpreter runs it."""

import numpy as np
import pytest
from lowerkit import lowered, ptxas, run_both

from phobos.ptx.emit import emit_module

rng = np.random.default_rng(11)

SOFTMAX = """
@autotune(C in [1024, 2048], T in [256, 128, 512])
@launch(T)
kernel k(X: tensor<f32>[M, N], Y: tensor<f32>[M, N]) {
  let r = ctx.block.x
  var x: tile<f32>[1, C] = X[r :+ 1, 0 :+ C]
  x = where(iota(1) < N, x, -1.0e30)
  var m: tile<f32>[1, 1] = rowmax(x)
  var e: tile<f32>[1, C] = exp(x - m)
  Y[r :+ 1, 0 :+ C] = e / rowsum(e)
}
"""

SWEEP = """
@autotune(BLOCK in [1024], T in [256, 128, 64])
@launch(T, 2)
kernel k(x: tensor<f32>[N], y: tensor<f32>[N]) {
  let base = ctx.block.x * BLOCK
  y[base :+ BLOCK] = x[base :+ BLOCK] * f32(ctx.threads) + f32(ctx.warps)
}
"""


def maxntid(k) -> str:
    (line,) = [ln for ln in emit_module([k]).splitlines() if ln.startswith(".maxntid")]
    return line


def test_two_variants_lower_with_their_own_thread_counts():
    _, k256 = lowered(SWEEP, variant={"BLOCK": 1024, "T": 256})
    _, k128 = lowered(SWEEP, variant={"BLOCK": 1024, "T": 128})
    assert (k256.threads, k128.threads) == (256, 128)
    assert maxntid(k256) == ".maxntid 256, 1, 1"
    assert maxntid(k128) == ".maxntid 128, 1, 1"
    assert k256.min_blocks == k128.min_blocks == 2  # min_blocks stays a literal
    assert ".minnctapersm 2" in emit_module([k128])


@pytest.mark.parametrize("t", [256, 128])
def test_a_sweep_runs_alike_in_each_variant(t):
    hk, k = lowered(SWEEP, variant={"BLOCK": 1024, "T": t})
    n = 3000
    x = rng.standard_normal(n).astype(np.float32)
    ref, got = run_both(hk, k, (3,), {"x": x, "y": np.zeros(n, np.float32)})
    np.testing.assert_array_equal(got["y"], ref["y"])
    np.testing.assert_array_equal(ref["y"], x * np.float32(t) + np.float32(t // 32))
    ptxas(k)


@pytest.mark.parametrize("t", [256, 128, 512])
def test_softmax_rows_run_alike_in_each_variant(t):
    hk, k = lowered(SOFTMAX, variant={"C": 1024, "T": t})
    assert k.threads == t and maxntid(k) == f".maxntid {t}, 1, 1"
    m, n = 3, 1000
    arrays = {
        "X": rng.standard_normal((m, n)).astype(np.float32),
        "Y": np.zeros((m, n), np.float32),
    }
    ref, got = run_both(hk, k, (m,), arrays)
    np.testing.assert_allclose(got["Y"], ref["Y"], rtol=1e-5, atol=1e-8)
    x = arrays["X"] - arrays["X"].max(axis=1, keepdims=True)
    want = np.exp(x) / np.exp(x).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(ref["Y"], want, rtol=1e-5, atol=1e-7)
    ptxas(k)
