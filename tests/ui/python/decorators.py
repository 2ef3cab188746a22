# A kernel takes `@ph.` attributes; a fn takes none.
from __future__ import annotations

import functools

import phobos.lang as ph


@ph.kernel(block=4)  #~ ERROR `ph.kernel` has no option `block`
@ph.autotune(X=(32, 256))  #~ ERROR a search dimension lists integers
@ph.aligned(M=TILE_M)  #~ ERROR a name in an attribute is written as a string
@ph.launch(2 * 128)  #~ ERROR an attribute argument is a literal
@functools.cache  #~ ERROR `@functools.cache` is not a Phobos attribute
@ph.exp  #~ ERROR `ph.exp` is not an attribute
def k(x: ph.f32):
    pass


@ph.fn(uses="W")  #~ ERROR `uses` is a tuple of names as strings
@ph.pipeline  #~ ERROR a fn takes no attributes
def f(a):
    return a


@ph.pipeline  #~ ERROR `@ph.pipeline` applies only to a `@ph.kernel`
def plain():
    pass


@ph.kernel  #~ ERROR `@ph.kernel` applies to a function
class K:
    pass
