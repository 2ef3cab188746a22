# ruff: noqa: F821  (N, V, BLOCK are the kernel's extent and @autotune names, t its tile)
"""Kernels for the tuner's tests, with variants seeded to fail each check.

`seeded` doubles `x` into `y`. Its variants by `V`: 1 is right; 2 computes 3x (a wrong
result); 3 also writes past the end of `y` once it has 4096 elements or more (an
out-of-bounds store the race check's small run never makes: the interpreter refuses it, a
card's canary catches it); 4 has two threads write one shared element (a
race the race check finds).
"""

from __future__ import annotations

import phobos.lang as ph


@ph.kernel(key=("N",))
@ph.autotune(V=[1, 2, 3, 4], BLOCK=[256, 1024])
@ph.launch(256)
def seeded(x: ph.tensor[ph.f32][N], y: ph.tensor[ph.f32][N]):
    base: ph.let = ph.ctx.block.x * BLOCK
    t: ph.var[ph.tile[ph.f32][1, 128]]
    if V == 2:
        y[base:+BLOCK] = 3.0 * x[base:+BLOCK]
    else:
        y[base:+BLOCK] = 2.0 * x[base:+BLOCK]
    if V == 3:
        # Only at 4096 elements and more: the race check's small run stays in bounds.
        if ph.ctx.block.x == 0 and N >= 4096:
            y[N + ph.ctx.thread % 16] = 7.0
    if V == 4:
        t[0, ph.ctx.thread % 128] = ph.f32(ph.ctx.thread)
        ph.barrier()
        if ph.ctx.thread == 0:
            y[base] = 2.0 * x[base] + 0.0 * t[0, 5]


def doubled(x, y):
    """The reference: `y` is twice `x`."""
    y[:] = 2.0 * x
