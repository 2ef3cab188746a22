"""The tile interpreter on every built-in family, from checked source, against numpy."""

import numpy as np
import pytest

from phobos.interp import InterpError, run_kernel
from phobos.sema.check import check_kernel
from phobos.source import SourceFile
from phobos.syntax.parser import parse

rng = np.random.default_rng()


def checked(source: str, name: str = "k", variant=None):
    program, diags = parse(SourceFile("k.ph", source))
    assert not diags, [d.message for d in diags]
    kernel, diags = check_kernel(program, name, variant)
    assert kernel is not None, [d.message for d in diags]
    return kernel


def rand(*shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, shape).astype(np.float32)


def nans(*shape):
    return np.full(shape, np.nan, np.float32)


def test_slices_mask_out_of_bounds_reads_and_stores():
    k = checked("""
kernel k(A: tensor<f32>[M, N], B: tensor<f32>[M, N]) {
  var t: tile<f32>[8, 16] = A[ctx.block.x * 8 :+ 8, 0 :+ 16]
  t = t + 1.0
  B[ctx.block.x * 8 :+ 8, 0 :+ 16] = t
}""")
    a = rand(13, 12)
    b = nans(13, 12)
    run_kernel(k, (2,), {"A": a, "B": b}, {})
    assert np.array_equal(b, a + np.float32(1))


def test_let_views_write_through_and_var_copies():
    k = checked("""
kernel k(A: tensor<f32>[M, N], B: tensor<f32>[M, N]) {
  let v = A[2 :+ 4, :]
  var c = A[2 :+ 4, :]
  v[1, 3] = 100.0
  c = c * 2.0
  v[0 :+ 1, :] = c[3 :+ 1, :]
  B[0 :+ 4, :] = c
}""")
    a = rand(8, 12)
    a0 = a.copy()
    b = nans(8, 12)
    run_kernel(k, (1,), {"A": a, "B": b}, {})
    want = a0.copy()
    want[3, 3] = 100.0
    want[2, :] = a0[5] * 2
    assert np.array_equal(a, want)
    assert np.array_equal(b[:4], a0[2:6] * 2) and np.isnan(b[4:]).all()


def test_to_the_end_points_in_slices_and_broadcast_accumulate():
    k = checked("""
kernel k(A: tensor<f32>[M, N], R: tensor<f32>[1, N], C: tensor<f32>[M, 1], B: tensor<f32>[M, N]) {
  var t: tile<f32>[8, 8] = A[0 :+ 8, 0 :+ 8]
  t += R[0, 0 :+ 8]
  t += C[0 :+ 8, 0 :+ 1]
  t -= 0.5
  B[0 :+ 8, 0 :+ 8] = t
  B[2, 4:] = A[3, 4:]
}""")
    a, r, c = rand(8, 8), rand(1, 8), rand(8, 1)
    b = nans(8, 8)
    run_kernel(k, (1,), {"A": a, "R": r, "C": c, "B": b}, {})
    want = ((a + r) + c) - np.float32(0.5)
    want[2, 4:] = a[3, 4:]
    assert np.array_equal(b, want)


