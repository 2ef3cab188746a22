"""Tile statements over an extent bound at launch: sweeps whose trip count is computed
at run time (the last group masked), dynamic-shape tiles fused into their reads, row
reductions folded in a strided loop; a tile that would need shared memory of a size
bound at launch is refused (E0513)."""

import logging

import numpy as np
import pytest
from lowerkit import checked, lowered, ops, ptxas, run_both

from phobos.lower import lir
from phobos.lower.kernel import lower_kernel

rng = np.random.default_rng(23)
SIZES = [4, 36, 1020, 1024, 1028, 2600]  # below one sweep of 256 x 4, exact, ragged


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def agree(hk, k, grid, arrays, scalars=None, names=None):
    ref, got = run_both(hk, k, grid, arrays, scalars)
    for n in names or arrays:
        np.testing.assert_array_equal(got[n], ref[n], err_msg=n)


def line_of(diag) -> int:
    return diag.primary.span.source.line_col(diag.primary.span.start)[0]


ROW = """
kernel k(X: tensor<f32>[M, N], Y: tensor<f32>[M, N]) {
  let row = ctx.block.x
  Y[row, :] = X[row, :] * 2.0
}"""


def test_a_row_sweep_loops_over_whole_groups_then_masks_the_last():
    hk, k = lowered(ROW)
    loops = [i for i in k.body.items if isinstance(i, lir.For)]
    assert len(loops) == 1  # the whole groups; the last group after it, masked
    assert {i.attr("vec") for i in ops(k, "ld", space="global")} == {4}
    tail = [i for i in k.body.items if isinstance(i, lir.Inst) and i.op == "st"]
    assert tail and tail[0].guard is not None
    for n in SIZES:
        agree(hk, k, (3,), {"X": f32(3, n), "Y": np.full((3, n), np.nan, np.float32)})
    ptxas(k)
    ptxas(k, "sm_80")


def test_a_suffix_sweep_runs_to_the_extent():
    src = """
kernel k(x: tensor<f32>[N], out: tensor<f32>[N], s: i32) {
  out[s:] = x[s:] + 1.0
}"""
    hk, k = lowered(src)
    assert {i.attr("vec", 1) for i in ops(k, "ld")} == {1}  # `s` may be odd
    for n in SIZES:
        for s in (0, 3, n - 1, n + 5):
            x, out = f32(n), np.zeros(n, np.float32)
            agree(hk, k, (1,), {"x": x, "out": out}, {"s": np.int32(s)})
    ptxas(k)
    ptxas(k, "sm_80")


def test_compound_assignment_and_a_broadcast_scalar_over_a_dynamic_row():
    src = """
kernel k(X: tensor<f32>[M, N], Y: tensor<f32>[M, N], a: f32) {
  let row = ctx.block.x
  Y[row, :] += X[row, :] * a + f32(row)
}"""
    hk, k = lowered(src)
    for n in SIZES:
        agree(hk, k, (2,), {"X": f32(2, n), "Y": f32(2, n)}, {"a": np.float32(0.5)})
    ptxas(k)


def test_f16_rows_at_index_width_64():
    src = """
kernel k(X: tensor<f16>[M, N], Y: tensor<f16>[M, N]) {
  let row = ctx.block.x
  Y[row, :] = f16(f32(X[row, :]) * 3.0)
}"""
    hk, k = lowered(src, index_width=64)
    for n in (4, 1028):
        x = f32(2, n).astype(np.float16)
        agree(hk, k, (2,), {"X": x, "Y": np.zeros((2, n), np.float16)})
    ptxas(k)
    ptxas(k, "sm_80")


FUSED = """
kernel k(X: tensor<f32>[M, N], Y: tensor<f32>[M, N]) {
  let row = ctx.block.x
  var t = X[row, :]
  let u = t * 2.0
  let v = X[row :+ 1, :]
  Y[row :+ 1, :] = u + v - t
}"""


