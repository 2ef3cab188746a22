# A loop counts over `range(...)`; Python's other loop forms are refused.
from __future__ import annotations

import phobos.lang as ph


@ph.kernel
def k(A: ph.tensor[ph.f32][N], x: ph.f32, n: ph.i32):
    for i in range(n):
        pass
    else:  #~ ERROR `for` ... `else` is not supported
        pass
    while x < 1.0:
        x += 1.0
    else:  #~ ERROR `while` ... `else` is not supported
        pass
    for v in A:  #~ ERROR a `for` loop runs over `range(...)`
        pass
    for i, j in range(n):  #~ ERROR a loop variable is one name
        pass
    for i in range(0, n, 1, 2):  #~ ERROR `range` takes one to three arguments
        pass
    for i in ph.unroll(range(n)):  #~ ERROR `ph.unroll` takes a count and a `range(...)`
        pass
    for i in range(n, step=2):  #~ ERROR `range` takes no keyword arguments
        pass
    for i in ph.unroll(4, range(n)):  # fine: for<unroll 4> i in range(0, n)
        pass
