"""The tile interpreter end to end: checked kernels from source against numpy float64."""

from pathlib import Path

import numpy as np
import pytest

from phobos.interp import InterpError, run_kernel
from phobos.pyfront import translate_module
from phobos.sema.check import check_kernel
from phobos.source import SourceFile
from phobos.syntax.parser import parse

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
rng = np.random.default_rng()


def checked(source: str, name: str, variant=None, file="k.ph"):
    if file.endswith(".py"):
        program, diags = translate_module(SourceFile(file, source))
    else:
        program, diags = parse(SourceFile(file, source))
    assert not diags, [d.message for d in diags]
    kernel, diags = check_kernel(program, name, variant)
    assert kernel is not None, [d.message for d in diags]
    return kernel


def example(stem: str, name: str, variant=None, spelling="ph"):
    path = EXAMPLES / f"{stem}.{spelling}"
    return checked(path.read_text(), name, variant, file=path.name)


def poisoned(shape):
    return np.full(shape, np.nan, np.float32)


def rand(*shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, shape).astype(np.float32)


@pytest.mark.parametrize("spelling", ["ph", "py"])
def test_saxpy(spelling):
    k = example("saxpy", "saxpy", {"BLOCK": 64}, spelling)
    n = 1004
    x, y = rand(n), rand(n)
    out = poisoned(n)
    run_kernel(k, ((n + 63) // 64,), {"x": x, "y": y, "out": out, "alpha": 1.7}, {})
    want = np.float64(np.float32(1.7)) * x.astype(np.float64) + y
    assert np.allclose(out, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("spelling", ["ph", "py"])
def test_sgemm_with_alpha_and_beta(spelling):
    v = {"TILE_M": 32, "TILE_N": 64, "TILE_K": 8}
    k = example("sgemm", "matmul", v, spelling)
    m, n, kk = 96, 128, 40  # @aligned promises whole tiles
    a, b, c = rand(m, kk), rand(kk, n), rand(m, n)
    c0 = c.copy()
    run_kernel(k, (m // 32, n // 64), {"A": a, "B": b, "C": c, "alpha": 0.75, "beta": -1.25}, {})
    want = 0.75 * (a.astype(np.float64) @ b) - 1.25 * c0
    assert np.allclose(c, want, rtol=1e-5, atol=1e-5)


def test_sgemm_refuses_a_launch_that_breaks_aligned():
    k = example("sgemm", "matmul", {"TILE_M": 32, "TILE_N": 32, "TILE_K": 4})
    a, b, c = rand(70, 8), rand(8, 32), rand(70, 32)
    with pytest.raises(InterpError, match=r"`@aligned\(M = 32\)` is broken"):
        run_kernel(k, (3, 1), {"A": a, "B": b, "C": c, "alpha": 1.0, "beta": 0.0}, {})


def attention_reference(q, k, v, scale):
    s = (q.astype(np.float64) @ k.T.astype(np.float64)) * scale
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)) @ v.astype(np.float64)


@pytest.mark.parametrize("spelling", ["ph", "py"])
def test_flash_attention_ragged(spelling):
    k = example("flash_attention", "flash_attention", {"D": 64, "BR": 32, "BC": 32}, spelling)
    nq, nk = 70, 83
    q, kk, v = rand(nq, 64), rand(nk, 64), rand(nk, 64)
    out = poisoned((nq, 64))
    run_kernel(k, ((nq + 31) // 32,), {"Q": q, "K": kk, "V": v, "O": out, "scale": 0.125}, {})
    assert np.allclose(out, attention_reference(q, kk, v, 0.125), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("spelling", ["ph", "py"])
def test_kda_ragged_against_the_recurrent_form(spelling):
    k = example("kda", "kda", {"D": 64, "C": 32}, spelling)
    n = 75
    q, kk, v = rand(n, 64), rand(n, 64), rand(n, 64)
    g = rand(n, 1, lo=-0.2, hi=-0.01)
    out = poisoned((n, 64))
    run_kernel(k, (1,), {"Q": q, "K": kk, "V": v, "G": g, "O": out, "scale": 0.5}, {})
    state = np.zeros((64, 64))
    want = np.zeros((n, 64))
    for t in range(n):  # S_t = exp(g_t) S_{t-1} + k_t^T v_t ; o_t = scale q_t S_t
        state = np.exp(np.float64(g[t, 0])) * state + np.outer(kk[t], v[t])
        want[t] = 0.5 * q[t].astype(np.float64) @ state
    assert np.allclose(out, want, rtol=1e-4, atol=1e-4)


SOFTMAX = """
kernel softmax(X: tensor<f32>[M, N], Y: tensor<f32>[M, N]) {
  let r = ctx.block.x * 4
  var x: tile<f32>[4, 128] = X[r :+ 4, 0 :+ 128]
  x = where(iota(1) < N, x, -1.0e30)
  var m: tile<f32>[4, 1] = rowmax(x)
  var e: tile<f32>[4, 128] = exp(x - m)
  var s: tile<f32>[4, 1] = rowsum(e)
  Y[r :+ 4, 0 :+ 128] = e / s
}
"""


def test_softmax_rows_ragged():
    k = checked(SOFTMAX, "softmax")
    m, n = 13, 100
    x = rand(m, n, lo=-4, hi=4)
    y = poisoned((m, n))
    run_kernel(k, ((m + 3) // 4,), {"X": x, "Y": y}, {})
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    assert np.allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


LAYERNORM = """
kernel layernorm(X: tensor<f32>[M, N], W: tensor<f32>[1, N], B: tensor<f32>[1, N],
                 Y: tensor<f32>[M, N], eps: f32) {
  let r = ctx.block.x * 2
  var x: tile<f32>[2, 64] = X[r :+ 2, 0 :+ 64]
  var mean: tile<f32>[2, 1] = rowsum(x)
  mean = mean / f32(N)
  var d: tile<f32>[2, 64] = where(iota(1) < N, x - mean, 0.0)
  var v: tile<f32>[2, 1] = rowsum(d * d)
  var rstd: tile<f32>[2, 1] = rsqrt(v / f32(N) + eps)
  var w = W[0 :+ 1, 0 :+ 64]
  var b = B[0 :+ 1, 0 :+ 64]
  Y[r :+ 2, 0 :+ 64] = d * rstd * w + b
}
"""


def test_layer_norm_rows_ragged():
    k = checked(LAYERNORM, "layernorm")
    m, n = 7, 52
    x, w, b = rand(m, n, lo=-3, hi=3), rand(1, n), rand(1, n)
    y = poisoned((m, n))
    run_kernel(k, ((m + 1) // 2,), {"X": x, "W": w, "B": b, "Y": y, "eps": 1e-5}, {})
    x64 = x.astype(np.float64)
    mu = x64.mean(axis=1, keepdims=True)
    var = ((x64 - mu) ** 2).mean(axis=1, keepdims=True)
    want = (x64 - mu) / np.sqrt(var + 1e-5) * w + b
    assert np.allclose(y, want, rtol=1e-4, atol=1e-5)


WARP = """
@launch(64)
kernel warp(X: tensor<f32>[N], S: tensor<f32>[N], A: tensor<i32>[N], P: tensor<f32>[N],
            D: tensor<f32>[N], U: tensor<f32>[N], F: tensor<f32>[N], Mx: tensor<f32>[N]) {
  let t = ctx.block.x * ctx.threads + ctx.thread
  let x = X[t]
  S[t] = sum<over ctx.lane, width 8>(x)
  A[t] = argmax<over ctx.lane>(x)
  P[t] = shfl<xor 5>(x)
  D[t] = shfl<down 3, width 16>(x)
  U[t] = shfl<up 2>(x)
  F[t] = shfl<from ctx.lane / 2>(x)
  Mx[t] = max<over ctx.lane, width 4>(x)
}
"""


def test_warp_collectives_and_shuffles():
    k = checked(WARP, "warp")
    n = 192
    x = rand(n)
    x[5] = x[7]  # a tie: argmax takes the smaller lane
    outs = {name: poisoned(n) for name in ("S", "P", "D", "U", "F", "Mx")}
    a = np.full(n, -1, np.int32)
    run_kernel(k, (n // 64,), {"X": x, "A": a, **outs}, {})
    lanes = x.reshape(-1, 32).astype(np.float64)
    assert np.allclose(
        outs["S"], np.repeat(x.reshape(-1, 8).astype(np.float64).sum(1), 8), rtol=1e-6, atol=1e-6
    )
    assert (a == np.repeat(lanes.argmax(axis=1), 32)).all()
    lane = np.arange(n) % 32
    base = np.arange(n) - lane
    assert np.array_equal(outs["P"], x[base + (lane ^ 5)])
    piece = lane % 16
    assert np.array_equal(
        outs["D"], np.where(piece + 3 < 16, x[np.minimum(np.arange(n) + 3, n - 1)], x)
    )
    assert np.array_equal(outs["U"], np.where(lane >= 2, x[np.arange(n) - 2], x))
    assert np.array_equal(outs["F"], x[base + lane // 2])
    assert np.array_equal(outs["Mx"], np.repeat(x.reshape(-1, 4).max(1), 4))


CTA = """
@launch(128)
kernel cta(X: tensor<f32>[N], Out: tensor<f32>[B], Who: tensor<i32>[B], Cnt: tensor<i32>[B]) {
  let x = X[ctx.block.x * ctx.threads + ctx.thread]
  let total = sum<over ctx.thread>(x)
  let who = argmax<over ctx.thread>(x)
  let big = sum<over ctx.thread>(where(x > 0.5, 1, 0))
  if ctx.thread == 0 {
    Out[ctx.block.x] = total
    Who[ctx.block.x] = who
    Cnt[ctx.block.x] = big
  }
}
"""


def test_cta_collectives():
    k = checked(CTA, "cta")
    blocks = 3
    x = rand(blocks * 128)
    out, who, cnt = poisoned(blocks), np.full(blocks, -1, np.int32), np.full(blocks, -1, np.int32)
    run_kernel(k, (blocks,), {"X": x, "Out": out, "Who": who, "Cnt": cnt}, {})
    rows = x.reshape(blocks, 128)
    # An f32 sum of signed terms may land near zero: bound its error by the terms' size.
    scale = np.abs(rows).astype(np.float64).sum(1)
    assert (np.abs(out - rows.astype(np.float64).sum(1)) <= 1e-5 * scale).all()
    assert (who == rows.argmax(1)).all()
    assert (cnt == (rows > 0.5).sum(1)).all()


HISTOGRAM = """
kernel hist(X: tensor<i32>[N], H: tensor<i32>[B]) {
  let start = ctx.block.x * 50
  for i in range(start, start + 50) {
    if i < N {
      atomic_add(H, X[i], 1)
    }
  }
}
"""


def test_histogram_with_atomic_add():
    k = checked(HISTOGRAM, "hist")
    n, bins = 437, 12
    x = rng.integers(0, bins, n).astype(np.int32)
    h = np.zeros(bins, np.int32)
    run_kernel(k, ((n + 49) // 50,), {"X": x, "H": h}, {})
    assert (h == np.bincount(x, minlength=bins)).all()


TWO_PHASE = (Path(__file__).parents[1] / "kernels" / "two_phase.ph").read_text()


def test_two_phase_reduction_over_grid_barrier():
    k = checked(TWO_PHASE, "total")
    n, blocks = 1237, 5
    x = rand(n)
    part, out, bar = poisoned(blocks), poisoned(1), np.zeros(2, np.int32)
    run_kernel(k, (blocks,), {"X": x, "Part": part, "Out": out, "bar": bar}, {})
    assert np.allclose(out[0], x.astype(np.float64).sum(), rtol=1e-5, atol=1e-5)
