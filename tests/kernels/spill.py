# ruff: noqa: F821  (M and W are the kernel's extent and @autotune names)
from __future__ import annotations

import phobos.lang as ph


@ph.kernel
@ph.autotune(W=[256, 1024, 128, 16384])
def spill(X: ph.tensor[ph.f32][M, 256], Y: ph.tensor[ph.f32][M, 256]):
    t: ph.var[ph.tile[ph.f32][1, W]]
    t[0, ph.ctx.thread % W] = X[ph.ctx.block.x, ph.ctx.thread]
    ph.barrier()
    Y[ph.ctx.block.x, ph.ctx.thread] = t[0, ph.ctx.thread % W]
