"""The shape built-ins (`transpose`, `cumsum`, `tril`, `flat`, `gather`), `rowargmax`, and
row reductions of any shape: lowered, verified, assembled, and run by the threads
interpreter exactly as the tile interpreter runs them, with no race."""

import numpy as np
import pytest
from lowerkit import checked, lowered, ops, ptxas

from phobos.diagnostics.codes import title
from phobos.interp.threads import GlobalMemory, run_lir
from phobos.interp.tiles import run_kernel
from phobos.lower.kernel import lower_kernel

rng = np.random.default_rng(7)


def nonzero(shape, dtype=np.float32):
    """Small nonzero integers (any order of summing them is exact), as `dtype`."""
    v = rng.integers(1, 9, shape) * rng.choice([-1, 1], shape)
    return v.astype(dtype)


def exact(source, grid, arrays, scalars=None, arch=("sm_90", "sm_80"), index_width=32):
    """Lower `source`, assemble it, run it both ways; the arrays must agree bit for bit
    and the threads interpreter must find no race."""
    hk, k = lowered(source, index_width=index_width)
    ref = {n: a.copy() for n, a in arrays.items()}
    run_kernel(hk, grid, {**ref, **(scalars or {})}, {})
    mem = GlobalMemory()
    params = {n: mem.place(a.copy(), n) for n, a in arrays.items()}
    addrs = dict(params)
    params.update(scalars or {})
    for p in hk.params:
        for d, size in zip(getattr(p.type, "dims", ()), arrays.get(p.name, np.zeros(0)).shape,
                           strict=False):  # fmt: skip
            if not isinstance(d, int):
                params[d.name] = size
    report = run_lir(k, grid, params, mem, check_races=True)
    assert report.race_free, report.format_races()
    for n in arrays:
        got = mem.read(addrs[n])
        assert np.array_equal(got, ref[n], equal_nan=got.dtype.kind == "f"), (n, got, ref[n])
    for a in arch:
        ptxas(k, a)
    return k


def zeros(*shape, dtype=np.float32):
    return np.zeros(shape, dtype)


# ---------------------------------------------------------------------------
# transpose, cumsum, tril


@pytest.mark.parametrize("t", ["f32", "f16", "i32"])
def test_transpose_through_padded_shared_memory(t):
    dt = {"f32": np.float32, "f16": np.float16, "i32": np.int32}[t]
    src = f"""
kernel k(A: tensor<{t}>[M, N], T: tensor<{t}>[N, M]) {{
  var a: tile<{t}>[12, 24] = A[0 :+ 12, 0 :+ 24]
  T[0 :+ 24, 0 :+ 12] = transpose(a)
}}"""
    k = exact(src, (1,), {"A": nonzero((12, 24), dt), "T": zeros(24, 12, dtype=dt)})
    assert ops(k, "bar")
    [stage] = [b for b in k.shared if b.name.startswith("stage_transpose")]
    # rows padded: a staged row is not a multiple of 32 words, so a column meets every bank
    assert stage.size > 12 * 24 * np.dtype(dt).itemsize


def test_transpose_of_a_ragged_slice_reads_zeros_past_the_tensor():
    src = """
kernel k(A: tensor<f32>[M, N], T: tensor<f32>[N, M]) {
  let r = ctx.block.x * 8
  var t: tile<f32>[16, 8] = transpose(A[r :+ 8, 0 :+ 16] * 2.0)
  T[0 :+ 16, r :+ 8] = t
}"""
    exact(src, (2,), {"A": nonzero((12, 12)), "T": zeros(12, 12)}, arch=("sm_90",))


@pytest.mark.parametrize("t, threads", [("f32", 256), ("f16", 64), ("f64", 128)])
def test_cumsum_walks_each_column(t, threads):
    dt = {"f32": np.float32, "f16": np.float16, "f64": np.float64}[t]
    src = f"""
@launch({threads})
kernel k(A: tensor<{t}>[M, N], S: tensor<{t}>[M, N]) {{
  var a: tile<{t}>[9, 100] = A[0 :+ 9, 0 :+ 100]
  var s: tile<{t}>[9, 100] = cumsum(a)
  S[0 :+ 9, 0 :+ 100] = s + cumsum(a * a)
}}"""
    exact(src, (1,), {"A": nonzero((9, 100), dt), "S": zeros(9, 100, dtype=dt)})