def test_shape_builtins():
    k = checked("""
kernel k(A: tensor<f32>[R, C], S: tensor<f32>[R, C], T: tensor<f32>[C, R],
         L: tensor<f32>[R, C], F: tensor<f32>[1, 48], G: tensor<i32>[1, 48], X: tensor<i32>[R, 1]) {
  var a: tile<f32>[6, 8] = A[0 :+ 6, 0 :+ 8]
  var cs: tile<f32>[6, 8] = cumsum(a)
  S[0 :+ 6, 0 :+ 8] = cs
  var tr: tile<f32>[8, 6] = transpose(a)
  T[0 :+ 8, 0 :+ 6] = tr
  var lo: tile<f32>[6, 8] = tril(a)
  L[0 :+ 6, 0 :+ 8] = lo
  var f: tile<f32>[1, 48] = flat(a)
  F[0 :+ 1, 0 :+ 48] = f
  let fv = flat(a)
  fv[0 :+ 1, 0 :+ 2] = 0.0
  var idx: tile<i32>[1, 48] = iota(1) * 7 % 48
  var g: tile<f32>[1, 48] = gather(f, idx)
  G[0 :+ 1, 0 :+ 48] = idx
  var am: tile<i32>[6, 1] = rowargmax(a)
  X[0 :+ 6, 0 :+ 1] = am
  A[0 :+ 6, 0 :+ 8] = a
  F[0 :+ 1, 0 :+ 48] = g
}""")
    a = rand(6, 8)
    a[2, 1] = a[2, 5] = 5.0  # a tie: the smaller index
    a0 = a.copy()
    s, t, lo, f = nans(6, 8), nans(8, 6), nans(6, 8), nans(1, 48)
    g, x = np.zeros((1, 48), np.int32), np.zeros((6, 1), np.int32)
    run_kernel(k, (1,), {"A": a, "S": s, "T": t, "L": lo, "F": f, "G": g, "X": x}, {})
    assert np.allclose(s, np.cumsum(a0.astype(np.float64), axis=0), rtol=1e-6, atol=1e-6)
    assert np.array_equal(t, a0.T) and np.array_equal(lo, np.tril(a0))
    idx = np.arange(48) * 7 % 48
    assert (g[0] == idx).all()
    assert np.array_equal(f[0], a0.reshape(-1)[idx])
    assert (x[:, 0] == a.argmax(axis=1)).all() and x[2, 0] == 1
    flat_written = a0.copy().reshape(-1)
    flat_written[:2] = 0
    assert np.array_equal(a.reshape(-1), flat_written)


def test_row_reductions_and_elementwise():
    k = checked("""
kernel k(A: tensor<f32>[R, C], B: tensor<f32>[R, C], M: tensor<f32>[R, 4], E: tensor<f32>[R, C]) {
  var a: tile<f32>[4, 16] = A[0 :+ 4, 0 :+ 16]
  var b: tile<f32>[4, 16] = B[0 :+ 4, 0 :+ 16]
  var m: tile<f32>[4, 1] = rowmax(abs(a))
  var s: tile<f32>[4, 1] = rowsum(a * b)
  var t: tile<f32>[4, 1] = rowmax(tmax(a, b))
  var sel: tile<f32>[4, 16] = argsel(a, b, a + b, a - b)
  M[0 :+ 4, 0 :+ 1] = m
  M[0 :+ 4, 1 :+ 1] = s
  M[0 :+ 4, 2 :+ 1] = t
  var e: tile<f32>[4, 16] = pow(abs(a) + 0.5, b) + sin(a) * cos(b) + tanh(a) + floor(a * 4.0) + ceil(b)
  e += sel
  E[0 :+ 4, 0 :+ 16] = e
}""")
    a, b = rand(4, 16), rand(4, 16)
    m, e = nans(4, 4), nans(4, 16)
    run_kernel(k, (1,), {"A": a, "B": b, "M": m, "E": e}, {})
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    assert np.array_equal(m[:, 0], np.abs(a).max(1))
    assert np.allclose(m[:, 1], (a64 * b64).sum(1), rtol=1e-5, atol=1e-6)
    assert np.array_equal(m[:, 2], np.maximum(a, b).max(1))
    want = (
        (np.abs(a64) + 0.5) ** b64
        + np.sin(a64) * np.cos(b64)
        + np.tanh(a64)
        + np.floor(a * np.float32(4))
        + np.ceil(b64)
        + np.where(a >= b, a64 + b64, a64 - b64)
    )
    assert np.allclose(e, want, rtol=1e-5, atol=1e-5)


def test_integer_row_sums_wrap_in_their_type():
    k = checked("""
kernel k(A: tensor<i32>[R, C], S: tensor<i32>[R, 1]) {
  var a: tile<i32>[2, 8] = A[0 :+ 2, 0 :+ 8]
  var s: tile<i32>[2, 1] = rowsum(a)
  S[0 :+ 2, 0 :+ 1] = s
}""")
    a = rng.integers(2**29, 2**30, (2, 8)).astype(np.int32)
    s = np.zeros((2, 1), np.int32)
    run_kernel(k, (1,), {"A": a, "S": s}, {})
    want = (a.astype(np.int64).sum(1) + 2**31) % 2**32 - 2**31
    assert (s[:, 0] == want).all()


