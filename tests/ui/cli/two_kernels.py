"""Errors in a Python module are reported at its own lines, one per refused construct."""

import phobos.lang as ph


@ph.kernel
def first(A: ph.tensor[ph.f32][N]):
    i: ph.let = ph.ctx.thread
    A[i] = A[i] ** 2  #~ ERROR `**` is not an operator


@ph.kernel
def second(A: ph.tensor[ph.f32][N]):
    i: ph.let = ph.ctx.thread
    A[i] = A[i] if i > 0 else 0.0  #~ ERROR conditional expressions
