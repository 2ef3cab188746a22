"""`min`, `max` and `tmax` of integer tiles: checked (the comparison inside them is no
bare `<` of tiles), lowered, and run alike on both interpreters."""

import numpy as np
from lowerkit import lowered, ptxas, run_both

INT_MINMAX = """
@launch(32)
kernel k(A: tensor<i32>[N], B: tensor<i32>[N]) {
  var t: tile<i32>[32] = A[0 :+ 32]
  var w: tile<i32>[32] = tmax(t, A[32 :+ 32])
  var u: tile<i32>[32] = min(w, 5)
  B[0 :+ 32] = max(u, -3)
}"""


def test_int_tile_min_max_tmax_agree():
    hk, k = lowered(INT_MINMAX)
    a = np.random.default_rng(5).integers(-20, 20, 64).astype(np.int32)
    ref, got = run_both(hk, k, 1, {"A": a, "B": np.zeros(64, np.int32)})
    want = np.maximum(np.minimum(np.maximum(a[:32], a[32:]), 5), -3)
    assert np.array_equal(ref["B"][:32], want)
    assert np.array_equal(got["B"][:32], want)
    ptxas(k, "sm_90")