def test_dot_variants():
    src = """
{attr}
kernel k(A: tensor<{t}>[M, K], B: tensor<{t}>[N, K], C: tensor<{acc}>[M, N]) {{
  var a: tile<{t}>[16, 32] = A[0 :+ 16, 0 :+ 32]
  var b: tile<{t}>[16, 32] = B[0 :+ 16, 0 :+ 32]
  var c: tile<{acc}>[16, 16] = dot_t(a, b)
  C[0 :+ 16, 0 :+ 16] = c
}}"""
    a, b = rand(16, 32, lo=-2, hi=2), rand(16, 32, lo=-2, hi=2)
    c = nans(16, 16)
    run_kernel(checked(src.format(attr="", t="f32", acc="f32")), (1,), {"A": a, "B": b, "C": c}, {})
    assert np.allclose(c, a.astype(np.float64) @ b.T, rtol=1e-5, atol=1e-5)
    tc = checked(src.format(attr="@tensorcore", t="f32", acc="f32"))
    run_kernel(tc, (1,), {"A": a, "B": b, "C": c}, {})
    h = a.astype(np.float16).astype(np.float64) @ b.astype(np.float16).astype(np.float64).T
    assert np.allclose(c, h, rtol=1e-5, atol=1e-5)
    assert not np.allclose(c, a.astype(np.float64) @ b.T, rtol=1e-6, atol=1e-6)
    ai = rng.integers(-128, 128, (16, 32)).astype(np.int8)
    bi = rng.integers(-128, 128, (16, 32)).astype(np.int8)
    ci = np.zeros((16, 16), np.int32)
    run_kernel(
        checked(src.format(attr="", t="i8", acc="i32")), (1,), {"A": ai, "B": bi, "C": ci}, {}
    )
    assert (ci == ai.astype(np.int64) @ bi.T.astype(np.int64)).all()


def test_f16_tiles_round_on_store():
    k = checked("""
kernel k(A: tensor<f16>[N], B: tensor<f16>[N], C: tensor<f16>[N]) {
  var a: tile<f16>[64] = A[0 :+ 64]
  var b: tile<f16>[64] = B[0 :+ 64]
  var c: tile<f16>[64] = a * b + a
  C[0 :+ 64] = c
}""")
    a = rng.uniform(-4, 4, 64).astype(np.float16)
    b = rng.uniform(-4, 4, 64).astype(np.float16)
    c = np.zeros(64, np.float16)
    run_kernel(k, (1,), {"A": a, "B": b, "C": c}, {})
    prod = (a.astype(np.float64) * b).astype(np.float16)
    fused = a.astype(np.float64) * b + a  # one rounding (fma) is allowed too
    ok = (c == (prod.astype(np.float64) + a).astype(np.float16)) | (c == fused.astype(np.float16))
    assert ok.all()


def test_reduce_any_all_min_and_cta_argmax():
    k = checked("""
fn addmul(a, b) = a + b * 1
@launch(64)
kernel k(X: tensor<i32>[N], R: tensor<i32>[N], A: tensor<i32>[N], Mn: tensor<i32>[N]) {
  let t = ctx.block.x * ctx.threads + ctx.thread
  let x = X[t]
  R[t] = reduce<over ctx.lane, width 16>(x, addmul)
  A[t] = where(any<over ctx.lane>(x > 90), 1, 0) + where(all<over ctx.lane>(x >= 0), 2, 0)
  Mn[t] = min<over ctx.thread>(x)
}""")
    n = 128
    x = rng.integers(0, 100, n).astype(np.int32)
    x[40:64] = rng.integers(0, 50, 24)
    x[33] = -5
    r, a, mn = (np.full(n, -99, np.int32) for _ in range(3))
    run_kernel(k, (2,), {"X": x, "R": r, "A": a, "Mn": mn}, {})
    assert (r == np.repeat(x.reshape(-1, 16).sum(1), 16)).all()
    warps = x.reshape(-1, 32)
    want = np.where((warps > 90).any(1), 1, 0) + np.where((warps >= 0).all(1), 2, 0)
    assert (a == np.repeat(want, 32)).all()
    assert (mn == np.repeat(x.reshape(-1, 64).min(1), 64)).all()


