"""A `for` over a dynamic extent split into whole tiles plus one masked remainder
(SPEC.md "Bounds and masking"): the whole tiles run with the column masks proven away,
the remainder keeps them; both agree with the tile interpreter at every size."""

import logging

import numpy as np
import pytest
from lowerkit import insts, lowered, ptxas, run_both, text

from phobos.lower import lir

rng = np.random.default_rng(11)

RMSNORM = """
@autotune(C in [256])
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

COPY = """
@aligned(M = 1)
kernel k(X: tensor<f32>[M, N], Y: tensor<f32>[M, N]) {
  let r = ctx.block.x
  for c in range(0, N, 1024) {
    var t: tile<f32>[1, 1024] = X[r :+ 1, c :+ 1024]
    Y[r :+ 1, c :+ 1024] = t * 2.0
  }
}
"""

ROWSUM = """
@aligned(M = 1)
kernel k(X: tensor<f32>[M, N], S: tensor<f32>[M, 1]) {
  let r = ctx.block.x
  var acc: tile<f32>[1, 1] = 0.0
  for c in range(0, N, 1024) {
    acc += rowsum(X[r :+ 1, c :+ 1024])
  }
  S[r :+ 1, 0 :+ 1] = acc
}
"""


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def loops(k):
    """The kernel's top-level `for`s and `if`s, in order."""
    return [it for it in k.body.items if isinstance(it, (lir.For, lir.If))]


def guarded(block, op):
    """The global `op`s of `block` under a guard."""
    return [
        i
        for i in insts(block)
        if i.op == op and i.guard is not None and i.attr("space") == "global"
    ]


def split(k):
    """(whole-tile loop, remainder) pairs: each `for` followed by its `if`."""
    items = loops(k)
    pairs = [(a, b) for a, b in zip(items, items[1:], strict=False) if isinstance(a, lir.For)]
    assert all(isinstance(b, lir.If) for _, b in pairs), text(k)
    return pairs


@pytest.mark.parametrize("src", [COPY, ROWSUM], ids=["copy", "rowsum"])
def test_whole_tiles_load_and_store_unguarded_remainder_guarded(src):
    hk, k = lowered(src)
    ((whole, rest),) = split(k)
    assert not guarded(whole.body, "ld") and not guarded(whole.body, "st"), text(k)
    assert guarded(rest.then, "ld"), text(k)
    assert whole.step == lir.Imm(1024, "s32")
    t = text(k)
    assert "rem.s32 %N" in t and "add.s32 %N, -" in t  # N - (L - 1), N - N % L


@pytest.mark.parametrize("n", [2048, 2500, 100])
def test_copy_agrees_at_whole_ragged_and_short_extents(n):
    hk, k = lowered(COPY)
    m = 3
    ref, got = run_both(hk, k, (m,), {"X": f32(m, n), "Y": np.zeros((m, n), np.float32)})
    np.testing.assert_array_equal(got["Y"], ref["Y"])


@pytest.mark.parametrize("n", [3072, 2500, 100])
def test_row_reduction_agrees_at_whole_ragged_and_short_extents(n):
    hk, k = lowered(ROWSUM)
    m = 2
    ref, got = run_both(hk, k, (m,), {"X": f32(m, n), "S": np.zeros((m, 1), np.float32)})
    np.testing.assert_allclose(got["S"], ref["S"], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n", [1024, 1000, 52])
def test_rms_norm_column_masks_only_in_the_remainders(n):
    hk, k = lowered(RMSNORM)
    pairs = split(k)
    assert len(pairs) == 2
    for whole, rest in pairs:
        assert "sub.s32 %N" not in text_of(whole.body)  # only the row bound `M` is tested
        assert "sub.s32 %N" in text_of(rest.then)
    m = 3
    arrays = {"X": f32(m, n), "W": f32(1, n), "Y": np.zeros((m, n), np.float32)}
    ref, got = run_both(hk, k, (m,), arrays, {"eps": np.float32(1e-5)})
    np.testing.assert_allclose(got["Y"], ref["Y"], rtol=1e-5, atol=1e-6)


def text_of(block):
    kernel = lir.Kernel("b", (), block, threads=32)
    return lir.print_kernel(kernel)


@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
@pytest.mark.parametrize("src", [COPY, ROWSUM, RMSNORM], ids=["copy", "rowsum", "rmsnorm"])
def test_split_loops_assemble(src, arch):
    _, k = lowered(src)
    ptxas(k, arch)


def test_the_decision_is_logged(caplog):
    with caplog.at_level(logging.DEBUG, logger="phobos.lower"):
        lowered(COPY)
    assert "for `c` split on `N`: whole tiles of 1024 unmasked" in caplog.text


NOT_SPLIT = {
    "a step that is not the span's length": ("range(0, N, 512)", "c :+ 1024"),
    "a bound that is not a dynamic extent": ("range(0, 4096, 1024)", "c :+ 1024"),
    "a break of the loop": ("range(0, N, 1024)", "c :+ 1024"),
}


@pytest.mark.parametrize("why", sorted(NOT_SPLIT))
def test_loops_that_do_not_qualify_stay_one_masked_loop(why, caplog):
    rng_, span = NOT_SPLIT[why]
    brk = "if c > 100000 { break }" if "break" in why else ""
    src = f"""
kernel k(X: tensor<f32>[M, N], Y: tensor<f32>[M, N]) {{
  let r = ctx.block.x
  for c in {rng_} {{
    {brk}
    Y[r :+ 1, {span}] = X[r :+ 1, {span}]
  }}
}}
"""
    with caplog.at_level(logging.DEBUG, logger="phobos.lower"):
        hk, k = lowered(src)
    assert "not split" in caplog.text
    (loop,) = loops(k)
    assert isinstance(loop, lir.For) and guarded(loop.body, "ld")
    m, n = 2, 1100
    ref, got = run_both(hk, k, (m,), {"X": f32(m, n), "Y": np.zeros((m, n), np.float32)})
    np.testing.assert_array_equal(got["Y"], ref["Y"])
