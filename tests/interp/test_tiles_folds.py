"""The tile interpreter's `argmax<over ..>` and `reduce<over ..>` against numpy, and
argmax's NaN against `rowargmax`'s: a NaN counts as -inf in both."""

import numpy as np
import pytest

from phobos.interp import run_kernel
from phobos.sema.check import check_kernel
from phobos.source import SourceFile
from phobos.syntax.parser import parse

rng = np.random.default_rng(31)


def checked(source: str, name: str = "k"):
    program, diags = parse(SourceFile("k.ph", source))
    assert not diags, [d.message for d in diags]
    kernel, diags = check_kernel(program, name)
    assert kernel is not None, [d.message for d in diags]
    return kernel


BOTH = """
@launch(32)
kernel k(A: tensor<f32>[1, 32], I: tensor<i32>[32], R: tensor<i32>[1, 1]) {
  I[ctx.lane] = argmax<over ctx.lane>(A[0, ctx.lane])
  var r: tile<i32>[1, 1] = rowargmax(A[0 :+ 1, 0 :+ 32])
  R[0 :+ 1, 0 :+ 1] = r
}
"""


@pytest.mark.parametrize(
    "plant",
    [
        {},
        {3: np.nan, 9: np.nan},
        {k: np.nan for k in range(32)},
        {k: -np.inf for k in range(32)} | {7: np.nan, 2: np.nan},
        {5: 9.0, 1: np.nan, 20: 9.0},
    ],
)
def test_argmax_over_lanes_picks_what_rowargmax_picks(plant):
    k = checked(BOTH)
    a = rng.uniform(0.5, 2.0, (1, 32)).astype(np.float32)
    for lane, v in plant.items():
        a[0, lane] = v
    i, r = np.full(32, -1, np.int32), np.full((1, 1), -1, np.int32)
    run_kernel(k, (1,), {"A": a, "I": i, "R": r}, {})
    assert (i == r[0, 0]).all()
    if plant.get(5) == 9.0:
        assert r[0, 0] == 5  # a tie takes the smaller lane


FOLD = """
fn add(a, b) = a + b
fn low(a, b) = min(a, b)
@launch(128)
kernel k(A: tensor<i32>[N], S: tensor<i32>[N], M: tensor<i32>[N], W: tensor<i32>[N]) {
  let t = ctx.block.x * ctx.threads + ctx.thread
  S[t] = reduce<over ctx.lane, width 4>(A[t], add)
  M[t] = reduce<over ctx.thread>(A[t], low)
  W[t] = argmax<over ctx.thread>(A[t])
}
"""


def test_reduce_and_argmax_over_the_cta():
    k = checked(FOLD)
    n = 256
    a = rng.integers(1, 20, n).astype(np.int32)  # ties across the CTA's warps
    s, m, w = (np.full(n, -1, np.int32) for _ in range(3))
    run_kernel(k, (2,), {"A": a, "S": s, "M": m, "W": w}, {})
    assert (s == np.repeat(a.reshape(-1, 4).sum(1), 4)).all()
    blocks = a.reshape(2, 128)
    assert (m == np.repeat(blocks.min(1), 128)).all()
    assert (w == np.repeat(blocks.argmax(1), 128)).all()
