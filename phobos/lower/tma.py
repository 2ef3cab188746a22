"""A loop's staging as a ring of TMA loads completing on mbarriers (sm_90a): the stages
of wgmma's operand tiles are written by the tensor-memory accelerator, one thread
issuing a box a tile (a 128-byte panel's box where the rows are wider), in the tiles'
canonical swizzled layouts, with zeros past the tensor's edges.

`placement` marks a ring tile `tma` when it qualifies (`_Planner.tma_refusal`) and gives
the kernel an mbarrier a stage. The loop

    for kt in range(lo, hi, T) { var a = A[.., kt :+ T]; var b = ...; acc += dot(a, b) }

lowers, with S stages and a lag L, to

    thread 0: init full[0 .. S-1] to one arrival; fence.mbarrier_init; bar.sync
    thread 0: for j in 0 .. S-L-1 where lo + j T < hi: expect_tx full[j]; the turn's boxes
    for kt ... {
      bar.sync                                 // every warpgroup is done with stage t-L
      thread 0: if kt + (S-L) T < hi: expect_tx full[t+S-L]; that turn's boxes into it
      wait full[t] at the parity of the turn's pass over the ring
      acc += dot(a, b)                         // wgmma on stage t; commit; wait L-1
    }
    wgmma wait 0                               // (when L is 2)

With a producer warpgroup (`Plan.specialized`, under `PHOBOS_SPECIALIZE=1`: the ring's
loop a statement of the kernel's body, room for 128 more threads; on the H200 it
measured slower than thread 0's loads, benchmarks/NOTES.md), the CTA has 128 threads past the kernel's
own, and the loop becomes

    if tid < T {                                 // the consumers: the kernel's threads
      for kt ... {
        wait full[t]; acc += dot(a, b)           // wgmma; commit; wait L-1
        thread 0 of each warpgroup: arrive empty[t-L+1]   // its groups are done with it
      }
      wgmma wait 0
    } else {                                     // the producer warpgroup
      thread T: for kt ... { wait empty[t] (a pass behind); expect_tx full[t]; boxes }
    }

so no consumer waits at a barrier for another: a warpgroup waits only for its own
turn's bytes. Every other statement of the kernel runs in the consumers alone (their
barriers are named barrier 1 counting T), the scalar `let`s in every thread. Where the
CTAs walk the grid's blocks (`phobos.lower.walk`), the two arms are two walks over the
same blocks that never join: the consumers' holds the epilogue too and frees the last
turn's stage after the loop, the producer's issues the next block's boxes while the
consumers store this one, and `setmaxnreg` (`rebalanced`) moves registers from the
producer warpgroup to the consumers for the rest of the kernel.

A wgmma reads shared memory through the async proxy, as TMA writes it, so a product on
the ring's stages needs no proxy fence. When the loop body is only the staging and
`+=` products on wgmma, the lag is 2: each product leaves its wgmma group in flight
(`wait 1`) through the next turn's barrier, so the tensor cores never drain at a turn's
edge, and the stage refilled at a turn's top is the one two turns back. Otherwise the
lag is 1 and each product waits for its own group.

    >>> TmaRing.__name__
    'TmaRing'
"""

from __future__ import annotations

import logging

from phobos.lower import scalars
from phobos.lower.hirwalk import walk
from phobos.lower.lir import Break, For, If, Imm, Loop, TensorMap
from phobos.lower.swizzle import LINE
from phobos.lower.types import BYTES, elem_of
from phobos.lower.words import pack, unpack
from phobos.sema import hir

log = logging.getLogger("phobos.lower")
MODES = {128: "128B", 64: "64B", 32: "32B"}  # a row's bytes -> the swizzle it is stored in
# The registers a producer warpgroup keeps (`setmaxnreg.dec`) where the CTAs walk the
# grid's blocks: its one issuing thread needs few; the consumers take the rest.
PRODUCER_REGS = 40
CONSUMER_MAX = 240  # past this the consumers' arms gain nothing (ptxas's 255, in eights)


