# Names and fns in the Python spelling, each refusal at its Python line. A fn named
# like a configured built-in and called with a configuration (`shfl<xor 1>(x)` in
# names.ph) has no Python spelling: `shfl(x, xor=1)` is refused by the front end, and
# `ph.shfl` is the built-in.
from __future__ import annotations

import phobos.lang as ph


@ph.fn
def bump(t):
    t = t + 1.0


@ph.fn
def stmt_continue(a):
    continue  #~ ERROR `continue` outside the loops of the body of fn `stmt_continue`


@ph.fn
def stmt_break(a):
    break  #~ ERROR `break` outside the loops of the body of fn `stmt_break`


@ph.fn
def self_call(a):
    return self_call(a)  #~ ERROR fn `self_call` calls itself


@ph.fn
def block(a):
    b: ph.let = a


@ph.kernel
def names(A: ph.tensor[ph.f32][N], x: ph.f32, n: ph.i32):
    bump(x + 1.0)  #~ ERROR fn `bump` indexes or assigns `t`, so it must be passed a name
    s: ph.let = x
    s[0] = 1.0  #~ ERROR cannot index `s`, a scalar `f32`
    a: ph.let = s(2.0)  #~ ERROR `s` is a value, not a fn
    b: ph.let = A[0](1.0)  #~ ERROR only a fn or a built-in can be called
    d: ph.let = nothing(x)  #~ ERROR cannot find fn `nothing` in this scope
    v: ph.let = block(x)  #~ ERROR fn `block` has a statement body, so it has no value
    w: ph.let = self_call(x)
    z: ph.let = names(x)  #~ ERROR `names` is a kernel, and a kernel cannot be called
    for i in range(0, n):
        stmt_continue(x)
        stmt_break(x)
    q: ph.var[ph.f32] = 0.0
    q[1] = 2.0  #~ ERROR cannot index `q`, a scalar `f32`
