"""A GEMM kernel's CTAs walking the launch grid's blocks (sm_90a): as many CTAs as the
card holds at once, each running block after block of the grid the launch asked for,
so that one block's epilogue runs while the next block's first boxes are on their way.

A kernel whose body is scalar `let`s and register tiles, one loop staged by a TMA ring
(`phobos.lower.tma`), then statements on registers (the epilogue):

    let pm = ctx.block.x; let pn = ctx.block.y; var acc = 0.0
    for kt in range(lo, hi, T) { var a = A[..]; var b = B[..]; acc += dot(a, b) }
    C[..] = acc

lowers, with its three walk params holding the launch grid's block counts
(`Kernel.walk`; the launcher fills them and runs min(blocks, CTAs the card holds) CTAs,
`phobos.runtime.launch_gpu`), to

    ring set up once (mbarriers, slot, phase)
    n = ctaid.x; thread 0: the first S-L turns of block n
    loop {
      break if n >= blocks
      (x, y, z) = block n in the grouped order        // `Lowering.raster_of`
      lets; acc = 0; the ring's loop                  // its slots and phases carried on
      bar.sync                                         // every product done with the stages
      thread 0: the first S-L turns of block n + nctaid, into the stages from the slot on
      the epilogue
      n += nctaid
    }

`ctx.block` and `ctx.blocks` read the walked block and the launch grid's counts, so
the kernel means what it says. The ring's mbarriers go on counting phases from one
block to the next: the slot and phase registers are the ring's, set once. With a
producer warpgroup (`PHOBOS_SPECIALIZE=1`) the walk is two (`BlockWalk.specialized`).
Kernels with other shared memory, a `return` or `@persistent` are not walked, nor any
under `PHOBOS_WALK=0` (each CTA one block, as before); PHOBOS_LOG=debug says why.

    >>> BlockWalk.__name__
    'BlockWalk'
"""

from __future__ import annotations

import logging
import os

from phobos.lower import tmastore
from phobos.lower.builder import reg_or_imm
from phobos.lower.cluster import asked, cluster_of
from phobos.lower.hirwalk import scalar_only, walk
from phobos.lower.lir import Break, If, Imm, Loop, Param, Reg
from phobos.lower.types import REG, elem_of
from phobos.sema import hir

log = logging.getLogger("phobos.lower")


def walker(lw, body: hir.Block):
    """The walk of `body`'s blocks, or None where the kernel runs a CTA a block."""
    if lw.plan is None or lw.plan.mbarriers is None:
        return None  # not staged by a TMA ring
    at, why = _refusal(lw, body)
    if why is not None:
        log.debug("`%s`: a CTA a block: %s", lw.k.name, why)
        return None
    return BlockWalk(lw, body, at)


def _refusal(lw, body: hir.Block) -> tuple[int, str | None]:
    """(the ring loop's index in `body`, why the kernel is not walked or None)."""
    from phobos.lower.tma import staged_by_tma

    if os.environ.get("PHOBOS_WALK") == "0":
        return -1, "PHOBOS_WALK=0"
    if getattr(lw.k.attrs, "persistent", False):
        return -1, "@persistent"
    if any(isinstance(n, hir.Return) for n in walk(body)):
        return -1, "a `return` would end the CTA's walk"
    stmts = body.stmts
    rings = [i for i, s in enumerate(stmts) if isinstance(s, hir.For) and staged_by_tma(lw, s)]
    if len(rings) != 1:
        return -1, f"{len(rings)} loops staged by TMA rings at the top of the body, not one"
    at = rings[0]
    loop = stmts[at]
    if _step(lw, loop) is None:
        return -1, "the ring's loop steps by a value, not a constant"
    for s in stmts[:at]:
        tile = lw.tiles.get(getattr(s, "sym", None))
        if not (scalar_only(s) or (isinstance(s, hir.VarDecl) and tile is not None
                                    and tile.place != "shared")):  # fmt: skip
            return -1, "a statement before the ring's loop is not a scalar or a register tile"
    ring_bufs = {t.buffer.name for t in lw.tiles.values() if getattr(t, "tma", False)}
    others = [b.name for b in lw.shared if b.name not in ring_bufs and b is not lw.plan.mbarriers]
    if others:
        return -1, f"shared memory beside the ring's (`{others[0]}`)"
    return at, None


def _step(lw, loop: hir.For) -> int | None:
    """The loop's step where it is a positive constant."""
    step = loop.step if isinstance(loop.step, int) else lw.value(loop.step)
    value = getattr(step, "value", step)
    return int(value) if isinstance(value, int) and value > 0 else None


