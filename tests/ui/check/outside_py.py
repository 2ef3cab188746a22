"""Names a kernel does not see: the module's globals, a def's locals, imports, print."""

from __future__ import annotations

import phobos.lang as ph
from helpers import twice

BLOCK = 128
SCALE = 0.5


def plain(x):
    return x


@ph.kernel
def globals_(x: ph.tensor[ph.f32][N]):
    a: ph.let = BLOCK  #~ ERROR cannot find `BLOCK` in this scope
    b: ph.let = SCALE  #~ ERROR cannot find `SCALE` in this scope
    c: ph.let = twice(x[0])  #~ ERROR cannot find fn `twice` in this scope
    d: ph.let = plain(x[0])  #~ ERROR cannot find fn `plain` in this scope
    print(x[0])  #~ ERROR cannot find fn `print` in this scope


def make(width):
    depth = 4

    @ph.kernel
    def closure(out: ph.tensor[ph.f32][N]):
        out[0] = ph.f32(depth)  #~ ERROR cannot find `depth` in this scope
        out[1] = width  #~ ERROR cannot find `width` in this scope

    return closure
