"""Two consumer warpgroups taking turns at the tensor cores (FA3's ping-pong), where a
producer warpgroup feeds a TMA ring (`Lowering.specialized_body`).

In attention's loop each warpgroup issues its two products (the scores, then `p v`) with
its softmax between them. Run freely, both warpgroups reach their products at about the
same time and their softmaxes too, so the tensor cores idle while both exponentiate. Two
named barriers make them take turns: warpgroup w waits at barrier 2 + w before its turn's
first product and, once its last product of the turn is issued, arrives at the other's,
3 - w. Each barrier counts 256 threads, the 128 waiting and the 128 arriving, so
warpgroup 0 issues, then warpgroup 1 while warpgroup 0 runs its softmax, and so on:

    warpgroup 1, before the loop: arrive at barrier 2      (where the loop runs a turn)
    for kt ... {
      wait for the turn's stage
      bar.sync 2 + w, 256                                   // my turn at the tensor cores
      s = q kᵀ (issued, waited) ... softmax ... acc += p v (issued)
      bar.arrive 3 - w, 256    (not warpgroup 1's last turn: nobody waits for it)
      ...
    }

Warpgroup 0 waits n times at barrier 2: once for the arrival before the loop and n - 1
times for warpgroup 1's turns but its last; warpgroup 1 waits n times at barrier 3 for
warpgroup 0's n turns. A loop body with a CTA barrier of its own (which both warpgroups
must reach in the same turn) or fewer than two product groups is left as it is, and so
is every kernel under `PHOBOS_PINGPONG=0`; PHOBOS_LOG=debug says why. (The threads
interpreter runs such a loop as a strand a warpgroup: `threads.Cta.for_`.)

    >>> FIRST
    2
"""

from __future__ import annotations

import logging
import os

from phobos.lower import lir
from phobos.lower.lir import If, Imm

log = logging.getLogger("phobos.lower")
FIRST = 2  # barriers 2 and 3: 0 is the CTA's, 1 the consumers' (`Lowering.barrier_srcs`)
COUNT = 256  # two warpgroups: the waiting one and the arriving one


def refusal(lw, loop: lir.For) -> str | None:
    """Why the consumers of `loop` (the fed ring's lowered loop) do not take turns."""
    if os.environ.get("PHOBOS_PINGPONG") == "0":
        return "PHOBOS_PINGPONG=0"
    if lw.threads != 2 * 128:
        return f"{lw.threads // 128} consumer warpgroups, not two"
    if any(i.op == "bar" for i in lir.insts(loop.body)):
        return "the loop's body has a CTA barrier of its own"
    top = [i.op if isinstance(i, lir.Inst) else None for i in loop.body.items]
    if top.count("wgmma_commit") < 2 or "wgmma_fence" not in top:
        return "fewer than two product groups at the loop's top level"
    return None


def take_turns(lw, items: list, at: int) -> None:
    """Make the two consumer warpgroups take turns in the loop `items[at]` (a `lir.For`),
    in place: the loop's body rewritten, warpgroup 1's first arrival put before it."""
    b, loop = lw.b, items[at]
    why = refusal(lw, loop)
    if why is not None:
        log.debug("`%s`: the consumer warpgroups do not take turns: %s", lw.k.name, why)
        return
    tid = lw.sreg("tid.x")
    wg = b.once(("pingpong.wg",), lambda: b.op("shr", "u32", tid, Imm(7, "u32"), hint="wg"))
    mine = b.once(("pingpong.mine",), lambda: b.op("add", "u32", wg, Imm(FIRST, "u32"), hint="bid"))
    other = b.once(("pingpong.other",),
                   lambda: b.op("sub", "u32", Imm(FIRST + 1, "u32"), wg, hint="bid"))  # fmt: skip
    first = b.once(("pingpong.first",), lambda: b.op("setp", "pred", wg, Imm(0, "u32"),
                                                      cmp="eq", type="u32"))  # fmt: skip
    count = Imm(COUNT, "u32")
    body = list(loop.body.items)
    ops = [i.op if isinstance(i, lir.Inst) else None for i in body]
    fence = ops.index("wgmma_fence")
    commit = len(ops) - 1 - ops[::-1].index("wgmma_commit")
    t = loop.var.type
    with b.region() as wait:
        b.emit("bar", (), (mine, count))
    with b.region() as arrive:
        # warpgroup 0 always; warpgroup 1 but in its last turn
        nxt = b.op("add", t, loop.var, loop.step, hint="kt")
        more = b.op("setp", "pred", nxt, loop.hi, cmp="lt", type=t)
        go = b.op("or", "pred", first, more)
        with b.region() as signal:
            b.emit("bar", (), (other, count), arrive=1)
        b.add(If(go, signal.block, None, span=loop.span))
    body[commit + 1 : commit + 1] = arrive.block.items
    body[fence:fence] = wait.block.items
    with b.region() as before:
        second = b.op("setp", "pred", wg, Imm(1, "u32"), cmp="eq", type="u32")
        if isinstance(loop.lo, Imm) and isinstance(loop.hi, Imm):
            go = second if int(loop.lo.value) < int(loop.hi.value) else None
        else:  # a register first, as setp takes it
            x, y, cmp = (loop.lo, loop.hi, "lt") if isinstance(loop.hi, Imm) else (
                loop.hi, loop.lo, "gt")  # fmt: skip
            go = b.op("and", "pred", second, b.op("setp", "pred", x, y, cmp=cmp, type=t))
        with b.region() as signal:
            b.emit("bar", (), (Imm(FIRST, "u32"), count), arrive=1)
        if go is not None:
            b.add(If(go, signal.block, None, span=loop.span))
    items[at] = lir.For(loop.var, loop.lo, loop.hi, loop.step, lir.Block(tuple(body)),
                        span=loop.span)  # fmt: skip
    items[at:at] = before.block.items
    log.debug("`%s`: the two consumer warpgroups take turns at the tensor cores (named "
              "barriers %d and %d)", lw.k.name, FIRST, FIRST + 1)  # fmt: skip


__all__ = ["refusal", "take_turns"]