def test_cumsum_of_f16_accumulates_in_f32():
    src = """
kernel k(A: tensor<f16>[M, N], S: tensor<f16>[M, N]) {
  var a: tile<f16>[64, 4] = A[0 :+ 64, 0 :+ 4]
  S[0 :+ 64, 0 :+ 4] = cumsum(a)
}"""
    a = (rng.random((64, 4)) + 0.5).astype(np.float16)  # f16 sums would round differently
    exact(src, (1,), {"A": a, "S": zeros(64, 4, dtype=np.float16)}, arch=("sm_90",))


@pytest.mark.parametrize("t", ["f32", "f16"])
def test_tril_is_fused_into_its_sweep(t):
    dt = {"f32": np.float32, "f16": np.float16}[t]
    src = f"""
kernel k(A: tensor<{t}>[M, N], L: tensor<{t}>[M, N], P: tensor<{t}>[M, N]) {{
  var a: tile<{t}>[10, 12] = A[0 :+ 10, 0 :+ 12]
  var lo: tile<{t}>[10, 12] = tril(a)
  L[0 :+ 10, 0 :+ 12] = lo
  P[0 :+ 10, 0 :+ 12] = tril(a * a) + a
}}"""
    arrays = {
        "A": nonzero((10, 12), dt),
        "L": zeros(10, 12, dtype=dt),
        "P": zeros(10, 12, dtype=dt),
    }
    k = exact(src, (1,), arrays)
    assert not ops(k, "bar")  # elementwise: no staging
    assert [b.name for b in k.shared] == []


# ---------------------------------------------------------------------------
# flat and gather


def test_flat_views_the_tile_and_writes_through():
    src = """
kernel k(A: tensor<f32>[R, C], F: tensor<f32>[1, 48], G: tensor<f32>[1, 48]) {
  var a: tile<f32>[6, 8] = A[0 :+ 6, 0 :+ 8]
  var f: tile<f32>[1, 48] = flat(a)
  F[0 :+ 1, 0 :+ 48] = f
  let fv = flat(a)
  fv[0 :+ 1, 0 :+ 2] = 7.0
  fv[0 :+ 1, 40 :+ 8] = flat(a)[0 :+ 1, 0 :+ 8] * 3.0
  A[0 :+ 6, 0 :+ 8] = a
  var idx: tile<i32>[1, 48] = iota(1) * 7 % 48
  G[0 :+ 1, 0 :+ 48] = gather(flat(a), idx)
}"""
    k = exact(src, (1,), {"A": nonzero((6, 8)), "F": zeros(1, 48), "G": zeros(1, 48)})
    assert any(b.name.startswith("tile_a") for b in k.shared)  # `flat` keeps `a` shared


def test_flat_read_per_point_keeps_the_tile_alive():
    src = """
kernel k(A: tensor<f32>[R, C], O: tensor<f32>[N]) {
  var a: tile<f32>[6, 8] = A[0 :+ 6, 0 :+ 8] + 1.0
  barrier()
  let v = flat(a)[0, ctx.thread % 48]
  O[ctx.thread] = v * 2.0
}"""
    exact(src, (1,), {"A": nonzero((6, 8)), "O": zeros(256)}, arch=("sm_90",))


@pytest.mark.parametrize("t", ["f32", "f16", "i32"])
def test_gather_from_a_tensor_table(t):
    dt = {"f32": np.float32, "f16": np.float16, "i32": np.int32}[t]
    src = f"""
kernel k(Tab: tensor<{t}>[1, N], I: tensor<i32>[M, 40], O: tensor<{t}>[M, 40]) {{
  var idx: tile<i32>[8, 40] = I[0 :+ 8, 0 :+ 40]
  O[0 :+ 8, 0 :+ 40] = gather(Tab[0 :+ 1, 0 :+ 64], idx + 1)
}}"""
    idx = rng.integers(0, 63, (8, 40)).astype(np.int32)
    idx[0, :3] = 59  # 60 and past read the table's fill: past the tensor, 0
    exact(src, (1,), {"Tab": nonzero((1, 60), dt), "I": idx, "O": zeros(8, 40, dtype=dt)})


