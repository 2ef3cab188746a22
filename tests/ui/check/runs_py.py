"""A thread's runs in the Python spelling: each refusal at its Python line."""

from __future__ import annotations

import phobos.lang as ph


@ph.kernel
def runs(
    W: ph.tensor[ph.i8][N, K],
    X: ph.tensor[ph.i8][K],
    O: ph.tensor[ph.i32][N],
    F: ph.tensor[ph.f32][N, K],
):
    col: ph.let = ph.ctx.thread
    v: ph.let = W[col, 0:+16]
    t: ph.var[ph.tile[ph.f32][4, 16]] = 0.0
    ok: ph.let = ph.sum(ph.i32(W[col, 0:+16]) * ph.i32(X[0:+16]))
    a: ph.let = ph.sum(v)  #~ ERROR not the `let` slice `v`
    b: ph.let = ph.sum(ph.i32(W[col, 0:+16]) * ph.i32(X[0:+8]))  #~ ERROR the runs of one `sum` have one length
    c: ph.let = ph.sum(W[0:+2, 0:+16])  #~ ERROR `sum` takes a thread's run, with exactly one `:+` span
    d: ph.let = ph.sum(t)  #~ ERROR over runs and scalars, not `tile<f32>[4, 16]`
    e: ph.let = ph.sum(col)  #~ ERROR `sum` with no group sums a thread's runs, and this has none
    f: ph.let = ph.elem(W[col, 0:+16], 16)  #~ ERROR `elem` takes a constant element below 16
    g: ph.let = ph.word(W[col, 0:+6])  #~ ERROR `word` takes a whole number of words
    ph.store(O[col * 2:+2], ok)  #~ ERROR `store` writes a run of 2, so it takes 2 values, not 1
    i: ph.let = ph.dp4a(1.0, col, 0)  #~ ERROR `dp4a` takes integers, not `f32`
