"""A run sum whose factor is one element (`sum(Q[r, 0 :+ 8] * i32(Q[r, 8]))`): the
element is no byte run, so the sum is per element, and the threads interpreter runs
the lowered kernel to the product numpy computes."""

import numpy as np
from lowerkit import lowered, ops, ptxas

from phobos.interp.threads import GlobalMemory, run_lir

SCALAR_FACTOR = """
@launch(32)
kernel k(Q: tensor<i8>[R, C], D: tensor<i32>[R]) {
  let r = ctx.thread
  D[r] = sum(Q[r, 0 :+ 8] * i32(Q[r, 8]))
}"""


def test_run_sum_times_one_element_lowers_per_element():
    hk, k = lowered(SCALAR_FACTOR)
    assert ops(k, "dp4a") == []  # one element is no word of four bytes
    q = np.random.default_rng(3).integers(-128, 128, (32, 16)).astype(np.int8)
    mem = GlobalMemory()
    params = {"Q": mem.place(q.copy(), "Q"), "D": mem.place(np.ones(32, np.int32), "D")}
    params.update({"R": 32, "C": 16})
    run_lir(k, 1, params, mem)
    want = (q[:, :8].astype(np.int32) * q[:, 8:9].astype(np.int32)).sum(axis=1)
    assert np.array_equal(mem.read(params["D"]), want)
    ptxas(k, "sm_90")
