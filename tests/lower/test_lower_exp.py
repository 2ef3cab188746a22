"""`exp(a - b)` and `exp(a * c - b)` in a tile sweep: one `fma` an element for the shift
and the change of base (`ex2(a c log2 e - b log2 e)`), the slope `c log2 e` made once a
statement and `-b log2 e` once a row; both interpreters agree with float64 at ragged
sizes, and other arguments keep the plain `mul` and `ex2`."""

from __future__ import annotations

import numpy as np
import pytest
from filecheck import filecheck
from lowerkit import lowered, ops, ptxas, run_both, text

from phobos.ptx.emit import emit_module

ROWS = """
@launch(64)
kernel k(X: tensor<f32>[M, N], R: tensor<f32>[M, 1], Y: tensor<f32>[M, N], c: f32) {
  let row = ctx.block.x * 16
  var x: tile<f32>[16, 32] = X[row :+ 16, 0 :+ 32]
  var r: tile<f32>[16, 1] = R[row :+ 16, :]
  Y[row :+ 16, 0 :+ 32] = exp(x * c - r)
}
// CHECK: neg.f32
// CHECK: fma.rn.f32
// CHECK: 1.4426950408889634:f32
// CHECK: ex2.approx.f32
"""


def _inputs(m, n, rng):
    return {"X": rng.standard_normal((m, n)).astype(np.float32) * 4,
            "R": rng.standard_normal((m, 1)).astype(np.float32) * 4,
            "Y": np.full((m, n), np.nan, np.float32)}  # fmt: skip


@pytest.mark.parametrize("m, n", [(32, 32), (21, 28)])
def test_a_scaled_shifted_exp_is_one_fma_an_element(m, n):
    hk, k = lowered(ROWS)
    filecheck(ROWS, text(k))
    # `-r` once a row (a thread holds few rows), the difference one fma an element: no
    # `mul` of x by c and no `sub` left
    assert 0 < len(ops(k, "neg")) < len(ops(k, "ex2"))
    assert not [i for i in ops(k, "sub") if i.attr("type") == "f32"]
    f32_muls = [i for i in ops(k, "mul") if i.attr("type") == "f32"]
    assert len(ops(k, "fma")) == len(ops(k, "ex2")) == len(f32_muls) > 0
    rng = np.random.default_rng(7)
    want, got = run_both(hk, k, (-(-m // 16),), _inputs(m, n, rng), {"c": np.float32(0.375)})
    x, r = (want[name].astype(np.float64) for name in "XR")
    ref = np.exp(x * 0.375 - r)
    for out in (got["Y"], want["Y"]):
        assert not np.isnan(out).any(), "elements never written"
        np.testing.assert_allclose(out, ref, rtol=2e-6, atol=0)
    ptxas(k, "sm_90")


SHIFT = """
@launch(64)
kernel k(X: tensor<f32>[M, N], Y: tensor<f32>[M, N], Z: tensor<f32>[M, N]) {
  let row = ctx.block.x * 16
  var x: tile<f32>[16, 32] = X[row :+ 16, 0 :+ 32]
  Y[row :+ 16, 0 :+ 32] = exp(x - 2.0)
  Z[row :+ 16, 0 :+ 32] = exp(x * x)
}
// CHECK: sub.f32
// CHECK: 1.4426950408889634:f32
// CHECK: [ftz=1]
// CHECK: mul.f32
// CHECK: 1.4426950408889634:f32
// CHECK: ex2.approx.f32
"""


def test_a_constant_shift_folds_and_other_arguments_keep_the_plain_form():
    hk, k = lowered(SHIFT)
    filecheck(SHIFT, text(k))
    flushed = [i for i in ops(k, "ex2") if i.attr("ftz")]
    assert 0 < len(flushed) and 2 * len(flushed) == len(ops(k, "ex2"))  # exp(x * x) keeps them
    rng = np.random.default_rng(11)
    arrays = {"X": rng.standard_normal((19, 28)).astype(np.float32),
              "Y": np.full((19, 28), np.nan, np.float32),
              "Z": np.full((19, 28), np.nan, np.float32)}  # fmt: skip
    want, got = run_both(hk, k, (2,), arrays)
    x = want["X"].astype(np.float64)
    np.testing.assert_allclose(got["Y"], np.exp(x - 2.0), rtol=2e-6, atol=0)
    np.testing.assert_allclose(got["Z"], np.exp(x * x), rtol=2e-6, atol=0)


def test_the_fused_exp_flushes_what_would_be_subnormal_in_both_the_ptx_and_threads():
    # exp(-95) is 5.5e-42, an f32 subnormal: ex2.approx.ftz gives 0, and the threads
    # interpreter models the flush; a result just above 2^-126 stays.
    hk, k = lowered(ROWS)
    assert all(i.attr("ftz") for i in ops(k, "ex2"))
    assert "ex2.approx.ftz.f32" in emit_module([k], "sm_90")
    x = np.zeros((16, 32), np.float32)
    r = np.full((16, 1), 95.0, np.float32)
    r[8:] = 87.0  # exp(-87) = 1.6e-38, normal
    arrays = {"X": x, "R": r, "Y": np.full((16, 32), np.nan, np.float32)}
    want, got = run_both(hk, k, (1,), arrays, {"c": np.float32(1.0)})
    assert want["Y"][0, 0] > 0 and (got["Y"][:8] == 0).all()
    np.testing.assert_allclose(got["Y"][8:], np.exp(-87.0), rtol=1e-5)


SENTINEL = """
@launch(64)
kernel k(X: tensor<f32>[M, N], Y: tensor<f32>[M, N], c: f32) {
  let row = ctx.block.x * 16
  var x: tile<f32>[16, 32] = X[row :+ 16, 0 :+ 32]
  var m: tile<f32>[16, 1] = rowmax(x) * c
  Y[row :+ 16, 0 :+ 32] = exp(x * c - m)
}
"""


def test_an_empty_rows_sentinel_maximum_gives_one_not_an_overflow():
    # every score -1e30 (a row masked whole): its maximum is -1e30 too, and exp(m - m) is
    # 1 exactly, as the tile interpreter says; a b log2 e rounded on its own would be off
    # by 2^76 in the exponent and give inf or 0
    hk, k = lowered(SENTINEL)
    x = np.full((16, 32), -1.0e30, np.float32)
    x[8:] = np.random.default_rng(3).standard_normal((8, 32)).astype(np.float32)
    arrays = {"X": x, "Y": np.full((16, 32), np.nan, np.float32)}
    want, got = run_both(hk, k, (1,), arrays, {"c": np.float32(0.125)})
    np.testing.assert_array_equal(got["Y"][:8], 1.0)
    np.testing.assert_allclose(got["Y"], want["Y"], rtol=2e-6)
