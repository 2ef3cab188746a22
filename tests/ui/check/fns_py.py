"""Functions in the Python spelling: each refusal at its Python line."""

from __future__ import annotations

import phobos.lang as ph


@ph.fn
def f(a):
    return g(a)


@ph.fn
def g(a):
    return f(a)  #~ ERROR fn `f` calls itself through other fns


@ph.fn
def two(a, b):
    return a + b


@ph.fn
def stmt_return(a):
    return  #~ ERROR `return` in the statement body of fn `stmt_return`


@ph.fn
def write(t, v):
    t[0] = v


@ph.fn
def scaled(a):
    return a * s  #~ ERROR fn `scaled` reads `s` from its caller, but `uses` does not list it


@ph.fn(uses=("W",))
def scaled_w(a):
    return a * s  #~ ERROR fn `scaled_w` reads `s` from its caller, but `uses` does not list it


@ph.fn(uses=("two",))
def lists_fn(a):  #~ ERROR `two` in `uses` of fn `lists_fn` is a fn of this module
    return two(a, a)


@ph.kernel
def fns(A: ph.tensor[ph.f32][N], x: ph.f32, n: ph.i32):
    r: ph.let = f(x)
    s: ph.let = two(x)  #~ ERROR fn `two` takes 2 arguments but 1 was given
    stmt_return(x)
    write(A[0:+4], x)  #~ ERROR fn `write` indexes or assigns `t`, so it must be passed a name
    c: ph.let = scaled(x)
    d: ph.let = scaled_w(x)
    e: ph.let = lists_fn(x)
