# ruff: noqa: F821  (N, M, K and BLOCK are the kernels' extents and @autotune names)
"""The kernels the torch tests make ops of, and their grid.

A module of its own: the kernels' extents are no names Python knows.
"""

from __future__ import annotations

import phobos.lang as ph


@ph.kernel
@ph.autotune(BLOCK=[64, 256])
def saxpy(
    x: ph.tensor[ph.f32][N], y: ph.tensor[ph.f32][N], out: ph.tensor[ph.f32][N], alpha: ph.f32
):
    base: ph.let = ph.ctx.block.x * BLOCK
    out[base:+BLOCK] = alpha * x[base:+BLOCK] + y[base:+BLOCK]


@ph.kernel
@ph.autotune(BLOCK=[256])
def rows(
    x: ph.tensor[ph.f32][M, K],
    scaled: ph.tensor[ph.f64][M, K],
    total: ph.tensor[ph.f32][M, 1],
    k: ph.i32,
):
    row: ph.let = ph.ctx.block.x
    t: ph.var[ph.tile[ph.f32][1, BLOCK]] = x[row, 0:+BLOCK]
    scaled[row, 0:+BLOCK] = ph.f64(t) * ph.f64(k)
    s: ph.var[ph.tile[ph.f32][1, 1]] = ph.rowsum(t)
    total[row, 0:+1] = s


@ph.kernel
def scale_bf16(x: ph.tensor[ph.bf16][N], y: ph.tensor[ph.bf16][N]):
    y[0:+4] = x[0:+4]


def blocks(meta):
    """One CTA a BLOCK of N, the last one ragged."""
    return (-(-meta["N"] // meta["BLOCK"]),)
