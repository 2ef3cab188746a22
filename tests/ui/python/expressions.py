# Expression forms with no Phobos counterpart.
from __future__ import annotations

import phobos.lang as ph


@ph.kernel
def k(A: ph.tensor[ph.f32][N], x: ph.f32):
    a: ph.let = x if x > 0.0 else 0.0  #~ ERROR conditional expressions are not supported
    b: ph.let = lambda v: v  #~ ERROR lambdas are not supported
    c: ph.let = [v for v in A]  #~ ERROR list comprehensions are not supported
    d: ph.let = ph.sum(v for v in A)  #~ ERROR generator expressions are not supported
    if (e := x) > 0.0:  #~ ERROR `:=` is not supported
        pass
    f: ph.let = ph.max(*A)  #~ ERROR `*` unpacking is not supported
