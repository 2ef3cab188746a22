"""Triton's names, written bare in a kernel: the help names the Phobos spelling."""

from __future__ import annotations

import phobos.lang as ph


@ph.kernel
def habits(x: ph.tensor[ph.f32][N]):
    pid: ph.let = program_id(0)  #~ ERROR cannot find fn `program_id` in this scope
    n: ph.let = num_programs(0)  #~ ERROR cannot find fn `num_programs` in this scope
    offs: ph.let = arange(0, 16)  #~ ERROR cannot find fn `arange` in this scope
    v: ph.let = load(x)  #~ ERROR cannot find fn `load` in this scope
    w: ph.let = num_warps  #~ ERROR cannot find `num_warps` in this scope