def test_gather_rank_one():
    src = """
kernel k(Tab: tensor<f32>[N], I: tensor<i32>[M], O: tensor<f32>[M]) {
  var idx: tile<i32>[96] = I[0 :+ 96]
  var g: tile<f32>[96] = gather(Tab[0 :+ 32], idx)
  O[0 :+ 96] = g
}"""
    idx = rng.integers(0, 32, 96).astype(np.int32)
    exact(src, (1,), {"Tab": nonzero(32), "I": idx, "O": zeros(96)}, arch=("sm_90",))


# ---------------------------------------------------------------------------
# rowargmax and row reductions of any shape


@pytest.mark.parametrize(
    "t, r, c, threads",
    [
        ("f32", 6, 8, 256),
        ("f32", 3, 100, 128),
        ("i32", 40, 50, 64),
        ("f16", 5, 33, 96),
        ("f32", 1, 1000, 256),
    ],  # fmt: skip
)
def test_rowargmax_smallest_column_on_a_tie(t, r, c, threads):
    dt = {"f32": np.float32, "f16": np.float16, "i32": np.int32}[t]
    src = f"""
@launch({threads})
kernel k(A: tensor<{t}>[M, N], X: tensor<i32>[M, 1], Y: tensor<i32>[M, N]) {{
  var a: tile<{t}>[{r}, {c}] = A[0 :+ {r}, 0 :+ {c}]
  var am: tile<i32>[{r}, 1] = rowargmax(a)
  X[0 :+ {r}, 0 :+ 1] = am
  Y[0 :+ {r}, 0 :+ {c}] = rowargmax(a * a) + iota(1)
}}"""
    a = nonzero((r, c), dt)  # few distinct values: many ties
    if t != "i32":
        a[0, 2] = np.nan  # a NaN never wins
    if r > 2:
        a[2, :] = a[2, 0]  # a row all ties
    exact(src, (1,), {"A": a, "X": zeros(r, 1, dtype=np.int32), "Y": zeros(r, c, dtype=np.int32)})


@pytest.mark.parametrize(
    "t, r, c, threads",
    [
        ("f32", 8, 100, 256),
        ("i32", 5, 48, 128),
        ("f16", 3, 96, 64),
        ("f32", 33, 7, 64),
        ("f32", 64, 40, 256),
    ],  # fmt: skip
)
def test_row_reductions_of_any_shape_fold_a_row_a_warp(t, r, c, threads):
    dt = {"f32": np.float32, "f16": np.float16, "i32": np.int32}[t]
    src = f"""
@launch({threads})
kernel k(A: tensor<{t}>[M, N], S: tensor<{t}>[M, 2], Y: tensor<{t}>[M, N]) {{
  var a: tile<{t}>[{r}, {c}] = A[0 :+ {r}, 0 :+ {c}]
  var s: tile<{t}>[{r}, 1] = rowsum(a)
  S[0 :+ {r}, 0 :+ 1] = s
  S[0 :+ {r}, 1 :+ 1] = rowmax(abs(a))
  Y[0 :+ {r}, 0 :+ {c}] = a - rowmax(a)
}}"""
    arrays = {"A": nonzero((r, c), dt), "S": zeros(r, 2, dtype=dt), "Y": zeros(r, c, dtype=dt)}
    k = exact(src, (2,), arrays)
    assert any(b.name.startswith("stage_row") for b in k.shared)


def test_rowmax_drops_nans_and_a_row_of_nans_is_nan():
    src = """
kernel k(A: tensor<f32>[M, N], S: tensor<f32>[M, 1]) {
  var a: tile<f32>[4, 40] = A[0 :+ 4, 0 :+ 40]
  S[0 :+ 4, 0 :+ 1] = rowmax(a)
}"""
    a = nonzero((4, 40))
    a[1, 5] = a[2, 39] = np.nan
    a[3, :] = np.nan
    exact(src, (1,), {"A": a, "S": zeros(4, 1)}, arch=("sm_90",))


