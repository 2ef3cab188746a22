"""A `uses` name the module also binds: Python would read the module's value."""

from __future__ import annotations

import phobos.lang as ph

W = 4


@ph.fn(uses=("C", "W"))  #~ ERROR `W` in `uses` of fn `store` is also bound by the module
def store(i):
    W[i] = C


@ph.kernel
def uses_global(A: ph.tensor[ph.f32][N], C: ph.f32):
    store(0)
