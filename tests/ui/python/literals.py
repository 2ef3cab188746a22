# Collections and literals a kernel cannot hold.
from __future__ import annotations

import phobos.lang as ph


@ph.kernel
def k(A: ph.tensor[ph.f32][N], x: ph.f32):
    """A docstring is allowed."""
    a: ph.let = (x, x)  #~ ERROR tuples are not supported
    b: ph.let = [x, x]  #~ ERROR lists are not supported
    c: ph.let = {"k": x}  #~ ERROR dicts are not supported
    d: ph.let = {x}  #~ ERROR sets are not supported
    e: ph.let = "text"  #~ ERROR strings are not supported
    f: ph.let = f"{x}"  #~ ERROR f-strings are not supported
    g: ph.let = None  #~ ERROR `None` is not a value in Phobos
    h: ph.let = 2j  #~ ERROR complex numbers are not supported
    "a stray string"  #~ ERROR strings are not supported
