"""`argmax<over ..>` and `reduce<over ..>`: lane butterflies of `shfl.bfly`, and over the
CTA each warp's fold through shared memory. The tile interpreter (numpy, `lane_fold`)
and the threads interpreter (the lowered lir) agree bit for bit: the same butterfly
order, then the warps in order, and argmax's pick is unique (the smallest lane or
thread on a tie, NaN counting as -inf)."""

import numpy as np
import pytest
from lowerkit import DTYPES, lowered, ops, ptxas, run_both

rng = np.random.default_rng(23)

# Neither side is commutative in its rounding by accident: `a + b` and `max` of floats
# are, and the butterfly gives lane l `f(own, other)` on both interpreters alike.
FNS = """
fn add(a, b) = a + b
fn big(a, b) = max(a, b)
fn bits(a, b) = a | b
"""


def values(n, dtype=np.float32, ties=True):
    """Random values, never zero, with ties planted in every warp."""
    if np.dtype(dtype).kind == "f":
        x = (rng.uniform(0.25, 4.0, n) * rng.choice([-1.0, 1.0], n)).astype(dtype)
    else:
        x = rng.integers(1, 50, n).astype(dtype)
    if ties:
        for base in range(0, n, 32):
            lanes = rng.choice(32, 3, replace=False) + base
            x[lanes] = x[base : base + 32].max()  # a max held by three lanes
    return x


def lane_kernel(width: int, t: str = "f32") -> str:
    w = f", width {width}" if width != 32 else ""
    return f"""{FNS}
@launch(128)
kernel k(A: tensor<{t}>[N], I: tensor<i32>[N], S: tensor<{t}>[N], M: tensor<{t}>[N]) {{
  let i = ctx.block.x * ctx.threads + ctx.thread
  let v = A[i]
  I[i] = argmax<over ctx.lane{w}>(v)
  S[i] = reduce<over ctx.lane{w}>(v, add)
  M[i] = reduce<over ctx.lane{w}>(v, big)
}}"""


@pytest.mark.parametrize("width", [4, 8, 16, 32])
def test_lane_argmax_and_reduce_agree_on_both_interpreters(width):
    hk, k = lowered(lane_kernel(width))
    n = 256
    a = values(n)
    arrays = {"A": a, "I": np.full(n, -1, np.int32), "S": np.zeros(n, np.float32),
              "M": np.zeros(n, np.float32)}  # fmt: skip
    ref, got = run_both(hk, k, (2,), arrays)
    for name in ("I", "S", "M"):
        assert np.array_equal(ref[name], got[name]), name
    pieces = a.reshape(-1, width)
    lane = np.arange(n) % 32
    assert np.array_equal(got["I"], np.repeat(pieces.argmax(1), width) + lane - lane % width)
    assert np.array_equal(got["M"], np.repeat(pieces.max(1), width))
    steps = int(np.log2(width))
    # argmax moves (value, lane) and each reduce its value: four moves a step
    assert len(ops(k, "shfl", mode="bfly")) == 4 * steps
    assert not ops(k, "bar")  # a lane fold never leaves its warp
    ptxas(k)


@pytest.mark.parametrize("t", ["i32", "f16", "f64", "i64"])
def test_lane_folds_of_other_types(t):
    hk, k = lowered(lane_kernel(8, t))
    n = 128
    a = values(n, DTYPES.get(t, np.int64))
    arrays = {"A": a, "I": np.full(n, -1, np.int32), "S": np.zeros_like(a), "M": np.zeros_like(a)}
    ref, got = run_both(hk, k, (1,), arrays)
    for name in ("I", "S", "M"):
        assert np.array_equal(ref[name], got[name]), name
    assert np.array_equal(got["I"] % 8, np.repeat(a.reshape(-1, 8).argmax(1), 8))
    ptxas(k)


def test_argmax_takes_nan_as_minus_infinity_as_rowargmax_does():
    hk, k = lowered(lane_kernel(4))
    a = values(128, ties=False)
    a[0:4] = np.nan  # NaNs alone: the smallest lane
    a[4:8] = [np.nan, -np.inf, np.nan, -np.inf]  # NaN and -inf tie: the smallest lane
    a[8:12] = [np.nan, 2.0, np.nan, 1.0]  # a NaN never wins
    n = len(a)
    arrays = {"A": a, "I": np.full(n, -1, np.int32), "S": np.zeros(n, np.float32),
              "M": np.zeros(n, np.float32)}  # fmt: skip
    ref, got = run_both(hk, k, (1,), arrays)
    assert np.array_equal(ref["I"], got["I"])
    assert got["I"][:12].tolist() == [0] * 4 + [4] * 4 + [9] * 4