def rebalanced(consumers: int) -> tuple[int, int] | None:
    """(the producer's registers, each consumer thread's) for `consumers` consumer
    warpgroups beside one producer warpgroup, within the SM's 65,536; None where an even
    split already gives the consumers as many (one consumer warpgroup: 255 each).

    >>> rebalanced(2), rebalanced(1)
    ((40, 232), None)
    """
    share = (65536 // 128 - PRODUCER_REGS) // consumers // 8 * 8
    even = 65536 // (128 * (consumers + 1)) // 8 * 8
    regs = min(CONSUMER_MAX, share)
    return (PRODUCER_REGS, regs) if regs > min(even, CONSUMER_MAX) else None


def staged_by_tma(lw, loop: hir.For) -> bool:
    """Whether `loop`'s staging runs as a TMA ring (so its last turn needs no masked
    copy of its own: TMA reads zeros past the tensor's edges)."""
    return bool(TmaRing(lw, loop, None, 1))


class TmaRing:
    """The TMA ring of one loop: its staged tiles, their tensor maps, the turn's stage."""

    def __init__(self, lw, loop: hir.For, hi, step: int):
        self.lw = lw
        self.loop = loop
        self.hi = hi
        self.step = step
        self.staged = []  # (statement, tile)
        for st in loop.body.stmts:
            tile = lw.tiles.get(getattr(st, "sym", None))
            if isinstance(st, hir.VarDecl) and tile is not None and tile.stages >= 2 and tile.tma:
                self.staged.append((st, tile))
        mine = {id(st) for st, _ in self.staged}
        self.lag = 2 if all(id(st) in mine or self._summed(st) for st in loop.body.stmts) else 1
        # The mbarriers are initialised once, for a loop run once: not inside another loop
        # (but for the loop of the blocks a CTA walks, which carries the ring's phases).
        walked = lw.walk is not None and lw.walk.loop is loop
        once = not lw.tracker.loops or walked
        self.ok = bool(self.staged) and lw.plan.mbarriers is not None and once
        self.fenced: set[str] = set()  # buffers fenced once before the loop (`setup`)
        self.cluster = None  # the walk's pairing (`phobos.lower.cluster`), set before `setup`

    def __bool__(self) -> bool:
        return self.ok

    def _summed(self, st) -> bool:
        """Whether `st` is `acc += dot(..)` on wgmma, which may stay in flight a turn."""
        v = getattr(st, "value", None)
        return (
            isinstance(st, hir.Assign)
            and st.op == "+="
            and isinstance(v, hir.Builtin)
            and v.name in ("dot", "dot_t")
            and self.lw.plan.paths.get(v.label, "").startswith("wgmma")
        )

    @property
    def stages(self) -> int:
        return self.staged[0][1].stages

    # -- around the loop -----------------------------------------------------

    def prologue(self, lo) -> None:
        """The maps, the mbarriers, and the first S-L turns' boxes."""
        self.setup()
        self.prime(lo, self.hi)
        self.enter(lo)

    def setup(self) -> None:
        """The tensor maps, the mbarriers initialised (thread 0) before any thread waits,
        and the ring's slot and phase registers: once a kernel, before the loop (before
        the first block, where the CTAs walk the grid: `phobos.lower.walk`)."""
        lw, b = self.lw, self.lw.b
        self.maps = [self._map(st, tile) for st, tile in self.staged]
        tid = lw.sreg("tid.x")
        self.leader = b.once(("tma.leader",), lambda: b.op("setp", "pred", tid, Imm(0, "u32"),
                                                          cmp="eq", type="u32"))  # fmt: skip
        self.specialized = lw.specialized
        bars = lw.plan.mbarriers.offset
        groups = lw.threads // 128  # consumer warpgroups: each frees a stage once
        if lw.rings:
            # A ring after another (causal attention's diagonal loop after its full tiles)
            # takes the same mbarriers and stages: every thread done with the last one
            # first, past its waits and its products' reads, or thread 0's init and
            # boxes would land under a warp still in that ring's last turn.
            lw.tracker.barrier(force=True, whole=self.specialized, cluster=bool(self.cluster))
        lw.rings += 1
        with b.region() as init:
            for s in range(self.stages):
                b.emit("mbarrier_init", (), (b.copy(Imm(bars + 8 * s, "u32"), "u32", hint="mb"),
                                             Imm(1, "u32")))  # fmt: skip
                if self.specialized:
                    empty = b.copy(Imm(bars + 8 * (self.stages + s), "u32"), "u32", hint="mb")
                    b.emit("mbarrier_init", (), (empty, Imm(groups, "u32")))
            b.emit("fence_mbarrier_init")
        b.add(If(self.leader, init.block, None, span=b.span))
        # The loop's other wgmma operands (attention's `q`), written before it through
        # the generic proxy: fenced for the async one once here, under the barrier below,
        # not each turn before their products (`wgmma.product`).
        self.fenced = self._invariant_operands()
        if self.fenced:
            b.emit("fence", space="shared", proxy="async")
        # The inits, before any thread waits (the producer's threads too; in a cluster,
        # before the peer's boxes complete on them: the fence released them already).
        lw.tracker.barrier(force=True, whole=self.specialized, cluster=bool(self.cluster),
                           relaxed=True)  # fmt: skip
        self.slot = b.copy(Imm(0, "u32"), "u32", hint="slot")
        self.phase = b.copy(Imm(0, "u32"), "u32", hint="phase")

    def prime(self, lo, hi, carried: bool = False) -> None:
        """Thread 0 issues the boxes of the loop's first S-L turns (those below `hi`),
        from `lo`: into stages 0.. (or, `carried`, into the stages from the ring's
        slot on, where an earlier run of the loop left it). With a producer warpgroup
        its own loop issues them."""
        if self.specialized:
            return
        b = self.lw.b
        et = elem_of(self.loop.var.type)
        for j in range(self.stages - self.lag):
            at = scalars.binary(b, "+", lo, Imm(j * self.step, lo.type), et) if j else lo
            inside = scalars.materialize(b, scalars.binary(b, "<", at, hi, et), "bool")
            with b.region() as body:
                self._issue(at, self._ahead(j) if carried else Imm(j, "u32"))
            b.add(If(inside, body.block, None, span=b.span))

    def enter(self, lo) -> None:
        """The loop's turns about to be lowered from `lo`: products on the ring's stages
        need no proxy fence, and may leave a group in flight."""
        lw = self.lw
        self.lo = lo
        lw.wgmma_pending = self.lag - 1
        lw.async_written = {tile.buffer.name for _, tile in self.staged} | self.fenced
        # An f16 accumulator's b32 pairs stay wgmma's through the loop, a group in flight
        # from one turn into the next: packed once here, unpacked after the last wait.
        self.words = []
        if self.lag == 2:
            for st in self.loop.body.stmts:
                tile = lw.tiles.get(getattr(getattr(st, "target", None), "sym", None))
                # (an accumulator summed twice a turn is packed once)
                if (self._summed(st) and tile is not None and tile.elem == "f16"
                        and all(t is not tile for t in self.words)):  # fmt: skip
                    tile.words = pack(lw.b, [r for group in tile.regs for r in group])
                    self.words.append(tile)
        for _, tile in self.staged:
            log.debug("`%s`: `%s` staged by a %d-stage TMA ring (%d bytes a stage), wgmma "
                      "%s", lw.k.name, tile.sym.name, self.stages, tile.nbytes,
                      "kept in flight a turn" if self.lag == 2 else "waited for each turn")  # fmt: skip

    def _ahead(self, j: int):
        """The ring's slot `j` turns past the current one."""
        b = self.lw.b
        if not j:
            return self.slot
        moved = b.op("add", "u32", self.slot, Imm(j, "u32"), hint="slot")
        wraps = b.op("setp", "pred", moved, Imm(self.stages, "u32"), cmp="ge", type="u32")
        back = b.op("sub", "u32", moved, Imm(self.stages, "u32"), hint="slot")
        return scalars.select(b, wraps, back, moved, "u32")

    def top(self) -> None:
        """A turn's start: the barrier freeing the stage L turns back, its refill S-L turns
        ahead, then the wait for this turn's boxes (with a producer warpgroup, the wait
        alone)."""
        if not self.specialized:
            # In a cluster the stage is refilled by both CTAs: free in both. What the
            # barrier orders is the peer's TMA writes after wgmma reads a wgmma_wait has
            # retired, so its arrive is relaxed: a releasing one waits for the group
            # still in flight, draining the tensor cores every turn (benchmarks/NOTES.md
            # run 48).
            self.lw.tracker.barrier(force=True, cluster=bool(self.cluster), relaxed=True)
            self._refill()
        self._wait(self._bar(self.slot), self.phase)
        for _, tile in self.staged:
            tile.base = self._stage(tile, self.slot)

    def _refill(self) -> None:
        """Thread 0's boxes of the turn S-L ahead, into the stage the barrier just freed."""
        lw, b = self.lw, self.lw.b
        var = lw.env[self.loop.var]
        et = elem_of(self.loop.var.type)
        ahead = self.stages - self.lag
        nxt = scalars.binary(b, "+", var, Imm(ahead * self.step, var.type), et) if ahead else var
        more = scalars.materialize(b, scalars.binary(b, "<", nxt, self.hi, et), "bool")
        with b.region() as body:
            self._issue(nxt, self._ahead(ahead))
        b.add(If(more, body.block, None, span=b.span))

    def _wait(self, bar, parity) -> None:
        """Spin until the phase of `parity` of the mbarrier at `bar` has completed."""
        b = self.lw.b
        with b.region() as wait:
            ok = b.reg("pred", "ok")
            b.emit("mbarrier_try_wait_parity", (ok,), (bar, parity))
            b.add(Break(ok))
        b.add(Loop(wait.block, span=b.span))

    def bottom(self) -> None:
        """A turn's end: with a producer warpgroup, the stage whose wgmma group has
        retired freed (one arrival a consumer warpgroup); the next slot, the phase
        flipped where the ring wraps."""
        if self.specialized:
            self._free()
        self._advance(self.slot, self.phase)

    def _advance(self, slot, phase) -> None:
        b = self.lw.b
        last = b.op("setp", "pred", slot, Imm(self.stages - 1, "u32"), cmp="eq", type="u32")
        nxt = b.op("add", "u32", slot, Imm(1, "u32"), hint="slot")
        b.mov(slot, scalars.select(b, last, Imm(0, "u32"), nxt, "u32"), "u32")
        flipped = b.op("xor", "b32", phase, Imm(1, "u32"), dest_type="u32")
        b.mov(phase, scalars.select(b, last, flipped, phase, "u32"), "u32")

    def _free(self) -> None:
        """Thread 0 of each consumer warpgroup arrives on the `empty` mbarrier of the
        stage its wgmma groups no longer read: this turn's (lag 1), or the last turn's
        (lag 2: this turn's group is still in flight; the first turn has none before)."""
        lw, b = self.lw, self.lw.b
        lane0 = self._lane0()
        slot = self.slot
        cond = lane0
        if self.lag == 2:
            slot = self._before(slot)
            var = lw.env[self.loop.var]
            et = elem_of(self.loop.var.type)
            later = scalars.materialize(b, scalars.binary(b, ">", var, self.lo, et), "bool")
            cond = b.op("and", "pred", lane0, later)
        with b.region() as arrive:
            b.emit("mbarrier_arrive", (), (self._bar(slot, empty=True),))
        b.add(If(cond, arrive.block, None, span=b.span))

    def after(self) -> None:
        """After the loop: the last turn's wgmma group, left in flight, waited for; with
        a producer warpgroup, the loop and that wait become the consumers' arm of an
        `if` whose other arm is the producer's loop."""
        b = self.lw.b
        if not self.specialized:
            if self.lag == 2:
                b.emit("wgmma_wait", pending=0)
                self._unpack()
            return
        # The consumers' arm holds the loop (`BlockWalk.specialized`,
        # `Lowering.specialized_body`), the producer's its boxes.
        if self.lag == 2:
            b.emit("wgmma_wait", pending=0)
            self._unpack()
            if self.lw.walk is not None:
                # the last turn's stage freed once its group retires, as the next
                # block's first turn frees none
                self._free_last()

    def _unpack(self) -> None:
        """The f16 accumulators' elements back from their pairs (`enter`)."""
        for tile in self.words:
            unpack(self.lw.b, tile.words, [r for group in tile.regs for r in group])
            tile.words = None

    def _free_last(self) -> None:
        """Thread 0 of each consumer warpgroup frees the stage of the loop's last turn
        (the slot before the ring's), where the loop ran a turn."""
        b = self.lw.b
        et = elem_of(self.loop.var.type)
        ran = scalars.materialize(b, scalars.binary(b, "<", self.lo, self.hi, et), "bool")
        slot = self._before(self.slot)
        with b.region() as arrive:
            b.emit("mbarrier_arrive", (), (self._bar(slot, empty=True),))
        b.add(If(b.op("and", "pred", self._lane0(), ran), arrive.block, None, span=b.span))

    def _before(self, slot):
        """The ring's slot one turn before `slot`."""
        b = self.lw.b
        first = b.op("setp", "pred", slot, Imm(0, "u32"), cmp="eq", type="u32")
        prev = b.op("sub", "u32", slot, Imm(1, "u32"), hint="slot")
        return scalars.select(b, first, Imm(self.stages - 1, "u32"), prev, "u32")

    def _lane0(self):
        """True in thread 0 of each warpgroup."""
        b, tid = self.lw.b, self.lw.sreg("tid.x")
        return b.once(("tma.wg0",), lambda: b.op("setp", "pred", b.op(
            "and", "b32", tid, Imm(127, "u32"), dest_type="u32"), Imm(0, "u32"), cmp="eq",
            type="u32"))  # fmt: skip

    def issuer(self):
        """True in the producer warpgroup's first thread, the one issuing the boxes."""
        lw, b = self.lw, self.lw.b
        return b.op("setp", "pred", lw.sreg("tid.x"), Imm(lw.threads, "u32"), cmp="eq",
                    type="u32")  # fmt: skip

    def producer_slot(self):
        """The producer's own slot and phase registers, from the ring's first stage."""
        b = self.lw.b
        return (b.copy(Imm(0, "u32"), "u32", hint="pslot"),
                b.copy(Imm(0, "u32"), "u32", hint="pphase"))  # fmt: skip

    def produce(self, lo, hi, slot, phase) -> None:
        """The producer's turns from `lo` to `hi`: each waits for its stage's `empty`
        phase, then expects the bytes on `full` and issues the boxes."""
        b = self.lw.b
        var = b.reg(lo.type, self.loop.var.name)
        with b.region() as turn:
            empty = self._bar(slot, empty=True)
            freed = b.op("xor", "b32", phase, Imm(1, "u32"), dest_type="u32")
            self._wait(empty, freed)
            self._issue(var, slot, guard=False)
            self._advance(slot, phase)
        b.add(For(var, lo, hi, Imm(self.step, lo.type), turn.block, span=b.span))

    def _invariant_operands(self) -> set[str]:
        """The shared buffers of the loop's wgmma operands that are not its ring's and that
        nothing in the loop writes, where the CTA runs one block (a walked CTA stages its
        next block's tiles after this point)."""
        lw = self.lw
        if lw.walk is not None:
            return set()
        written = set()
        for n in walk(self.loop.body):
            if isinstance(n, hir.VarDecl):
                written.add(n.sym)
            elif isinstance(n, hir.Assign):
                t = n.target
                while isinstance(t, hir.Slice):
                    t = t.base
                written.add(getattr(t, "sym", None))
        out = set()
        for n in walk(self.loop.body):
            if not (isinstance(n, hir.Builtin) and n.name in ("dot", "dot_t")
                    and lw.plan.paths.get(n.label, "").startswith("wgmma")):  # fmt: skip
                continue
            for a in n.args:
                tile = lw.tiles.get(getattr(a, "sym", None))
                if (tile is not None and tile.place == "shared" and tile.stages < 2
                        and a.sym not in written):  # fmt: skip
                    out.add(tile.buffer.name)
        return out

    def close(self) -> None:
        for _, tile in self.staged:
            tile.base = None
        self.lw.wgmma_pending = 0
        self.lw.async_written = set()

    def lower(self, s) -> bool:
        """A ring's staging statement emits nothing where it stands: its stage is ready."""
        return any(st is s for st, _ in self.staged)

    # -- the loads -----------------------------------------------------------

    def _map(self, st, tile) -> tuple[TensorMap, object]:
        """The tensor map `tile`'s boxes are read through, and its address register."""
        row = tile.shape[1] * BYTES[tile.elem]
        inner = min(row, LINE) // BYTES[tile.elem]  # a panel's columns where rows are wider
        box = (tile.shape[0], inner)
        c = self.cluster
        if c is not None and id(st) in c.shared and c.split(tile, box) == "rows":
            box = (tile.shape[0] // c.size, inner)  # each rank's half of a box
        return tensor_map(self.lw, st.value.base.sym, tile.elem, box, MODES[min(row, LINE)])

    def _bar(self, slot, empty: bool = False):
        """The `full` mbarrier of `slot` (or, with a producer warpgroup, its `empty`)."""
        b = self.lw.b
        at = self.lw.plan.mbarriers.offset + (8 * self.stages if empty else 0)
        return b.op("mad", "u32", slot, Imm(8, "u32"), Imm(at, "u32"), hint="mb")

    def _stage(self, tile, slot):
        b = self.lw.b
        return b.op("mad", "u32", slot, Imm(tile.nbytes, "u32"), Imm(tile.buffer.offset, "u32"),
                    hint="stage")  # fmt: skip

    def _issue(self, at, slot, guard: bool = True) -> None:
        """Thread 0 (where `guard`; else the thread running it) expects the turn's bytes
        on `slot`'s mbarrier and issues its boxes, the loop variable at `at`, into
        `slot`'s stage."""
        lw, b = self.lw, self.lw.b
        saved = lw.env.get(self.loop.var)
        lw.env[self.loop.var] = at
        try:
            with b.region() as body:
                bar = self._bar(slot)
                total = sum(tile.nbytes for _, tile in self.staged)
                b.emit("mbarrier_arrive_expect_tx", (), (bar, Imm(total, "u32")))
                for (st, tile), (m, addr) in zip(self.staged, self.maps, strict=True):
                    row, col = (coord(self.lw, sub.start) for sub in st.value.subs)
                    stage = self._stage(tile, slot)
                    if self.cluster is not None and id(st) in self.cluster.shared:
                        self.cluster.issue(stage, st, tile, m, addr, row, col, bar)
                        continue
                    box_bytes = m.box[0] * m.box[1] * BYTES[m.elem]
                    for p in range(tile.shape[1] // m.box[1]):
                        dst = stage
                        if p:
                            dst = b.op("add", "u32", stage, Imm(p * box_bytes, "u32"), hint="s")
                        x = col if not p else scalars.materialize(
                            b, scalars.binary(b, "+", col, Imm(p * m.box[1], "s32"), "i32"), "i32")  # fmt: skip
                        b.emit("tma_load", (), (dst, addr, x, row, bar))
            if guard:
                b.add(If(self.leader, body.block, None, span=b.span))
            else:
                for item in body.block.items:
                    b.add(item)
        finally:
            lw.env[self.loop.var] = saved


def tensor_map(lw, tensor: hir.Sym, elem: str, box: tuple[int, int], swizzle: str):
    """A new tensor map of the 2-D tensor parameter `tensor` (`Kernel.maps`), its boxes
    `box` in the `swizzle` mode, and the register holding its address (`tmap_addr`, in
    the prologue): (map, register)."""
    b = lw.b
    dims = tuple(d if isinstance(d, int) else d.name for d in tensor.type.dims)
    m = TensorMap(f"{tensor.name}_tmap{len(lw.maps)}", tensor.name, elem, dims, box, swizzle)
    lw.maps.append(m)
    with b.at_prologue():
        addr = b.reg("u64", "tmap")
        b.emit("tmap_addr", (addr,), (), map=m.name)
    return m, addr


def coord(lw, e):
    """A slice start as an s32 box coordinate (a register or an immediate)."""
    v = lw.value(e)
    if isinstance(v, Imm):
        return Imm(int(v.value), "s32")
    return scalars.materialize(lw.b, v, "i32")


__all__ = ["TmaRing", "coord", "tensor_map"]
