"""A loop's staging as a two-stage cp.async ring: the next turn's tiles copy straight
into a second shared buffer while this turn computes on the first.

`placement` gives each qualifying staging tile (`_Planner.ring_candidates`) two stages
of its bytes when they fit the shared memory. The loop

    for kt in range(lo, hi, S) { var a = A[.., kt :+ S]; ...; acc += dot(a, b) }

then lowers to

    cp.async a's stage 0 <- A[.., lo :+ S]   (where lo < hi); commit
    for kt ... {
      cp.async.wait_group 0; bar.sync         // this turn's bytes landed, for every thread;
                                              // every thread is done with the last turn's
      if kt + S < hi { cp.async a's other stage <- A[.., kt + S :+ S] }; commit
      ...                                     // the statements read this turn's stage
      swap the stages
    }

One barrier a turn, no registers held for the copy, and the copy in flight during the
turn. Each copy moves one vector of the statement's sweep (4, 8 or 16 bytes); where the
vector lies past the tensor its source size is 0, so the stage reads zeros there, as
SPEC.md's "past the end reads 0" says. The copy of a vector the sweep does not have (a
group the threads do not fill) is not issued.

    >>> Ring.__name__
    'Ring'
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from phobos.lower import scalars
from phobos.lower.errors import NotLowered
from phobos.lower.layout import Sweep
from phobos.lower.lir import If, Imm, Reg
from phobos.lower.prefetch import _expand
from phobos.lower.sweep import UNROLL, State, Sweeper, _ekey, points
from phobos.lower.types import BYTES, elem_of
from phobos.sema import hir

log = logging.getLogger("phobos.lower")


@dataclass
class Staged:
    stmt: hir.VarDecl
    tile: object
    vec: int
    stage: Reg | None = None  # this turn's stage (a shared address)


class Ring:
    """The ring of one loop: its staged statements and the registers naming the stages."""

    def __init__(self, lw, loop: hir.For, hi, step: int):
        self.lw = lw
        self.loop = loop
        self.hi = hi
        self.step = step
        self.staged: list[Staged] = []
        # The body's `let` views, read through their slices: a copy for the next turn is
        # issued before the body binds them again.
        self.views = {
            st.sym: st.value
            for st in loop.body.stmts
            if isinstance(st, hir.Let) and isinstance(st.sym.type, hir.TensorT)
        }
        for st in loop.body.stmts:
            tile = lw.tiles.get(getattr(st, "sym", None))
            if isinstance(st, hir.VarDecl) and tile is not None and tile.stages == 2:
                vec = lw.plan.vec.get(st.label, 1)
                if Sweep(tile.shape, lw.threads, vec).groups <= UNROLL:
                    self.staged.append(Staged(st, tile, vec))

    def __bool__(self) -> bool:
        return bool(self.staged)

    # -- around the loop -----------------------------------------------------

    def prologue(self, lo) -> None:
        """Stage 0 of every ring tile gets the first turn's copies."""
        lw, b = self.lw, self.lw.b
        et = elem_of(self.loop.var.type)
        first = scalars.materialize(b, scalars.binary(b, "<", lo, self.hi, et), "bool")
        for st in self.staged:
            st.stage = b.copy(Imm(st.tile.buffer.offset, "u32"), "u32", hint="stage")
        with b.region() as body:
            for st in self.staged:
                self._copy(st, lo, Imm(st.tile.buffer.offset, "u32"))
        b.add(If(first, body.block, None, span=b.span))
        b.emit("cp_async_commit")
        for st in self.staged:
            log.debug("`%s`: `%s` staged by a two-stage cp.async ring (%d bytes a stage)",
                      lw.k.name, st.tile.sym.name, st.tile.nbytes)  # fmt: skip

    def top(self) -> None:
        """A turn's start: wait for its bytes, meet, start the next turn's copies."""
        lw, b = self.lw, self.lw.b
        b.emit("cp_async_wait", pending=0)
        lw.tracker.barrier()
        var = lw.env[self.loop.var]
        et = elem_of(self.loop.var.type)
        nxt = scalars.binary(b, "+", var, Imm(self.step, var.type), et)
        more = scalars.materialize(b, scalars.binary(b, "<", nxt, self.hi, et), "bool")
        with b.region() as body:
            for st in self.staged:
                self._copy(st, nxt, self._other(st))
        b.add(If(more, body.block, None, span=b.span))
        b.emit("cp_async_commit")
        for st in self.staged:
            st.tile.base = st.stage

    def bottom(self) -> None:
        """A turn's end: the stages swap."""
        b = self.lw.b
        for st in self.staged:
            b.mov(st.stage, self._other(st), "u32")

    def close(self) -> None:
        for st in self.staged:
            st.tile.base = None

    def lower(self, s) -> bool:
        """A ring's staging statement emits nothing where it stands: its stage is ready."""
        return any(st.stmt is s for st in self.staged)

    # -- the copies ----------------------------------------------------------

    def _other(self, st: Staged) -> Reg:
        """The stage this turn does not read: stage 0 + stage 1 - this one."""
        lo = st.tile.buffer.offset
        both = Imm(2 * lo + st.tile.nbytes, "u32")
        return self.lw.b.op("sub", "u32", both, st.stage, hint="stage")

    def _copy(self, st: Staged, at, dst_base) -> None:
        """cp.async of the statement's slice at loop value `at` into the stage at
        `dst_base`, one vector of its sweep a copy."""
        lw, b = self.lw, self.lw.b
        saved = lw.env.get(self.loop.var)
        lw.env[self.loop.var] = at
        tile = st.tile
        saved_base = tile.base
        tile.base = dst_base if isinstance(dst_base, Reg) else None
        try:
            shape = tile.shape
            value = _expand(st.stmt.value, self.views)
            sw = Sweeper(lw, shape, st.vec)
            sw.prepare(value, shape)
            src = sw.accesses[_ekey(value)]
            dst = tile.access()
            size = st.vec * BYTES[tile.elem]
            for p in points(lw, shape, st.vec, State()):
                whole = type(p)(p.shape, p.coords, p.lanes, None, p.group, p.state, p.layout)
                guard, live = sw.guard(src, whole)
                to = sw.address(dst, whole)
                srcs = [to]
                if not live:
                    srcs += [sw.address(src, whole), Imm(0, "u32")]
                else:
                    srcs.append(sw.address(src, whole))
                    if guard is not None:
                        n = scalars.select(b, guard, Imm(size, "u32"), Imm(0, "u32"), "u32")
                        srcs.append(n)
                b.emit("cp_async", (), tuple(srcs), size=size, guard=p.valid,
                       cache="cg" if size == 16 else "ca")  # fmt: skip
        finally:
            lw.env[self.loop.var] = saved
            tile.base = saved_base


def check_asserted(lw) -> None:
    """`@pipeline` is an assertion (SPEC.md "Attributes"): refuse the variant (E0503,
    at the attribute) when no loop of it was staged a turn ahead."""
    if not getattr(lw.k.attrs, "pipeline", False) or getattr(lw, "pipelined", False):
        return
    span = getattr(lw.k.attrs, "spans", {}).get("pipeline") or lw.k.span
    raise NotLowered(
        "`@pipeline`",
        span,
        code="E0503",
        message="`@pipeline` finds nothing to pipeline: no loop stages its next turn ahead",
        note="a loop qualifies when its bounds are uniform, its step constant, and a turn "
        "stages a tensor slice into a tile only the turn reads (`var a = A[.., kt :+ TK]`); "
        "its stages must fit the shared memory",
        help="remove `@pipeline`, or see why with `PHOBOS_LOG=debug`",
    )
