# Declarations are `ph.let` and `ph.var`; assignments write one name or subscript.
from __future__ import annotations

import phobos.lang as ph


@ph.kernel
def k(A: ph.tensor[ph.f32][N], x: ph.f32):
    a: ph.f32 = x  #~ ERROR a local's annotation must be `ph.let` or `ph.var`
    b: ph.let  #~ ERROR `ph.let` needs a value
    c: ph.var  #~ ERROR `ph.var` without a value needs a type
    A[0]: ph.let = x  #~ ERROR only a name can be declared
    d, e = x, x  #~ ERROR tuple unpacking is not supported
    f = g = x  #~ ERROR chained assignment is not supported
    x.real = 1.0  #~ ERROR cannot assign to an attribute
    undeclared = 1.0  # an assignment: the checker, not the front end, refuses it
    return x  #~ ERROR a kernel cannot return a value


@ph.fn
def body(a):
    t: ph.var = a
    return t  #~ ERROR a statement fn cannot return a value
