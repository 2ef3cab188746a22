# Every attribute of SPEC.md "Attributes" in its Python spelling, refused where its
# arguments are wrong. Each error is at the Python line that spells it.
from __future__ import annotations

import phobos.lang as ph


@ph.kernel
@ph.fast_math  #~ ERROR `@ph.fast_math` is planned but not implemented yet
@ph.launch(128)
@ph.launch(256)  #~ ERROR `@ph.launch` is given twice
def planned(x: ph.tensor[ph.f32][N]):
    pass


@ph.kernel
@ph.autotune(BM=[0, 64], BN=[64, 16])  #~ ERROR `BM` cannot take the value 0
@ph.cluster(CM=[16, 100])  #~ ERROR `CM` doubles from 16 and never reaches 100
def bounds(x: ph.tensor[ph.f32][N]):  #~^^ ERROR the bounds of `BN` are out of order
    pass


@ph.kernel
@ph.autotune(BM=[16, 32, 16], BK=[8, 8])  #~ ERROR `BM` lists 16 twice
def lists(x: ph.tensor[ph.f32][N]):  #~^ ERROR the bounds of `BK` are equal
    pass


@ph.kernel
@ph.autotune(
    x=[16, 32],  #~ ERROR the search dimension `x` has the name of a kernel parameter
    K=4,  #~ ERROR `@ph.autotune` takes only search dimensions
)
def params(x: ph.tensor[ph.f32][N]):
    pass


@ph.kernel
@ph.autotune(BM=[16, 64])
@ph.aligned(M="BN", Q=16)  #~ ERROR `BN` is not an `@ph.autotune` constant
def aligned(x: ph.tensor[ph.f32][M, 8]):  #~^ ERROR `Q` is not a dimension of a tensor parameter
    pass


@ph.kernel
@ph.aligned("M")  #~ ERROR `@ph.aligned` takes only `DIM=tile` arguments
@ph.launch(2048, 1, 300)  #~ ERROR `@ph.launch` threads must be from 1 to 1024, found 2048
def launch(x: ph.tensor[ph.f32][M]):  #~^ ERROR `@ph.launch` max_regs must be from 16 to 255, found 300
    pass


@ph.kernel
@ph.launch(True)  #~ ERROR `@ph.launch` takes only integer literals
@ph.tensorcore("wma")  #~ ERROR unknown tensor-core path `wma`
@ph.registers("acc", "acc", "nope")  #~ ERROR `acc` is named twice in `@ph.registers`
@ph.pipeline(1)  #~ ERROR `@ph.pipeline` takes only `stages`
def rest(x: ph.tensor[ph.f32][N]):  #~^^ ERROR `@ph.registers` names `nope`, which no `var` of the kernel declares
    acc: ph.var[ph.tile[ph.f32][1, 64]] = 0.0
