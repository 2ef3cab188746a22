# `ph.argmax` and `ph.reduce` misused in the Python spelling, each refused at its Python
# line. `ph.reduce` folds by a `@ph.fn` of one `return` of two parameters, which must be
# associative and commutative; that is the author's promise, never checked.
from __future__ import annotations

import phobos.lang as ph


@ph.fn
def add(a, b):
    return a + b


@ph.fn
def twice(a):
    return a * 2.0


@ph.fn
def three(a, b, c):
    return a + b + c


@ph.fn
def sum_block(a, b):
    s: ph.let = a + b


@ph.kernel
def folds(A: ph.tensor[ph.f32][N], x: ph.f32, n: ph.i32):
    v: ph.let = A[ph.ctx.thread]
    r1: ph.let = ph.reduce(v, twice, over=ph.ctx.lane)  #~ ERROR `reduce` takes a fn `f(a, b) = e` of two parameters, and `twice` has 1
    r2: ph.let = ph.reduce(v, three, over=ph.ctx.lane)  #~ ERROR and `three` has 3
    r3: ph.let = ph.reduce(v, sum_block, over=ph.ctx.thread)  #~ ERROR and `sum_block` has a statement body
    r4: ph.let = ph.reduce(v, n, over=ph.ctx.lane)  #~ ERROR and `n` is not a fn
    r5: ph.let = ph.reduce(v, v + 1.0, over=ph.ctx.lane)  #~ ERROR and this is no fn's name
    r6: ph.let = ph.reduce(v, over=ph.ctx.lane)  #~ ERROR `reduce` takes 2 arguments but 1 was given
    r7: ph.let = ph.reduce(v, add, over=ph.ctx.lane, width=12)  #~ ERROR a `width` is a constant power of two dividing 32
    r8: ph.let = ph.reduce(v, add, over=ph.ctx.thread, width=8)  #~ ERROR `reduce<over ctx.thread>` takes no `width`
    r9: ph.let = ph.reduce(v, add)  #~ ERROR `reduce` needs a group
    a1: ph.let = ph.argmax(v > 0.0, over=ph.ctx.lane)  #~ ERROR `argmax` compares numbers, not `bool`
    a2: ph.let = ph.argmax(v, over=ph.ctx.lane, width=64)  #~ ERROR a `width` is a constant power of two dividing 32
    a3: ph.let = ph.argmax(v, over=ph.ctx.lane, width=n)  #~ ERROR a `width` is a constant power of two dividing 32
    a4: ph.let = ph.argmax(v, over=ph.ctx.thread, width=4)  #~ ERROR `argmax<over ctx.thread>` takes no `width`
    a5: ph.let = ph.argmax(v, over=ph.ctx.warp)  #~ ERROR `argmax` folds over `ctx.lane` or `ctx.thread`
    a6: ph.let = ph.argmax(v)  #~ ERROR `argmax` needs a group
    a7: ph.let = ph.argmax(v, v, over=ph.ctx.lane)  #~ ERROR `argmax` takes 1 argument but 2 were given
    if v > 0.0:
        a8: ph.let = ph.argmax(v, over=ph.ctx.lane)  #~ ERROR `argmax` needs every lane of its warp to reach it
    if ph.ctx.warp == 0:
        r10: ph.let = ph.reduce(v, add, over=ph.ctx.thread)  #~ ERROR `reduce` runs once per CTA
