# Built-ins in the Python spelling, each refused at its Python line. The configuration
# of a collective or a shuffle is spelled with keywords: ph.sum(x, over=ph.ctx.lane).
# The runs (`elem`, `word`, `store`) are left to tests/ui/check.
from __future__ import annotations

import phobos.lang as ph


@ph.fn
def one(a):
    return a


@ph.kernel
def builtins(
    A: ph.tensor[ph.f32][N, 64],
    B: ph.tensor[ph.u8][N, 64],
    C: ph.tensor[ph.i8][N, 64],
    D: ph.tensor[ph.f64][N, 64],
    F: ph.tensor[ph.i32][4],
    x: ph.f32,
    n: ph.i32,
):
    a1: ph.let = ph.abs(ph.u8(1))  #~ ERROR there is no conversion to `u8`
    a2: ph.let = ph.exp(True)  #~ ERROR `exp` takes a number, not `bool`
    t: ph.var[ph.tile[ph.f32][4, 64]] = A[0:+4, :]
    q: ph.var[ph.tile[ph.i32][4, 64]] = 0
    e: ph.var[ph.tile[ph.f32][4, 64]] = ph.exp(q)  #~ ERROR `exp` takes a float tile, not `tile<i32>[4, 64]`
    t = ph.where(x, t, 0.0)  #~ ERROR `where` takes a condition, not `f32`
    t = ph.where(t > 0.0, t, True)  #~ ERROR `where` takes two values of one type, not `f32` and `bool`
    idx: ph.var[ph.tile[ph.i32][4, 64]] = ph.iota(2)  #~ ERROR `iota` takes a literal axis below the tile's rank 2
    s1: ph.let = ph.argsel(x, n, 1, 2)  #~ ERROR `argsel` takes `va` and `vb` of one float type
    s2: ph.let = ph.argsel(x, x, n, 2.0)  #~ ERROR `argsel` takes `ia` and `ib` of one type
    r: ph.var[ph.tile[ph.f32][4, 1]] = ph.rowmax(B[0:+4, :])  #~ ERROR `rowmax` takes a float or signed integer tile, not `u8`
    k: ph.var[ph.tile[ph.f32][4, 64]] = ph.tril(ph.i32(t))  #~ ERROR `tril` takes a float tile, not `i32`
    f: ph.var = ph.flat(A[0:+4, :])  #~ ERROR `flat` takes a declared tile, not a slice or an expression
    gt: ph.var[ph.tile[ph.f32][4, 64]] = ph.gather(t, q)  #~ ERROR `gather` takes a table of shape [n] or [1, n]
    g2: ph.var[ph.tile[ph.f32][1, 64]] = ph.gather(A[0:+1, :], t)  #~ ERROR `gather` takes a tile of integer indices
    d1: ph.var[ph.tile[ph.f32][4, 4]] = ph.dot_t(t, q)  #~ ERROR `dot_t` takes operands of one element type, not `f32` and `i32`
    ci: ph.var[ph.tile[ph.i8][4, 64]] = C[0:+4, :]
    d2: ph.var[ph.tile[ph.i32][4, 4]] = ph.dot(ci, ph.transpose(ci))  #~ ERROR `dot` of `i8` operands is `dot_t`
    dd: ph.var[ph.tile[ph.f64][4, 64]] = D[0:+4, :]
    d3: ph.var[ph.tile[ph.f64][4, 4]] = ph.dot_t(dd, dd)  #~ ERROR `dot_t` takes `f32`, `f16` or `i8` operands, not `f64`
    d4: ph.var[ph.tile[ph.f32][4, 4]] = ph.dot(t, x)  #~ ERROR `dot` takes rank-2 tiles, not `f32`
    at: ph.let = ph.atomic_add(F, 0, t)  #~ ERROR `atomic_add` takes scalars after the tensor
    ac: ph.let = ph.atomic_cas(F, 0, 1.5, 2)  #~ ERROR `atomic_cas` takes an integer, not `f32`
    gb: ph.let = ph.grid_barrier(A)  #~ ERROR `grid_barrier` takes a tensor of `i32`, not `tensor<f32>[N, 64]`
    p: ph.let = ph.popcount(x)  #~ ERROR `popcount` takes integers, not `f32`
    r1: ph.let = ph.any(x > 0.0)  #~ ERROR `any` needs a group: `any<over ctx.lane>(...)`
    r2: ph.let = ph.sum(t, over=ph.ctx.lane)  #~ ERROR `sum` folds one scalar per thread, not a tile
    r3: ph.let = ph.all(x, over=ph.ctx.lane)  #~ ERROR `all` folds a condition, not `f32`
    r4: ph.let = ph.sum(True, over=ph.ctx.lane)  #~ ERROR `sum` folds numbers, not `bool`
    r5: ph.let = ph.reduce(x, one, over=ph.ctx.lane)  #~ ERROR `reduce` takes a fn `f(a, b) = e` of two parameters
    r6: ph.let = ph.sum(x, over=ph.ctx.thread, width=8)  #~ ERROR `sum<over ctx.thread>` takes no `width`
    r7: ph.let = ph.sum(x, over=ph.ctx.lane, up=1)  #~ ERROR `sum` takes no `up`
    r8: ph.let = ph.shfl(x, xor=1, over=ph.ctx.lane)  #~ ERROR `shfl` takes no `over`
    r9: ph.let = ph.shfl(t, xor=1)  #~ ERROR `shfl` moves a scalar, not a tile
    r10: ph.let = ph.shfl(x, xor=1, width=3)  #~ ERROR a `width` is a constant power of two dividing 32