class BlockWalk:
    """The loop over the blocks a CTA runs, around one kernel's body."""

    def __init__(self, lw, body: hir.Block, at: int):
        self.lw = lw
        self.pre = body.stmts[:at]
        self.loop = body.stmts[at]
        self.post = body.stmts[at + 1 :]
        self.xyz = None  # the walked block's index, u32 registers
        b = lw.b
        self.counts = tuple(b.reg("u32", f"blocks_{a}") for a in "xyz")
        self.names = tuple(r.name for r in self.counts)
        lw.params.extend(Param(n, "u32") for n in self.names)
        self.ring = None
        self.cluster = None  # the CTAs' pairing (`phobos.lower.cluster`), or None

    def ctx(self, field: str, axis: str | None) -> Reg:
        """`ctx.block.<axis>` (the walked block) or `ctx.blocks.<axis>` (the launch's)."""
        i = "xyz".index(axis or "x")
        return self.xyz[i] if field == "block" else self.counts[i]

    def lower(self) -> None:
        from phobos.lower.tma import TmaRing

        lw, b = self.lw, self.lw.b
        lw.walk = self
        self.ring = TmaRing(lw, self.loop, None, _step(lw, self.loop))
        if lw.specialized:
            if asked(lw.k) > 1:
                log.debug("`%s`: no clusters: a producer warpgroup feeds the ring", lw.k.name)
            self._grid()
            self.specialized()
            return
        self.cluster = self.ring.cluster = cluster_of(lw, self, self.ring)
        self._grid()
        self.ring.setup()
        first, step = ("clusterid.x", "nclusterid.x") if self.cluster else ("ctaid.x", "nctaid.x")
        n = b.copy(lw.sreg(first), "u32", hint="blk")
        self.prime(n)
        store = len(self.post) == 1 and tmastore.stored_by_tma(lw, self, self.post[0])
        with lw.tracker.loop(None, False):
            with b.region() as turn:
                if store:  # the last block's panels read before its refills, or the end
                    tmastore.drain(lw, self)
                done = b.op("setp", "pred", n, self.total, cmp="ge", type="u32")
                b.add(Break(done))
                self.xyz = self.index(n)
                lw.block(hir.Block(self.pre + (self.loop,)))
                # Every warpgroup's products (in a cluster, the peer's too) are done with
                # the stages the next block's first turns are written into.
                lw.tracker.barrier(force=True, cluster=self.cluster is not None, relaxed=True)
                if store and self.cluster is not None:
                    # The cluster's arrive orders no memory: a CTA barrier orders every
                    # warpgroup's products, and the last block's stores' reads (drained
                    # above), before the epilogue's stmatrix writes into the free stages.
                    lw.tracker.barrier(force=True)
                nxt = b.op("add", "u32", n, lw.sreg(step), hint="blk")
                self.prime(nxt)
                self.epilogue(store)
                b.mov(n, nxt, "u32")
            b.add(Loop(turn.block, span=b.span))
        if self.cluster is not None:
            # No CTA leaves while its peer may still be at a barrier of the cluster.
            lw.tracker.barrier(force=True, cluster=True)
        log.debug("`%s`: its CTAs walk the grid's blocks, the next block's first turns "
                  "issued before the epilogue", lw.k.name)  # fmt: skip

    def _grid(self) -> None:
        """The grid of the blocks walked (with clusters, of cluster blocks: x halved),
        its plane and its count, in the prologue."""
        b = self.lw.b
        nx, ny, nz = self.counts
        with b.at_prologue():
            self.nx = nx
            if self.cluster is not None:
                up = b.op("add", "u32", nx, Imm(self.cluster.size - 1, "u32"), hint="cx")
                self.nx = b.op("div", "u32", up, Imm(self.cluster.size, "u32"), hint="cx")
            self.plane = b.op("mul", "u32", self.nx, ny, hint="plane")
            self.total = b.op("mul", "u32", self.plane, nz, hint="blocks")

    def specialized(self) -> None:
        """The walk with a producer warpgroup (`Plan.specialized`): the kernel's threads
        walk the blocks running the lets, the ring's loop and the epilogue, freeing each
        stage on its `empty` mbarrier; the producer warpgroup's first thread walks the
        same blocks issuing their boxes, a stage as soon as it is free, the next block's
        while the consumers' epilogue runs. Neither arm joins the other again, so
        `setmaxnreg` moves registers from the producer to the consumers for good."""
        from phobos.lower.tma import rebalanced

        lw, b = self.lw, self.lw.b
        ring = self.ring
        ring.setup()
        regs = rebalanced(lw.threads // 128)
        with b.region() as consumer:
            if regs is not None:
                b.emit("setmaxnreg", action="inc", regs=regs[1])
            self._each_block(self._consume)
        with b.region() as producer:
            if regs is not None:
                b.emit("setmaxnreg", action="dec", regs=regs[0])
            with b.region() as issuer:
                slot, phase = ring.producer_slot()
                self._each_block(lambda: self._produce(slot, phase))
            b.add(If(ring.issuer(), issuer.block, None, span=b.span))
        b.add(If(lw.consumers(), consumer.block, producer.block, span=b.span))
        log.debug("`%s`: its CTAs walk the grid's blocks, a producer warpgroup issuing the "
                  "boxes%s", lw.k.name,
                  f", setmaxnreg {regs[0]}/{regs[1]}" if regs else "")  # fmt: skip

    def _each_block(self, body) -> None:
        """A loop over this CTA's blocks of the grid, `body()` lowering one."""
        lw, b = self.lw, self.lw.b
        n = b.copy(lw.sreg("ctaid.x"), "u32", hint="blk")
        with lw.tracker.loop(None, False):
            with b.region() as turn:
                b.add(Break(b.op("setp", "pred", n, self.total, cmp="ge", type="u32")))
                self.xyz = self.index(n)
                body()
                b.mov(n, b.op("add", "u32", n, lw.sreg("nctaid.x"), hint="blk"), "u32")
            b.add(Loop(turn.block, span=b.span))

    def _consume(self) -> None:
        """The consumers' part of a block: its lets, the ring's loop, the epilogue. The
        only shared memory of a walked kernel is the ring's (`_refusal`), and its
        mbarriers order every access of it across blocks: no CTA barrier."""
        self.lw.tracker.ordered()
        self.lw.block(hir.Block(self.pre + (self.loop,)))
        self.epilogue(False)

    def _produce(self, slot, phase) -> None:
        """The producer's turns of the current block: its scalar `let`s, then the ring's
        loop issuing boxes (`TmaRing.produce`), the lets forgotten after."""
        lo, hi, restore = self._bounds()
        self.ring.produce(lo, hi, slot, phase)
        restore()

    def _bounds(self):
        """The ring loop's bounds for the current block: the scalar `let`s before the loop
        evaluated for it first; and the function that forgets them again."""
        lw, b = self.lw, self.lw.b
        saved = dict(lw.env)
        for s in self.pre:
            if scalar_only(s):
                lw.stmt(s)
        t = REG[elem_of(self.loop.var.type)]
        lo, hi = (reg_or_imm(b, lw.value(e), t) for e in (self.loop.lo, self.loop.hi))

        def restore() -> None:
            lw.env.clear()
            lw.env.update(saved)

        return lo, hi, restore

    def epilogue(self, store: bool) -> None:
        """The statements after the loop, for a block of the grid: in a cluster, not for
        the rank past the grid's x edge (`phobos.lower.cluster`)."""
        lw, b = self.lw, self.lw.b
        if self.cluster is None:
            self._post(store)
            return
        with b.region() as body, lw.tracker.branch():
            self._post(store)
        inside = b.op("setp", "pred", self.xyz[0], self.counts[0], cmp="lt", type="u32")
        b.add(If(inside, body.block, None, span=b.span))

    def _post(self, store: bool) -> None:
        if store:
            tmastore.lower(self.lw, self, self.post[0])
        else:
            self.lw.block(hir.Block(self.post))

    def index(self, n: Reg) -> tuple[Reg, Reg, Reg]:
        """Block `n`'s (x, y, z): x and y in the grouped order where the lowering takes
        it (`Lowering.rasterized`), else x fastest. With clusters `n` counts cluster
        blocks, and the CTA's rank picks its block of the cluster's along x."""
        lw, b = self.lw, self.lw.b
        nx, ny = self.nx, self.counts[1]
        z = b.op("div", "u32", n, self.plane, hint="bz")
        within = b.op("rem", "u32", n, self.plane, hint="pid")
        if lw.rasterized:
            x, y = lw.raster_of(within, nx, ny)
        else:
            x = b.op("rem", "u32", within, nx, hint="bx")
            y = b.op("div", "u32", within, nx, hint="by")
        if self.cluster is not None:
            c = self.cluster
            x = b.op("mad", "u32", x, Imm(c.size, "u32"), c.rank, hint="bx")
        return x, y, z

    def prime(self, n: Reg) -> None:
        """Where block `n` exists, thread 0 issues its loop's first turns: the scalar
        `let`s before the loop evaluated for block `n`, then forgotten."""
        b = self.lw.b

        more = b.op("setp", "pred", n, self.total, cmp="lt", type="u32")
        saved_xyz = self.xyz
        with b.region() as body:
            self.xyz = self.index(n)
            lo, hi, restore = self._bounds()
            self.ring.prime(lo, hi, carried=True)
        restore()
        self.xyz = saved_xyz
        b.add(If(more, body.block, None, span=b.span))


__all__ = ["BlockWalk", "walker"]
