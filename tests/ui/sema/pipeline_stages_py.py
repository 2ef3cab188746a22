# `@ph.pipeline(stages="S")` (ours): the rings' depth, a number from 2 to 8 or an
# `@ph.autotune` dimension searching only such numbers.
from __future__ import annotations

import phobos.lang as ph


@ph.kernel
@ph.autotune(S=[3, 4, 5])
@ph.pipeline(stages="S")
def tuned(x: ph.tensor[ph.f32][N]):
    pass


@ph.kernel
@ph.pipeline(stages=9)  #~ ERROR `@ph.pipeline` stages must be from 2 to 8, found 9
def deep(x: ph.tensor[ph.f32][N]):
    pass


@ph.kernel
@ph.autotune(STAGES=[3, 4, 5])
@ph.pipeline(stages="STAGE")  #~ ERROR `STAGE` is not a number of stages
def misspelt(x: ph.tensor[ph.f32][N]):
    pass


@ph.kernel
@ph.pipeline(depth=3)  #~ ERROR `@ph.pipeline` takes only `stages`
def other(x: ph.tensor[ph.f32][N]):
    pass
