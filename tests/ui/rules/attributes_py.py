# Attribute rules of SPEC.md "Attributes" in the Python spelling, each refusal at the
# decorator that breaks it. An unknown attribute (E0200) has no Python spelling: the
# front end refuses `@ph.lanuch` as a name `phobos.lang` does not hold (E0112), so
# attributes.ph alone shows it.
from __future__ import annotations

import phobos.lang as ph


@ph.kernel
@ph.assert_coalesced  #~ ERROR `@ph.assert_coalesced` is planned but not implemented yet
@ph.tensorcore(1)  #~ ERROR unknown tensor-core path `1`
@ph.launch()  #~ ERROR `@ph.launch` needs the CTA size
def calls(x: ph.tensor[ph.f32][N]):
    pass


@ph.kernel
@ph.tensorcore("sync", "wmma")  #~ ERROR `@ph.tensorcore` takes at most one path
@ph.registers(3)  #~ ERROR `@ph.registers` takes only names of `var` tiles
@ph.aligned(N=0)  #~ ERROR `N` cannot be aligned to `0`
@ph.launch(256, 0)  #~ ERROR `@ph.launch` min_blocks must be from 1 to 32, found 0
def args(x: ph.tensor[ph.f32][N]):
    t: ph.var[ph.tile[ph.f32][1, 64]] = 0.0


@ph.kernel
@ph.aligned()  #~ ERROR `@ph.aligned` needs a dimension and its tile
@ph.cluster()  #~ ERROR `@ph.cluster` needs at least one search dimension
@ph.readonly  #~ ERROR `@ph.readonly` is planned but not implemented yet
def empty(x: ph.tensor[ph.f32][N]):
    pass
