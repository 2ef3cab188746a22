"""generate(f) in the Python spelling: each refusal at its Python line."""

from __future__ import annotations

import phobos.lang as ph


@ph.fn(uses=("x",))
def three():
    a: ph.let = 1 + 2
    a * x


@ph.fn
def ex(a):
    return a


@ph.fn
def params(a):
    a


@ph.fn
def noend():
    q: ph.let = 1


@ph.kernel
def generates(O: ph.tensor[ph.i32][N], x: ph.i32):
    O[0] = ph.generate(three)
    O[1] = ph.generate(ex)  #~ ERROR `generate` takes a statement fn, and `ex` is an expression fn
    O[2] = ph.generate(params)  #~ ERROR `generate` takes a fn with no parameters, and `params` has 1
    O[3] = ph.generate(noend)  #~ ERROR fn `noend` does not end in a bare expression
    O[4] = ph.generate(x)  #~ ERROR `generate` takes a fn of this module
