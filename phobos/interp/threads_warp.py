"""Warp-wide ops of the threads interpreter: `shfl` and `vote`.

A warp is 32 consecutive threads of the CTA (the last one partial when the CTA size is
not a multiple of 32). `shfl.mode.b32 d[, p], a, b, c` follows PTX: `b` is the source
lane or offset, `c` packs the segment mask in bits 8-12 and the clamp lane in bits 0-4
(`((32 - width) << 8) | 31` for `bfly`, `down` and `idx` within segments of `width`
lanes; `(32 - width) << 8` for `up`); a lane whose source falls outside its segment
keeps its own value, and `p` says whether it moved. Reading a lane that is not running
the shuffle has no defined result in PTX: here it is an error.

    >>> import numpy as np
    >>> lanes = np.arange(8)
    >>> shfl_source("bfly", lanes, 1, 31).tolist()
    [1, 0, 3, 2, 5, 4, 7, 6]
    >>> src, moved = shfl_source("down", lanes, 2, ((32 - 4) << 8) | 31, with_pred=True)
    >>> src.tolist(), moved.tolist()
    ([2, 3, 2, 3, 6, 7, 6, 7], [True, True, False, False, True, True, False, False])
"""

from __future__ import annotations

import numpy as np

from phobos.interp.errors import InterpError
from phobos.lower import lir

WARP = 32


def shfl_source(mode: str, lane, b, c, *, with_pred: bool = False):
    """The lane each lane reads (its own where the source is out of its segment), per
    PTX's definition of `shfl.sync`; with `with_pred`, also whether it moved."""
    lane = np.asarray(lane, np.int64)
    bval = np.asarray(b, np.int64) & 31
    cval = np.asarray(c, np.int64) & 31
    segmask = (np.asarray(c, np.int64) >> 8) & 31
    max_lane = (lane & segmask) | (cval & ~segmask)
    min_lane = lane & segmask
    if mode == "up":
        j = lane - bval
        ok = j >= max_lane
    elif mode == "down":
        j = lane + bval
        ok = j <= max_lane
    elif mode == "bfly":
        j = lane ^ bval
        ok = j <= max_lane
    elif mode == "idx":
        j = min_lane | (bval & ~segmask)
        ok = j <= max_lane
    else:
        raise InterpError(f"`shfl.{mode}` is not a shuffle: bfly, up, down or idx")
    src = np.where(ok, j, lane)
    return (src, ok) if with_pred else src


class WarpOps:
    """The warp half of a CTA's run (mixed into the CTA)."""

    def do_shfl(self, i: lir.Inst, mask) -> None:
        t = i.attr("type") or "b32"
        if lir.WIDTH.get(t) != 4:
            raise InterpError(f"`shfl` moves 32-bit values, not {t}")
        a = self.value(i.srcs[0], t)
        b = self.value(i.srcs[1], "u32")
        c = self.value(i.srcs[2], "u32") if len(i.srcs) > 2 else np.full(self.T, 31, np.uint32)
        lane = self.tid % WARP
        src_lane, moved = shfl_source(i.attr("mode"), lane, b, c, with_pred=True)
        src = self.tid - lane + src_lane
        exists = src < self.T
        safe = np.where(exists, src, self.tid)
        bad = mask & (~exists | ~mask[safe])
        if bad.any():
            k = int(np.argmax(bad))
            raise InterpError(
                f"`{lir.print_item(i).strip()}`: thread {k} of block {self.ctaid} reads lane "
                f"{int(src_lane[k])} of its warp, which is not running the shuffle",
                i.span,
            )
        self.write(i.dests[0], a[safe], t, mask)
        if len(i.dests) > 1:
            self.write(i.dests[1], moved, "pred", mask)

    def do_vote(self, i: lir.Inst, mask) -> None:
        """`vote.any`/`all`/`uni` (a pred) and `vote.ballot` (a b32 of the lanes where
        the predicate holds) over the lanes of each warp that run the vote."""
        mode = i.attr("mode")
        p = self.value(i.srcs[0], "pred")
        if i.attr("negated") or i.attr("neg"):
            p = ~p
        warps = -(-self.T // WARP)
        pad = warps * WARP - self.T
        on = np.concatenate([mask, np.zeros(pad, bool)]).reshape(warps, WARP)
        pv = np.concatenate([p, np.zeros(pad, bool)]).reshape(warps, WARP)
        if mode == "any":
            out = np.repeat((pv & on).any(axis=1), WARP)[: self.T]
            t = "pred"
        elif mode == "all":
            out = np.repeat((pv | ~on).all(axis=1), WARP)[: self.T]
            t = "pred"
        elif mode == "uni":  # the same value on every running lane
            same = (pv | ~on).all(axis=1) | (~pv | ~on).all(axis=1)
            out = np.repeat(same, WARP)[: self.T]
            t = "pred"
        elif mode == "ballot":
            weights = np.uint64(1) << np.arange(WARP, dtype=np.uint64)
            word = ((pv & on).astype(np.uint64) * weights).sum(axis=1).astype(np.uint32)
            out, t = np.repeat(word, WARP)[: self.T], "b32"
        else:
            raise InterpError(f"`vote.{mode}` is not a vote: any, all, uni or ballot")
        self.write(i.dests[0], out, t, mask)
