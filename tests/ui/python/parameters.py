# Parameters are names with types (kernels) or bare names (fns).
from __future__ import annotations

import phobos.lang as ph


@ph.kernel
def k(
    A: ph.tensor[ph.f32][N],
    untyped,  #~ ERROR kernel parameter `untyped` needs a type
    alpha: ph.f32 = 1.0,  #~ ERROR parameter defaults are not supported
    *rest,  #~ ERROR `*rest` parameters are not supported
    beta: ph.f32,  #~ ERROR keyword-only parameters are not supported
    **options,  #~ ERROR `**options` parameters are not supported
):
    pass


@ph.kernel
def types(
    a: int,  #~ ERROR not a Phobos type
    b: ph.tensor[ph.f32],  #~ ERROR `ph.tensor[T]` needs dimensions
    c: ph.tile[float][R, C],  #~ ERROR the element type must be a scalar type
    d: ph.tensor[ph.f32][N + 1],  #~ ERROR a dimension is a name or an integer
):
    pass


@ph.fn
def f(a: ph.f32):  #~ ERROR a fn parameter takes no type
    return a
