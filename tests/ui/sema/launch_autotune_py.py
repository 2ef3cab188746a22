# `@ph.launch("T")`: the CTA size searched by `@ph.autotune` (min_blocks and max_regs too,
# ours), refused where a name is not one of its dimensions or a variant's value is out of
# range.
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
@ph.autotune(T=[128, 256], MB=[1, 2], R=[64, 128])
@ph.launch("T", "MB", "R")
def caps(x: ph.tensor[ph.f32][N]):
    pass


@ph.kernel
@ph.autotune(T=[128, 256])
@ph.launch("T", "M")  #~ ERROR `M` is not an `@ph.autotune` dimension
def unsearched_blocks(x: ph.tensor[ph.f32][N]):
    pass


@ph.kernel
@ph.autotune(R=[8, 64])
@ph.launch(256, 1, "R")  #~ ERROR `@ph.launch` max_regs must be from 16 to 255, but the variant
def few_registers(x: ph.tensor[ph.f32][N]):
    pass


@ph.kernel
@ph.launch(256, 2.5)  #~ ERROR `@ph.launch` takes only integer literals and `@ph.autotune` names
def fractional(x: ph.tensor[ph.f32][N]):
    pass


@ph.kernel
@ph.autotune(T=[2048, 256, 128])
@ph.launch("T")  #~ ERROR `@ph.launch` threads must be from 1 to 1024, but the variant `T=2048`
def too_many(x: ph.tensor[ph.f32][N]):
    pass
