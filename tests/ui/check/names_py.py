"""Names and scopes in the Python spelling: each refusal at its Python line."""

from __future__ import annotations

import phobos.lang as ph


@ph.kernel
@ph.autotune(B=[16, 64])
def names(A: ph.tensor[ph.f32][N], x: ph.f32, n: ph.i32):
    y: ph.let = x
    y = 2.0  #~ ERROR cannot assign twice to immutable `y`
    z = x  #~ ERROR cannot assign to `z`: it is not declared
    w: ph.let = alpah  #~ ERROR cannot find `alpah` in this scope
    x = 1.0  #~ ERROR cannot assign to parameter `x`
    for i in range(0, n):
        i = 3  #~ ERROR cannot assign to loop variable `i`
    if n > 0:
        t: ph.let = 1
    u: ph.let = t  #~ ERROR cannot find `t` in this scope
    B = 3  #~ ERROR cannot assign to `B`, an `@autotune` constant
    N = 4  #~ ERROR cannot assign to `N`, a tensor dimension
    break  #~ ERROR `break` outside of a loop
    e: ph.let = ph.exp  #~ ERROR `exp` is a built-in, not a value
    v: ph.let = A[0:+4]
    v[0] = 1.0