def test_var_and_let_of_a_dynamic_row_stay_fused(caplog):
    with caplog.at_level(logging.DEBUG, logger="phobos.lower"):
        hk, k = lowered(FUSED)
    assert "`t` [1, N] fused" in caplog.text and "never stored" in caplog.text
    assert k.smem == 0 and not k.shared
    for n in SIZES:
        agree(hk, k, (2,), {"X": f32(2, n), "Y": np.zeros((2, n), np.float32)}, names=["Y"])
    ptxas(k)


ROWSUM = """
kernel k(X: tensor<f32>[M, N], out: tensor<f32>[M, 1]) {
  let row = ctx.block.x
  out[row :+ 1, 0 :+ 1] = rowsum(X[row, :])
}"""


def test_rowsum_over_a_dynamic_row_folds_a_strided_loop(caplog):
    with caplog.at_level(logging.DEBUG, logger="phobos.lower"):
        hk, k = lowered(ROWSUM)
    assert "strided loop" in caplog.text
    assert ops(k, "shfl")
    for n in SIZES:
        x = rng.integers(-8, 8, (3, n)).astype(np.float32)  # exact sums: any order agrees
        agree(hk, k, (3,), {"X": x, "out": np.zeros((3, 1), np.float32)})
    ptxas(k)
    ptxas(k, "sm_80")


def test_rowmax_of_a_fused_expression_and_its_use_in_a_row_sweep():
    src = """
kernel k(X: tensor<f16>[M, N], W: tensor<f32>[1, N], Y: tensor<f32>[M, N],
         mx: tensor<f32>[M, 1], w: f32) {
  let row = ctx.block.x
  let m = rowmax(f32(X[row, :]) * w)
  mx[row :+ 1, 0 :+ 1] = m
  Y[row, :] = exp(f32(X[row, :]) * w - m) + W[0, :]
}"""
    hk, k = lowered(src)
    for n in SIZES:
        x = f32(3, n).astype(np.float16)
        arrays = {"X": x, "W": f32(1, n), "Y": np.zeros((3, n), np.float32),
                  "mx": np.zeros((3, 1), np.float32)}  # fmt: skip
        ref, got = run_both(hk, k, (3,), arrays, {"w": np.float32(1.5)})
        np.testing.assert_array_equal(got["mx"], ref["mx"])
        np.testing.assert_allclose(got["Y"], ref["Y"], rtol=1e-5, atol=1e-6)  # ex2.approx
    ptxas(k)
    ptxas(k, "sm_80")


def test_rowsum_of_a_var_row_into_a_replicated_tile():
    src = """
kernel k(X: tensor<i32>[M, N], out: tensor<i32>[M]) {
  let row = ctx.block.x
  var t = X[row, :]
  let s = rowsum(t * t)
  out[row] = s[0, 0]
}"""
    hk, k = lowered(src)
    for n in (4, 1028):
        x = rng.integers(-50, 50, (2, n)).astype(np.int32)
        agree(hk, k, (2,), {"X": x, "out": np.zeros(2, np.int32)}, names=["out"])
    ptxas(k)


@pytest.mark.parametrize(
    "body, line, why",
    [
        ("  var t = X[row, :]\n  t += 1.0\n  Y[row, :] = t", 4, "written after"),
        ("  var t = X[row, :]\n  Y[row :+ 1, 0 :+ 4] = t[0 :+ 1, 0 :+ 4] + 1.0", 4, "slice of it"),
        ("  var t = X[row, :]\n  X[row, :] = 0.0\n  Y[row, :] = t", 4, "`X` is written"),
    ],
)
def test_a_dynamic_tile_that_needs_shared_memory_is_refused(body, line, why):
    src = f"""
kernel k(X: tensor<f32>[M, N], Y: tensor<f32>[M, N]) {{
  let row = ctx.block.x
{body}
}}"""
    k, diags = lower_kernel(checked(src))
    assert k is None
    [d] = diags
    assert d.code == "E0513" and "[1, N]" in d.message and "`N`" in d.message
    assert line_of(d) == line
    assert any(why in n for n in d.notes), d.notes
    assert d.help and "X[row, 0 :+ BLOCK]" in d.help[0] and "let t = X[row, :]" in d.help[0]
