"""Two consumer warpgroups taking turns at the tensor cores (FA3's ping-pong), where a
producer warpgroup feeds a TMA ring (`Lowering.specialized_body`).

In attention's loop each warpgroup issues its two products (the scores, then `p v`) with
its softmax between them. Run freely, both warpgroups reach their products at about the
same time and their softmaxes too, so the tensor cores idle while both exponentiate. Two
named barriers make them take turns at each product group: warpgroup w waits at barrier
2 + w before a group's first wgmma and, once the group is committed (issued, not yet
waited for), arrives at the other's, 3 - w. Each barrier counts 256 threads, the 128
waiting and the 128 arriving. The products then go to the tensor cores in the order
scores 0, scores 1, `p v` 0, `p v` 1: warpgroup 0's softmax runs under warpgroup 1's
scores, warpgroup 1's under warpgroup 0's `p v`.

    warpgroup 1, before the loop: arrive at barrier 2      (where the loop runs a turn)
    for kt ... {
      wait for the turn's stage
      bar.sync 2 + w, 256;  s = q kᵀ (issued);  bar.arrive 3 - w, 256;  wait for s
      softmax
      bar.sync 2 + w, 256;  acc += p v (issued);  bar.arrive 3 - w, 256
                            (not warpgroup 1's last turn: nobody waits for it)
      ...
    }

With g product groups a turn and n turns, warpgroup 0 waits g n times at barrier 2: once
for the arrival before the loop and g n - 1 times for warpgroup 1's groups but its last;
warpgroup 1 waits g n times at barrier 3 for warpgroup 0's g n groups. (The softmax was
once inside one turn of both products: the other warpgroup then waited for it, and the
form ran at 0.56-0.72x cuDNN; benchmarks/NOTES.md, run 67. A turn each group: 0.80x at
D 64 and 0.82x at D 128, still below the same form run free, 0.85x at D 128: one product
hides a softmax only as long as itself; run 68.) A loop body with a CTA
barrier of its own (which both warpgroups must reach in the same turn) or fewer than two
product groups is left as it is, and so is every kernel under `PHOBOS_PINGPONG=0`;
PHOBOS_LOG=debug says why. (The threads interpreter runs such a loop as a strand a
warpgroup: `threads.Cta.for_`.)

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
    t = loop.var.type
    with b.region() as wait:
        b.emit("bar", (), (mine, count))
    with b.region() as arrive:
        b.emit("bar", (), (other, count), arrive=1)
    with b.region() as last_arrive:
        # warpgroup 0 always; warpgroup 1 but in its last turn
        nxt = b.op("add", t, loop.var, loop.step, hint="kt")
        more = b.op("setp", "pred", nxt, loop.hi, cmp="lt", type=t)
        go = b.op("or", "pred", first, more)
        b.add(If(go, arrive.block, None, span=loop.span))
    groups = _groups(body)
    for n, (fence, commit) in enumerate(reversed(groups)):  # from the back: indices hold
        body[commit + 1 : commit + 1] = (last_arrive if n == 0 else arrive).block.items
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
    log.debug("`%s`: the two consumer warpgroups take turns at the tensor cores, %d "
              "product groups a turn (named barriers %d and %d)", lw.k.name, len(groups),
              FIRST, FIRST + 1)  # fmt: skip


def _groups(body: list) -> list[tuple[int, int]]:
    """The (fence, commit) indices of each product group at the top of a loop's body."""
    groups, fence = [], None
    for i, item in enumerate(body):
        op = item.op if isinstance(item, lir.Inst) else None
        if op == "wgmma_fence" and fence is None:
            fence = i
        elif op == "wgmma_commit" and fence is not None:
            groups.append((fence, i))
            fence = None
    return groups


__all__ = ["refusal", "take_turns"]
