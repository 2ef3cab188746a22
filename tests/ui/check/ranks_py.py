"""A `[C]` operand meets a `[1, C]` tile: Phobos adds no axes, and says what to declare."""

from __future__ import annotations

import phobos.lang as ph


@ph.kernel
def ranks(b: ph.tensor[ph.f32][C], out: ph.tensor[ph.f32][R, C]):
    t: ph.var[ph.tile[ph.f32][1, 64]] = out[0:+1, 0:+64]
    t = t + b[0:+64]  #~ ERROR shapes [1, 64] and [64] do not broadcast
    u: ph.var[ph.tile[ph.f32][64]] = b[0:+64]
    t += u  #~ ERROR shapes [1, 64] and [64] do not broadcast
