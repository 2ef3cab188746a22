# `ph.<name>` must be a name of the language, read where it is a value.
from __future__ import annotations

import phobos.lang as ph


@ph.kernel
def k(A: ph.tensor[ph.f32][N], x: ph.f32):
    a: ph.let = ph.softmax(x)  #~ ERROR `phobos.lang` has no `softmax`
    b: ph.let = A.shape  #~ ERROR attribute access is not supported
    c: ph.let = ph.ctx.bogus  #~ ERROR `ph.ctx` has no field `bogus`
    d: ph.let = ph.ctx.lane.x  #~ ERROR `ph.ctx.lane` has no axes
    e: ph.let = ph.ctx.block  #~ ERROR `ph.ctx.block` is read along an axis
    f: ph.let = ph.ctx  #~ ERROR `ph.ctx` is read only through its fields
    g: ph.let = ph  #~ ERROR `ph` is the `phobos.lang` module, not a value
    h: ph.let = ph.let  #~ ERROR `ph.let` is not a value
    i: ph.let = ph.exp(x, base=2.0)  #~ ERROR `ph.exp` takes no keyword arguments
    j: ph.let = ph.sum(x, ovr=ph.ctx.lane)  #~ ERROR `ovr` does not configure `ph.sum`
    var: ph.let = x  #~ ERROR `var` is a keyword in Phobos
    s: ph.let = ph.shfl(x, from_=0)  # fine: shfl<from 0>(x)
