"""Per-thread values in the Python spelling: the three rules, each at its Python line."""

from __future__ import annotations

import phobos.lang as ph


@ph.kernel
def once_per_cta(A: ph.tensor[ph.f32][N], n: ph.i32):
    if ph.ctx.thread < 4:
        ph.barrier()  #~ ERROR `barrier` runs once per CTA, so every thread must reach it
    for i in range(0, n):
        if ph.ctx.thread < 3:
            break
        ph.barrier()  #~ ERROR `barrier` runs once per CTA, so every thread must reach it
    v: ph.let = A[ph.ctx.thread]
    if ph.ctx.lane < 4:
        s: ph.let = ph.sum(v, over=ph.ctx.lane)  #~ ERROR `sum` needs every lane of its warp
    if ph.ctx.lane == 0:
        return
    ph.barrier()  #~ ERROR `barrier` runs once per CTA, so every thread must reach it


@ph.kernel
def differs(A: ph.tensor[ph.f32][N], F: ph.tensor[ph.i32][4], n: ph.i32):
    j: ph.var = 0
    for k in range(0, n):
        u: ph.var = A[j:+4]  #~ ERROR takes `j`, which differs between lanes
        j = ph.ctx.lane
    old: ph.let = ph.atomic_add(F, ph.ctx.lane, 1)  #~ ERROR `atomic_add` takes `ctx.lane`, which differs


@ph.kernel
def stale(A: ph.tensor[ph.f32][N], n: ph.i32):
    t: ph.var[ph.tile[ph.f32][1, 256]]
    t[0, ph.ctx.thread] = 1.0
    s: ph.var = ph.rowsum(t)  #~ ERROR `rowsum` reads `t` after a per-thread store to it
    ph.barrier()
    s2: ph.var = ph.rowsum(t)
