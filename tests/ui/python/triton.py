"""Triton's spellings through `tl` and `ph`: each refused with the Phobos one."""

from __future__ import annotations

import phobos.lang as ph
import triton.language as tl


@ph.kernel
def triton(x: ph.tensor[ph.f32][N], BLOCK: tl.constexpr):  #~ ERROR `tl.constexpr` is not Phobos
    pid: ph.let = tl.program_id(0)  #~ ERROR `tl.program_id` is not Phobos
    offs: ph.let = tl.arange(0, 16)  #~ ERROR `tl.arange` is not Phobos
    v: ph.let = tl.load(x)  #~ ERROR `tl.load` is not Phobos
    tl.store(x, v)  #~ ERROR `tl.store` is not Phobos
    q: ph.let = ph.program_id(0)  #~ ERROR `phobos.lang` has no `program_id`
    w: ph.let = ph.num_warps  #~ ERROR `phobos.lang` has no `num_warps`
    c: ph.let = ph.constexpr  #~ ERROR `phobos.lang` has no `constexpr`
    z: ph.let = tl.foo(0)  #~ ERROR attribute access is not supported