def cta_kernel(threads: int, t: str = "f32", fn: str = "add") -> str:
    return f"""{FNS}
@launch({threads})
kernel k(A: tensor<{t}>[N], I: tensor<i32>[B], S: tensor<{t}>[B]) {{
  let v = A[ctx.block.x * ctx.threads + ctx.thread]
  let who = argmax<over ctx.thread>(v)
  let total = reduce<over ctx.thread>(v, {fn})
  if ctx.thread == 0 {{
    I[ctx.block.x] = who
    S[ctx.block.x] = total
  }}
}}"""


@pytest.mark.parametrize(("threads", "t"), [(64, "f32"), (96, "f32"), (256, "f32"),
                                            (128, "i32"), (128, "f16"), (128, "f64"),
                                            (128, "i64")])  # fmt: skip
def test_cta_argmax_and_reduce_agree_on_both_interpreters(threads, t):
    hk, k = lowered(cta_kernel(threads, t))
    blocks = 3
    a = values(blocks * threads, DTYPES.get(t, np.int64), ties=False)
    rows = a.reshape(blocks, threads)
    rows[0, [5, threads - 3]] = rows[0].max() + 1  # a tie between the first and last warps
    rows[1, [40, 33]] = rows[1].max() + 1  # a tie within one warp
    arrays = {"A": a, "I": np.full(blocks, -1, np.int32), "S": np.zeros(blocks, a.dtype)}
    ref, got = run_both(hk, k, (blocks,), arrays)
    assert np.array_equal(ref["I"], got["I"])
    assert np.array_equal(ref["S"], got["S"])
    assert got["I"].tolist() == [5, 33, int(rows[2].argmax())]
    # one exchange for a 32-bit key and its thread, a 64-bit key takes two; one for the fold
    exchanges = (2 if t in ("f64", "i64") else 1) + 1
    assert len(ops(k, "bar")) == exchanges
    ptxas(k)


def test_cta_reduce_folds_the_warps_in_order():
    hk, k = lowered(cta_kernel(256, "i32", fn="bits"))
    a = values(256, np.int32, ties=False)
    arrays = {"A": a, "I": np.full(1, -1, np.int32), "S": np.zeros(1, np.int32)}
    ref, got = run_both(hk, k, (1,), arrays)
    assert got["S"][0] == ref["S"][0] == np.bitwise_or.reduce(a)
    # five butterfly steps for argmax's pair and five for the fold
    assert len(ops(k, "shfl", mode="bfly")) == 15


def test_argmax_under_64_bit_indices_is_an_i64():
    src = """
@launch(64)
kernel k(A: tensor<f32>[N], I: tensor<i64>[N], J: tensor<i64>[N]) {
  let i = ctx.block.x * ctx.threads + ctx.thread
  I[i] = argmax<over ctx.lane, width 16>(A[i])
  J[i] = argmax<over ctx.thread>(A[i])
}"""
    hk, k = lowered(src, index_width=64)
    n = 128
    a = values(n)
    arrays = {"A": a, "I": np.full(n, -1, np.int64), "J": np.full(n, -1, np.int64)}
    ref, got = run_both(hk, k, (2,), arrays)
    assert np.array_equal(ref["I"], got["I"]) and np.array_equal(ref["J"], got["J"])
    assert np.array_equal(got["J"], np.repeat(a.reshape(2, 64).argmax(1), 64))
    # the lane is moved as a 32-bit word, widened once at the end
    assert len(ops(k, "shfl", mode="bfly")) == 2 * (4 + 5)
    ptxas(k)


LOOP = """
@launch(128)
kernel k(A: tensor<f32>[N], S: tensor<f32>[B]) {
  var acc: f32 = 0.0
  for r in range(0, 4) {
    acc += reduce<over ctx.thread>(A[(ctx.block.x * 4 + r) * ctx.threads + ctx.thread], add)
  }
  if ctx.thread == 0 {
    S[ctx.block.x] = acc
  }
}"""


def test_a_reduce_inside_a_loop_alternates_its_slots():
    hk, k = lowered(FNS + LOOP)
    a = values(2 * 4 * 128)
    arrays = {"A": a, "S": np.zeros(2, np.float32)}
    ref, got = run_both(hk, k, (2,), arrays)
    assert np.array_equal(ref["S"], got["S"])
    ptxas(k)
