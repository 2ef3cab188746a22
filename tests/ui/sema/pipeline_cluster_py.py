# `@ph.pipeline(cluster="C")` (ours): clusters of C CTAs sharing a TMA ring's tiles, C 1
# (none) or 2, or an `@ph.autotune` dimension searching only those.
from __future__ import annotations

import phobos.lang as ph


@ph.kernel
@ph.autotune(C=[1, 2])
@ph.pipeline(stages=4, cluster="C")
def tuned(x: ph.tensor[ph.f32][N]):
    pass


@ph.kernel
@ph.pipeline(cluster=3)  #~ ERROR `@ph.pipeline` cluster must be 1 or 2, found 3
def three(x: ph.tensor[ph.f32][N]):
    pass


@ph.kernel
@ph.autotune(CTAS=[1, 2])
@ph.pipeline(cluster="CTA")  #~ ERROR `CTA` is not a cluster size
def misspelt(x: ph.tensor[ph.f32][N]):
    pass
