"""Types and shapes in the Python spelling: each refusal at its Python line."""

from __future__ import annotations

import phobos.lang as ph


@ph.kernel
@ph.autotune(R=[4, 8])
def types(
    A: ph.tensor[ph.f32][M, 64],
    B: ph.tensor[ph.u8][M, 64],
    I: ph.tensor[ph.i8][M, 64],
    x: ph.f32,
    n: ph.i32,
    b: ph.bool,
):
    a0: ph.let = n / 2  #~ ERROR `/` of two integers (`i32`) divides as integers in Phobos
    a00: ph.let = x // 2.0  #~ ERROR `//` of floats (`f32`) is not floor division in Phobos
    q: ph.var = n
    q /= 2  #~ ERROR `/` of two integers (`i32`) divides as integers in Phobos
    r: ph.var = x
    r //= 2.0  #~ ERROR `//` of floats (`f32`) is not floor division in Phobos
    a1: ph.let = x & 3  #~ ERROR no bitwise `&` on `f32`
    a2: ph.let = b and n  #~ ERROR mismatched types `bool` and `i32`
    a3: ph.let = not n  #~ ERROR `!` takes a `bool`
    a4: ph.var = B[0:+4, :] + 1  #~ ERROR no arithmetic on `u8`
    a5: ph.let = ph.f32(b)  #~ ERROR there is no conversion from `bool`
    a6: ph.let = ph.u8(x)  #~ ERROR there is no conversion to `u8`
    t: ph.var[ph.tile[ph.f32][R, 64]] = A[0:+R, :]
    t8: ph.var[ph.tile[ph.f32][8, 64]] = t  #~ ERROR a value of shape [4, 64] does not fit [8, 64]
    t32: ph.var[ph.tile[ph.f32][R, 32]] = 0.0
    a7: ph.var = t + t32  #~ ERROR shapes [4, 64] and [4, 32] do not broadcast
    a8: ph.let = A[0:n, 0]  #~ ERROR the extent of a slice `s:e` must be a constant
    a9: ph.let = A[0:+n, 0]  #~ ERROR the length after `:+` must be a constant
    a10: ph.let = A[x, 0]  #~ ERROR a subscript must be an index
    a11: ph.let = A[0]  #~ ERROR `A` has 2 dimensions but 1 subscript was given
    a12: ph.let = x[0]  #~ ERROR cannot index a scalar `f32`
    a13: ph.let[ph.tensor[ph.f32][4]] = x  #~ ERROR a tensor is a kernel parameter only
    a14: ph.var[ph.f32]  #~ ERROR `var a14` needs a value
    a15: ph.let = ph.iota(0)  #~ ERROR `iota` is only allowed inside the value of a tile assignment
    a16: ph.let = ph.where(t > 0.0, t, 0.0)  #~ ERROR `where` of tiles is only allowed as the value
    a17: ph.var = t > 0.0  #~ ERROR `>` of tiles is only allowed inside `where`
    a18: ph.var = ph.dot(t, t)  #~ ERROR the contracted extents `64` and `4` differ
    i8t: ph.var = I[0:+R, :]
    a19: ph.var = ph.qdot_t(i8t, i8t, i8t, i8t)  #~ ERROR `qdot_t` takes `a_scales` of `f32`
    a20: ph.let = ph.sum(x, over=ph.ctx.lane, width=6)  #~ ERROR a `width` is a constant power of two
    a21: ph.let = ph.sum(x, over=ph.ctx.block.x)  #~ ERROR `sum` folds over `ctx.lane` or `ctx.thread`
    a22: ph.let = ph.shfl(x, width=8)  #~ ERROR `shfl` takes one of `xor`, `from`, `down` or `up`
    a23: ph.let = ph.exp(x, x)  #~ ERROR `exp` takes 1 argument but 2 were given
    a24: ph.let = ph.rowsum(x)  #~ ERROR `rowsum` takes a rank-2 tile, not `f32`
    a25: ph.let[ph.i32] = x  #~ ERROR expected `i32`, found `f32`
    if n:  #~ ERROR a condition must be a `bool`, found `i32`
        a26: ph.let = 1
    a27: ph.let = 4294967296  #~ ERROR integer literal `4294967296` is too large for a 32-bit index
    a28: ph.let = 1.0e39  #~ ERROR float literal `1.0e39` is out of range for `f32`
    a29: ph.let = 10 // 0  #~ ERROR attempt to divide `10` by zero
    for i in ph.unroll(n, range(0, 8)):  #~ ERROR `unroll` takes a positive constant
        a30: ph.let = i
    a31: ph.let = ph.cumsum(I[0:+R, :])  #~ ERROR `cumsum` takes a float tile, not `i8`
    a32: ph.let = ph.atomic_add(I, 0, 1)  #~ ERROR `atomic_add` takes a tensor of `i32` or `f32`