def test_thread_runs_sum_elem_store_word_dp4a():
    k = checked("""
@launch(32)
kernel k(W: tensor<f32>[R, C], S: tensor<f32>[R], Q: tensor<i8>[R, C], D: tensor<i32>[R],
         E: tensor<f32>[R, 4], P: tensor<i32>[R], Y: tensor<f32>[R, C]) {
  let r = ctx.thread
  S[r] = sum(W[r, 0 :+ 16] * W[r, 0 :+ 16])
  D[r] = sum(i32(Q[r, 0 :+ 16]) * i32(Q[r, 0 :+ 16]))
  E[r, 0] = elem(W[r, 4 :+ 4], 2)
  let w0 = word(Q[r, 0 :+ 8], 1)
  P[r] = dp4a(i32(w0), i32(word(Q[r, 0 :+ 8], 0)), 7)
  store(Y[r, 0 :+ 4], W[r, 3], W[r, 2], W[r, 1], W[r, 0])
}""")
    w = rand(32, 16)
    q = rng.integers(-128, 128, (32, 16)).astype(np.int8)
    s, e, y = nans(32), nans(32, 4), nans(32, 16)
    d, p = np.zeros(32, np.int32), np.zeros(32, np.int32)
    run_kernel(k, (1,), {"W": w, "S": s, "Q": q, "D": d, "E": e, "P": p, "Y": y}, {})
    assert np.allclose(s, (w.astype(np.float64) ** 2).sum(1), rtol=1e-5)
    assert (d == (q.astype(np.int64) ** 2).sum(1)).all()
    assert np.array_equal(e[:, 0], w[:, 6])
    want = 7 + (q[:, 4:8].astype(np.int64) * q[:, 0:4]).sum(1)
    assert (p == want).all()
    assert np.array_equal(y[:, :4], w[:, 3::-1]) and np.isnan(y[:, 4:]).all()


def test_bit_helpers():
    k = checked("""
@launch(32)
kernel k(X: tensor<i32>[N], Y: tensor<i32>[N], P: tensor<i32>[N2], H: tensor<f32>[N]) {
  let t = ctx.thread
  let x = X[t]
  P[t * 2] = popcount(x)
  P[t * 2 + 1] = i32(byteperm(x, Y[t], 30001))
  H[t] = f32(f16bits(x))
}""")
    x = rng.integers(-(2**31), 2**31 - 1, 32, dtype=np.int64).astype(np.int32)
    x[::2] = rng.integers(0, 2**16, 16).astype(np.int32)
    x[::2] &= ~0x7C00  # finite halves
    y = rng.integers(-(2**31), 2**31 - 1, 32, dtype=np.int64).astype(np.int32)
    p, h = np.zeros(64, np.int32), nans(32)
    run_kernel(k, (1,), {"X": x, "Y": y, "P": p, "H": h}, {})
    ux = x.astype(np.int64) & 0xFFFFFFFF
    uy = y.astype(np.int64) & 0xFFFFFFFF
    assert (p[0::2] == [bin(v).count("1") for v in ux]).all()
    both = ux | (uy << 32)
    want = sum(((both >> (8 * n)) & 0xFF) << (8 * i) for i, n in enumerate((1, 3, 5, 7)))
    assert (p[1::2] == want.astype(np.uint32).view(np.int32)).all()
    halves = (ux & 0xFFFF).astype(np.uint16).view(np.float16)
    assert np.array_equal(h, halves.astype(np.float32), equal_nan=True)


