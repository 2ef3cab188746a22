# Subscripts are `A[i]`, `A[s:e]`, `A[s:+n]`, `A[s:]`, `A[:e]`, `A[:]`.
from __future__ import annotations

import phobos.lang as ph


@ph.kernel
def k(A: ph.tensor[ph.f32][M, N], n: ph.i32):
    a: ph.var = A[0:64:2, :]  #~ ERROR slice steps are not supported
    b: ph.var = A[:+64, :]  #~ ERROR `:+` needs a start
    c: ph.var = A[n:+64, 1:]  # fine
