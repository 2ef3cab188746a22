# Python operators with no Phobos counterpart are refused at the operator.
from __future__ import annotations

import phobos.lang as ph


@ph.kernel
def k(A: ph.tensor[ph.f32][N], x: ph.f32, n: ph.i32):
    a: ph.let = x ** 2  #~ ERROR `**` is not an operator in Phobos
    b: ph.var = x @ x  #~ ERROR `@` is not an operator in Phobos
    b **= 2.0  #~ ERROR `**=` is not an operator in Phobos
    c: ph.let = x is x  #~ ERROR `is` is not an operator in Phobos
    d: ph.let = n in A  #~ ERROR `in` is not an operator in Phobos
    e: ph.let = n not in A  #~ ERROR `not in` is not an operator in Phobos
    f: ph.let = +x  #~ ERROR unary `+` is not an operator in Phobos
    g: ph.let = x / 2.0 + n // 2  # both fine: `/` and `//` are Phobos's `/`