def test_atomics_acquire_release_and_cas():
    k = checked("""
kernel k(F: tensor<i32>[4], L: tensor<i32>[2], O: tensor<i32>[G]) {
  let got = atomic_cas(L, 0, 0, ctx.block.x + 1)
  let old = atomic_add(F, 1, 10)
  if ctx.thread == 0 {
    O[ctx.block.x] = got * 1000 + old
  }
  if ctx.block.x == 0 {
    while load_acquire(F, 0) == 0 {
    }
  }
  if ctx.block.x == ctx.blocks.x - 1 {
    store_release(F, 0, 5)
  }
}""")
    f, lock, o = np.zeros(4, np.int32), np.zeros(2, np.int32), np.full(3, -1, np.int32)
    run_kernel(k, (3,), {"F": f, "L": lock, "O": o}, {})
    assert lock[0] == 1 and f[0] == 5 and f[1] == 30
    assert sorted(o % 1000) == [0, 10, 20] and (o // 1000 == [0, 1, 1]).all()


def test_grid_barrier_must_be_reached_by_every_block():
    k = checked("""
@persistent
kernel k(bar: tensor<i32>[2], O: tensor<i32>[G]) {
  if ctx.block.x == 1 {
    return
  }
  grid_barrier(bar)
  O[ctx.block.x] = 1
}""")
    with pytest.raises(InterpError, match="grid_barrier"):
        run_kernel(k, (3,), {"bar": np.zeros(2, np.int32), "O": np.zeros(3, np.int32)}, {})


def test_uninitialised_tiles_are_poisoned():
    k = checked("""
kernel k(A: tensor<f32>[N]) {
  var t: tile<f32>[8]
  t[0 :+ 4] = 1.0
  A[0 :+ 8] = t
}""")
    a = rand(8)
    run_kernel(k, (1,), {"A": a}, {})
    assert (a[:4] == 1).all() and np.isnan(a[4:]).all()


def test_run_time_faults_point_at_the_statement():
    k = checked("""
kernel k(A: tensor<i32>[N], B: tensor<i32>[N]) {
  let d = A[0]
  B[0] = 100 / d
}""")
    with pytest.raises(InterpError, match=r"^k\.ph:4:3: integer division by zero$"):
        run_kernel(k, (1,), {"A": np.zeros(4, np.int32), "B": np.ones(4, np.int32)}, {})
    b = np.ones(4, np.int32)
    run_kernel(k, (1,), {"A": np.full(4, -7, np.int32), "B": b}, {})
    assert b[0] == -14


PY_WARP = """
import phobos.lang as ph

@ph.kernel
@ph.launch(64)
def warp(X: ph.tensor[ph.f32][N], S: ph.tensor[ph.f32][N], P: ph.tensor[ph.f32][N]):
    t: ph.let = ph.ctx.block.x * ph.ctx.threads + ph.ctx.thread
    x: ph.let = X[t]
    S[t] = ph.sum(x, over=ph.ctx.lane, width=4)
    P[t] = ph.shfl(x, down=1)
"""


def test_collectives_in_the_python_spelling():
    from phobos.pyfront import translate_module

    program, diags = translate_module(SourceFile("warp.py", PY_WARP))
    assert not diags, [d.message for d in diags]
    k, diags = check_kernel(program, "warp")
    assert k is not None, [d.message for d in diags]
    x = rand(128)
    s, p = nans(128), nans(128)
    run_kernel(k, (2,), {"X": x, "S": s, "P": p}, {})
    assert np.allclose(s, np.repeat(x.reshape(-1, 4).astype(np.float64).sum(1), 4), atol=1e-6)
    lane = np.arange(128) % 32
    assert np.array_equal(p, np.where(lane < 31, x[np.minimum(np.arange(128) + 1, 127)], x))


def test_unsigned_reads_zero_extend_bf16_tiles_round_and_unroll():
    k = checked("""
kernel k(B: tensor<u8>[N], H: tensor<bf16>[N], O: tensor<i32>[N], P: tensor<bf16>[N]) {
  var acc: i32 = 0
  for<unroll 4> i in range(0, N, 2) {
    acc += (i32(B[i]) >> 4) & 15
  }
  O[0] = acc
  var h: tile<bf16>[16] = H[0 :+ 16]
  h = h * h
  P[0 :+ 16] = h
}""")
    b = rng.integers(0, 256, 30).astype(np.uint8)
    h = rand(30, lo=-3, hi=3)
    o, p = np.zeros(30, np.int32), nans(30)
    run_kernel(k, (1,), {"B": b, "H": h, "O": o, "P": p}, {})
    assert o[0] == ((b[::2].astype(np.int64) >> 4) & 15).sum()

    def to_bf16(a):
        m, e = np.frexp(a.astype(np.float64))
        return np.ldexp(np.round(m * 256) / 256, e)

    assert np.array_equal(p[:16], to_bf16(to_bf16(h[:16]) ** 2).astype(np.float32))


def test_reduce_over_the_cta_and_shuffle_from_a_per_thread_lane():
    k = checked("""
fn mx(a, b) = max(a, b)
@launch(96)
kernel k(X: tensor<f32>[N], M: tensor<f32>[N], F: tensor<f32>[N]) {
  let t = ctx.thread
  let x = X[t]
  M[t] = reduce<over ctx.thread>(x, mx)
  F[t] = shfl<from 31 - ctx.lane, width 32>(x)
}""")
    x = rand(96)
    m, f = nans(96), nans(96)
    run_kernel(k, (1,), {"X": x, "M": m, "F": f}, {})
    assert (m == x.max()).all()
    lane = np.arange(96) % 32
    assert np.array_equal(f, x[np.arange(96) - lane + 31 - lane])