def test_row_reduction_of_a_ragged_slice():
    src = """
kernel k(A: tensor<f32>[M, N], S: tensor<f32>[M, 1]) {
  let r = ctx.block.x * 4
  S[r :+ 4, 0 :+ 1] = rowsum(A[r :+ 4, 0 :+ 52] * 2.0)
}"""
    exact(src, (3,), {"A": nonzero((10, 44)), "S": zeros(10, 1)}, arch=("sm_90",))


def test_top_k_rounds_of_rowargmax_in_a_loop():
    src = """
@launch(128)
kernel k(A: tensor<f32>[M, N], I: tensor<i32>[M, 4]) {
  let r = ctx.block.x * 8
  var a: tile<f32>[8, 50] = A[r :+ 8, 0 :+ 50]
  for j in range(0, 4) {
    var idx: tile<i32>[8, 1] = rowargmax(a)
    I[r :+ 8, j :+ 1] = idx
    a = where(iota(1) == idx, -1.0e30, a)
  }
}"""
    a = rng.permutation(16 * 50).reshape(16, 50).astype(np.float32) - 400.0
    a[3, 7] = a[3, 9] = 1000.0  # a tie between the two largest
    exact(src, (2,), {"A": a, "I": zeros(16, 4, dtype=np.int32)})


def test_shape_ops_in_a_loop_at_64_bit_indices():
    src = """
kernel k(A: tensor<f32>[M, N], Tab: tensor<f32>[1, N], T: tensor<f32>[N, M], G: tensor<f32>[M, N]) {
  for r in range(0, 24, 8) {
    var a: tile<f32>[8, 16] = A[r :+ 8, 0 :+ 16]
    T[0 :+ 16, r :+ 8] = transpose(cumsum(a))
    var i: tile<i64>[8, 16] = i64(iota(1) + iota(0))
    G[r :+ 8, 0 :+ 16] = gather(Tab[0 :+ 1, 0 :+ 24], i) + f32(rowargmax(a))
  }
}"""
    arrays = {"A": nonzero((24, 16)), "Tab": nonzero((1, 16)), "T": zeros(16, 24),
              "G": zeros(24, 16)}  # fmt: skip
    exact(src, (1,), arrays, index_width=64)


# ---------------------------------------------------------------------------
# What is still refused, precisely


def test_a_staged_operand_past_48_kb_is_refused_at_its_line():
    hk = checked("""
kernel k(A: tensor<f32>[M, N], T: tensor<f32>[N, M]) {
  var a: tile<f32>[128, 128] = A[0 :+ 128, 0 :+ 128]
  T[0 :+ 128, 0 :+ 128] = transpose(a)
}""")
    k, diags = lower_kernel(hk)
    assert k is None
    [d] = diags
    assert d.code == "E0510" and "`transpose` of a [128, 128] tile stages" in d.message
    assert d.primary.span.source.line_col(d.primary.span.start)[0] == 4


def test_a_row_fold_needs_whole_warps():
    hk = checked("""
@launch(48)
kernel k(A: tensor<f32>[M, N], X: tensor<i32>[M, 1]) {
  var a: tile<f32>[4, 8] = A[0 :+ 4, 0 :+ 8]
  X[0 :+ 4, 0 :+ 1] = rowargmax(a)
}""")
    k, diags = lower_kernel(hk)
    assert k is None and diags[0].code == "E0512"


def test_flat_of_a_one_element_tile_is_refused():
    hk = checked("""
kernel k(A: tensor<f32>[M, N]) {
  var t: tile<f32>[1, 1] = 2.0
  let f = flat(t)
  A[0 :+ 1, 0 :+ 1] = f
}""")
    k, diags = lower_kernel(hk)
    assert k is None and diags[0].code == "E0511" and "`t`" in diags[0].message


def test_a_tile_with_an_extent_bound_at_launch_is_refused():
    hk = checked("""
kernel k(A: tensor<f32>[M, N]) {
  var t = A[0 :+ 1, :]
  A[0 :+ 1, :] = t * 2.0
}""")
    k, diags = lower_kernel(hk)
    assert k is None
    [d] = diags
    assert d.code == "E0513" and "[1, N]" in d.message and "`N` is bound at launch" in d.message


def test_new_codes_have_explanations():
    for code in ("E0510", "E0511", "E0512", "E0513"):
        assert title(code)
