"""@registers in the Python spelling: each refusal at its Python line."""

from __future__ import annotations

import phobos.lang as ph


@ph.registers("acc", "b", "c", "e")
@ph.launch(128)
@ph.kernel
def registers(A: ph.tensor[ph.f32][1, N], n: ph.i32):
    acc: ph.var[ph.tile[ph.f32][64, 256]] = 0.0  #~ ERROR `acc` keeps 128 elements per thread in registers, more than 64
    b: ph.var[ph.tile[ph.f32][1, 96]] = 0.0  #~ ERROR the CTA's 128 threads do not divide the 96 elements of `b`
    c: ph.var = A[0, 0:+128]  #~ ERROR `c` is declared without a tile type
    e: ph.var[ph.tile[ph.f32][1, 128]] = 0.0
    for i in range(0, n):
        e += 1.0
    if n > 0:
        e += 1.0  #~ ERROR `e` is kept in registers, so it cannot be updated inside an `if` or `while`
    while n > 3:
        e[0, 0:+4] = 2.0  #~ ERROR `e` is kept in registers
