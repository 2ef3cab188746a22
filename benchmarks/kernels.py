"""The Phobos kernels the benchmarks time, each the same computation as its Triton peer.

Every kernel here is also run by the tile interpreter in the tests (tests/test_benchmark_kernels.py),
so what is timed on the card is what is checked on the CPU.
"""

from __future__ import annotations

import phobos.lang as ph


@ph.kernel(key=("N",))
@ph.autotune(BLOCK=[4096, 1024, 2048, 8192])
@ph.launch(256)
def vector_add(x: ph.tensor[ph.f32][N], y: ph.tensor[ph.f32][N], out: ph.tensor[ph.f32][N]):
    base: ph.let = ph.ctx.block.x * BLOCK
    out[base:+BLOCK] = x[base:+BLOCK] + y[base:+BLOCK]


@ph.kernel(key=("M", "N"))
@ph.autotune(BLOCK=[1024, 2048, 4096, 8192, 16384], T=[256, 128, 512, 64, 32, 1024])
@ph.launch("T")
def softmax_rows(X: ph.tensor[ph.f32][M, N], Y: ph.tensor[ph.f32][M, N]):
    row: ph.let = ph.ctx.block.x
    x: ph.var[ph.tile[ph.f32][1, BLOCK]] = X[row, 0:+BLOCK]
    x = ph.where(ph.iota(1) < N, x, -1.0e30)  # past N the slice reads 0; keep it out of the max
    m: ph.var[ph.tile[ph.f32][1, 1]] = ph.rowmax(x)
    e: ph.var[ph.tile[ph.f32][1, BLOCK]] = ph.exp(x - m)
    s: ph.var[ph.tile[ph.f32][1, 1]] = ph.rowsum(e)
    # One division a row, then a product an element: within 2 ulps of e / s, as the
    # approximate division Triton's softmax uses, where e / s divides every element.
    r: ph.var[ph.tile[ph.f32][1, 1]] = 1.0 / s
    Y[row, 0:+BLOCK] = e * r


@ph.kernel(key=("M", "N"))
@ph.autotune(BLOCK=[1024, 2048, 4096, 8192], T=[256, 128, 512, 64, 32, 1024])
@ph.launch("T")
def layer_norm(
    X: ph.tensor[ph.f16][M, N],
    Y: ph.tensor[ph.f16][M, N],
    W: ph.tensor[ph.f16][1, N],
    B: ph.tensor[ph.f16][1, N],
    eps: ph.f32,
):
    row: ph.let = ph.ctx.block.x
    n: ph.let = ph.f32(N)
    x: ph.var[ph.tile[ph.f32][1, BLOCK]] = ph.f32(X[row, 0:+BLOCK])
    mean: ph.var[ph.tile[ph.f32][1, 1]] = ph.rowsum(x)
    mean = mean / n
    d: ph.var[ph.tile[ph.f32][1, BLOCK]] = ph.where(ph.iota(1) < N, x - mean, 0.0)
    v: ph.var[ph.tile[ph.f32][1, 1]] = ph.rowsum(d * d)
    rstd: ph.var[ph.tile[ph.f32][1, 1]] = ph.rsqrt(v / n + eps)
    Y[row, 0:+BLOCK] = ph.f16(d * rstd * ph.f32(W[0, 0:+BLOCK]) + ph.f32(B[0, 0:+BLOCK]))


@ph.kernel(key=("M", "N"))
@ph.autotune(BLOCK=[1024, 2048, 4096, 8192], T=[256, 128, 512, 64, 32, 1024])
@ph.launch("T")
def rms_norm(
    X: ph.tensor[ph.f16][M, N],
    Y: ph.tensor[ph.f16][M, N],
    W: ph.tensor[ph.f16][1, N],
    eps: ph.f32,
):
    row: ph.let = ph.ctx.block.x
    x: ph.var[ph.tile[ph.f32][1, BLOCK]] = ph.f32(X[row, 0:+BLOCK])
    ms: ph.var[ph.tile[ph.f32][1, 1]] = ph.rowsum(x * x)
    rstd: ph.var[ph.tile[ph.f32][1, 1]] = ph.rsqrt(ms / ph.f32(N) + eps)
    Y[row, 0:+BLOCK] = ph.f16(x * rstd * ph.f32(W[0, 0:+BLOCK]))


@ph.kernel
@ph.launch(64)
def launch4(
    a: ph.tensor[ph.f32][N],
    b: ph.tensor[ph.f32][N],
    c: ph.tensor[ph.f32][N],
    d: ph.tensor[ph.f32][N],
):
    d[0:+64] = a[0:+64] + b[0:+64] + c[0:+64]


@ph.kernel
@ph.launch(64)
def launch12(
    a: ph.tensor[ph.f32][N],
    b: ph.tensor[ph.f32][N],
    c: ph.tensor[ph.f32][N],
    d: ph.tensor[ph.f32][N],
    e: ph.tensor[ph.f32][N],
    f: ph.tensor[ph.f32][N],
    g: ph.tensor[ph.f32][N],
    h: ph.tensor[ph.f32][N],
    i: ph.tensor[ph.f32][N],
    j: ph.tensor[ph.f32][N],
    k: ph.tensor[ph.f32][N],
    out: ph.tensor[ph.f32][N],
):
    s: ph.let = a[0:+64] + b[0:+64] + c[0:+64] + d[0:+64] + e[0:+64] + f[0:+64]
    out[0:+64] = s + g[0:+64] + h[0:+64] + i[0:+64] + j[0:+64] + k[0:+64]
