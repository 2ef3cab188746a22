# `@ph.launch("T")`: the CTA size searched by `@ph.autotune`, refused where the name is
# not one of its dimensions or a variant's value is no CTA size.
from __future__ import annotations

import phobos.lang as ph


@ph.kernel
@ph.autotune(BLOCK=[1024, 4096], T=[256, 128, 512])
@ph.launch("T")
def tuned(x: ph.tensor[ph.f32][N], y: ph.tensor[ph.f32][N]):
    base: ph.let = ph.ctx.block.x * BLOCK
    y[base:+BLOCK] = x[base:+BLOCK] * ph.f32(ph.ctx.warps)


@ph.kernel
@ph.autotune(BLOCK=[1024, 4096])
@ph.launch("T")  #~ ERROR `T` is not an `@ph.autotune` dimension
def unsearched(x: ph.tensor[ph.f32][N]):
    pass


@ph.kernel
@ph.autotune(THREADS=[128, 256])
@ph.launch("THREAD")  #~ ERROR `THREAD` is not an `@ph.autotune` dimension
def misspelt(x: ph.tensor[ph.f32][N]):
    pass


@ph.kernel
@ph.autotune(T=[128, 256], R=[32, 64])
@ph.launch("T", 2, "R")  #~ ERROR `@ph.launch` takes only integer literals
def caps(x: ph.tensor[ph.f32][N]):
    pass


@ph.kernel
@ph.autotune(T=[2048, 256, 128])
@ph.launch("T")  #~ ERROR `@ph.launch` threads must be from 1 to 1024, but the variant `T=2048`
def too_many(x: ph.tensor[ph.f32][N]):
    pass
