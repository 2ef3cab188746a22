# Types, shapes, literals and loops in the Python spelling, each refusal at its
# Python line.
from __future__ import annotations

import phobos.lang as ph


@ph.kernel
@ph.launch(48)
def types(A: ph.tensor[ph.f32][N], B: ph.tensor[ph.f32][N, 4], x: ph.f32, n: ph.i32):
    t: ph.var[ph.tile[ph.f32][4, R]] = 0.0  #~ ERROR a tile's dimension `R` must be a literal or an `@autotune` constant
    u: ph.var[ph.tile[ph.f32][1, 4]] = A[0:+0]  #~ ERROR a slice length must be positive, not `0`
    w: ph.var[ph.tile[ph.f32][1, 4]] = A[8:4]  #~ ERROR a slice's extent must be positive, not `-4`
    k: ph.let[ph.i32] = 1.5  #~ ERROR expected `i32`, found a float literal
    b: ph.let[ph.i8] = 300  #~ ERROR literal `300` does not fit in `i8`
    h: ph.var[ph.tile[ph.f16][1, 4]] = 0.0
    h = B[0:+1, :]  #~ ERROR expected `f16`, found `f32`
    for i in range(0, n, 0):  #~ ERROR a loop's step must be positive, not `0`
        pass
    for i in range(0.5, n):  #~ ERROR a loop bound must be an index, found `f32`
        pass
    g: ph.let = ph.ctx.warps  #~ ERROR `ctx.warps` needs whole warps, but the CTA has 48 threads
    v: ph.let[ph.f32] = True  #~ ERROR expected `f32`, found `bool`
    m: ph.let = ph.i8(3) + 200  #~ ERROR literal `200` does not fit in `i8`
    s: ph.var[ph.tile[ph.f32][1, 4]] = 0.0
    s = ph.where(not (s > 0.0), 1.0, s)  #~ ERROR `!` takes a scalar `bool`, not a tile
