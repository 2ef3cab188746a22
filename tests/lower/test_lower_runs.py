"""A thread's runs (`sum(e)`, `elem`, `word`, `store`), the bit built-ins and
`for<unroll n>`: lowered, verified, assembled, and run on the threads interpreter
agreeing exactly with the tile interpreter."""

import numpy as np
import pytest
from lowerkit import lowered, ops, ptxas, run_both

from phobos.lower import lir
from phobos.lower.runs import chunk_bytes

rng = np.random.default_rng(7)


def nonzero_f32(*shape):
    x = rng.standard_normal(shape).astype(np.float32)
    x[x == 0] = 1.0
    return x


def nonzero_i8(*shape):
    q = rng.integers(-128, 128, shape).astype(np.int8)
    q[q == 0] = 3
    return q


def agree(hk, k, grid, arrays, **kw):
    ref, got = run_both(hk, k, grid, arrays, **kw)
    for name in ref:
        assert np.array_equal(ref[name], got[name], equal_nan=True), name
    for arch in ("sm_90", "sm_80"):
        ptxas(k, arch)


RUNS = """
@launch(32)
kernel k(W: tensor<f32>[R, C], S: tensor<f32>[R], Q: tensor<i8>[R, C], D: tensor<i32>[R],
         E: tensor<f32>[R, 4], P: tensor<i32>[R], Y: tensor<f32>[R, C], U: tensor<i32>[R]) {
  let r = ctx.thread
  S[r] = sum(W[r, 0 :+ 16] * W[r, 0 :+ 16] + 0.5)
  D[r] = i32(sum(i32(Q[r, 0 :+ 16]) * i32(Q[r, 0 :+ 16])))
  U[r] = i32(sum(i32(Q[r, 4 :+ 8])))
  E[r, 0] = elem(W[r, 4 :+ 4], 2)
  E[r, 1] = f32(elem(Q[r, 1 :+ 3], 2))
  let w0 = word(Q[r, 0 :+ 8], 1)
  P[r] = i32(dp4a(i32(w0), i32(word(Q[r, 0 :+ 8], 0)), 7))
  store(Y[r, 0 :+ 4], W[r, 3], W[r, 2], W[r, 1], W[r, 0])
  store(Y[r, 5 :+ 2], W[r, 8], W[r, 9])
}"""


def run_arrays():
    return {
        "W": nonzero_f32(32, 16), "S": np.ones(32, np.float32), "Q": nonzero_i8(32, 16),
        "D": np.ones(32, np.int32), "E": np.ones((32, 4), np.float32),
        "P": np.ones(32, np.int32), "Y": np.ones((32, 16), np.float32),
        "U": np.ones(32, np.int32),
    }  # fmt: skip


def test_run_sums_elem_word_store_agree():
    hk, k = lowered(RUNS)
    # the f32 run is four 16-byte loads; the i8 runs are words, summed by dp4a
    assert len(ops(k, "ld", space="global", type="f32", vec=4)) >= 4
    assert len(ops(k, "dp4a")) == 4 + 2 + 1  # 16 bytes squared, 8 bytes against ones, dp4a()
    assert ops(k, "st", space="global", type="f32", vec=4)
    assert ops(k, "st", space="global", type="f32", vec=2) == []  # Y[r, 5 :+ 2] is unaligned
    agree(hk, k, 1, run_arrays())


def test_runs_at_64_bit_indices_sum_per_element():
    hk, k = lowered(RUNS, index_width=64)
    assert len(ops(k, "dp4a")) == 1  # only the dp4a() call: the sums are 64-bit
    agree(hk, k, 1, run_arrays())


def test_unaligned_byte_runs_load_per_element():
    hk, k = lowered("""
@launch(32)
kernel k(Q: tensor<i8>[R, C], D: tensor<i32>[R], P: tensor<i32>[R], Z: tensor<i8>[R, C]) {
  let r = ctx.thread
  D[r] = sum(i32(Q[r, 1 :+ 8]) * i32(Q[r, 2 :+ 8]))
  P[r] = i32(word(Q[r, 3 :+ 4]))
  store(Z[r, 0 :+ 8], elem(Q[r, 0 :+ 8], 7), 1, 2, 3, 4, 5, 6, elem(Q[r, 0 :+ 8], 0))
  store(Z[r, 9 :+ 2], 100, -100)
}""")
    assert ops(k, "ld", space="global", type="s8")  # the unaligned runs, byte by byte
    # Z[r, 0 :+ 8]: two packed words (a row of C bytes starts 4-byte aligned)
    assert len(ops(k, "st", space="global", type="u32")) == 2
    q = nonzero_i8(32, 12)
    agree(hk, k, 1, {"Q": q, "D": np.ones(32, np.int32), "P": np.ones(32, np.int32),
                     "Z": nonzero_i8(32, 12)})  # fmt: skip


def test_bit_helpers_agree():
    src = """
@launch(32)
kernel k(X: tensor<i32>[N], Y: tensor<i32>[N], P: tensor<i32>[N2], H: tensor<f32>[N]) {
  let t = ctx.thread
  let x = X[t]
  P[t * 2] = i32(popcount(x))
  P[t * 2 + 1] = i32(byteperm(x, Y[t], 30001 + t))
  H[t] = f32(f16bits(x))
}"""
    x = rng.integers(-(2**31), 2**31 - 1, 32, dtype=np.int64).astype(np.int32)
    x[::2] = rng.integers(1, 2**16, 16).astype(np.int32)
    y = rng.integers(-(2**31), 2**31 - 1, 32, dtype=np.int64).astype(np.int32)
    for width in (32, 64):
        hk, k = lowered(src, index_width=width)
        assert ops(k, "popc") and ops(k, "prmt") and ops(k, "bitcast", type="f16")
        arrays = {"X": x, "Y": y, "P": np.ones(64, np.int32), "H": np.ones(32, np.float32)}
        agree(hk, k, 1, arrays)


UNROLL = """
@launch(64)
kernel k(X: tensor<f32>[N], Y: tensor<f32>[T]) {
  let t = ctx.block.x * ctx.threads + ctx.thread
  var acc: f32 = 0.0
  for<unroll 4> j in range(ctx.thread, N, 32) {
    let x = X[j]
    acc = acc * 0.5 + x * f32(j)
  }
  Y[t] = acc
}"""


@pytest.mark.parametrize("n", [200, 256, 36, 4])
def test_unroll_4_with_a_remainder_agrees(n):
    hk, k = lowered(UNROLL)
    loops = [item for item in k.body.items if isinstance(item, lir.Loop)]
    assert len(loops) == 2  # whole turns, then the rest
    assert len(ops(k, "ld", space="global", type="f32")) == 4 + 1
    agree(hk, k, 2, {"X": nonzero_f32(n), "Y": np.ones(128, np.float32)})


def test_unroll_with_break_stays_a_plain_loop():
    hk, k = lowered("""
kernel k(X: tensor<f32>[N], Y: tensor<f32>[T]) {
  var acc: f32 = 0.0
  for<unroll 4> j in range(0, N) {
    if X[j] > 1.0 {
      break
    }
    acc += X[j]
  }
  Y[ctx.thread] = acc
}""")
    assert [item for item in k.body.items if isinstance(item, lir.For)]
    agree(hk, k, 1, {"X": nonzero_f32(40), "Y": np.ones(256, np.float32)})


def test_chunks():
    assert chunk_bytes(64, 4, 16) == 16
    assert chunk_bytes(8, 4, 4) == 4
    assert chunk_bytes(16, 1, 8) == 8
    assert chunk_bytes(3, 1, 16) == 1
