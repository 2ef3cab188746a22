"""A loop's staging as a ring of cp.async stages: the next turns' tiles copy straight into
stages of their own while this turn computes on the first.

`placement` gives each qualifying staging tile (`_Planner.ring_candidates`) S stages of
its bytes (2 to `placement.MAX_STAGES`, as many as fit the shared memory). The loop

    for kt in range(lo, hi, T) { var a = A[.., kt :+ T]; ...; acc += dot(a, b) }

then lowers to

    for j in 0 .. S-2: cp.async a's stage j <- A[.., lo + j T :+ T] (where in range); commit
    for kt ... {
      cp.async.wait_group S-2; bar.sync       // this turn's bytes landed, for every thread;
                                              // every thread is done with the last turn's
      if kt + (S-1) T < hi { cp.async stage (this-1) <- A[.., kt + (S-1) T :+ T] }; commit
      ...                                     // the statements read this turn's stage
      the stages turn one on
    }

One barrier a turn, no registers held for the copies, S-1 turns of copies in flight. The
wait and the barrier are the tracker's (`phobos.lower.barriers`): the ring announces the
read of this turn's stage, and the tracker, which knows which groups of copies write
which stage, waits for just that group. Each copy moves one vector of the statement's
sweep (4, 8 or 16 bytes); where the vector lies past the tensor its source size is 0, so
the stage reads zeros there, as SPEC.md's "past the end reads 0" says. The copy of a
vector the sweep does not have (a group the threads do not fill) is not issued.

    >>> Ring.__name__
    'Ring'
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from phobos.lower import scalars
from phobos.lower.barriers import Slot
from phobos.lower.errors import NotLowered
from phobos.lower.lir import If, Imm, Reg
from phobos.lower.memory import Halves
from phobos.lower.placement import copy_unrolls
from phobos.lower.prefetch import _expand
from phobos.lower.sweep import State, Sweeper, _ekey, points
from phobos.lower.types import BYTES, elem_of
from phobos.lower.widths import proven
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
            if isinstance(st, hir.VarDecl) and tile is not None and tile.stages >= 2:
                # A copy cannot be versioned on a dynamic row pitch as a sweep is: it
                # moves what the alignment proves.
                vec = proven(lw, _expand(st.value, self.views), lw.plan.vec.get(st.label, 1))
                if copy_unrolls(tile.shape, lw.threads, vec):
                    self.staged.append(Staged(st, tile, vec))

    def __bool__(self) -> bool:
        return bool(self.staged)

    # -- around the loop -----------------------------------------------------

    @property
    def stages(self) -> int:
        return self.staged[0].tile.stages

    def prologue(self, lo) -> None:
        """Stages 0 .. S-2 get the first S-1 turns' copies, a group each."""
        lw, b = self.lw, self.lw.b
        et = elem_of(self.loop.var.type)
        for st in self.staged:
            base = st.tile.buffer.offset
            st.stage = b.copy(Imm(base, "u32"), "u32", hint="stage")
        for j in range(self.stages - 1):
            at = scalars.binary(b, "+", lo, Imm(j * self.step, lo.type), et) if j else lo
            inside = scalars.materialize(b, scalars.binary(b, "<", at, self.hi, et), "bool")
            with b.region() as body:
                for st in self.staged:
                    at_j = (
                        st.stage
                        if j == 0
                        else Imm(st.tile.buffer.offset + j * st.tile.nbytes, "u32")
                    )
                    self._copy(st, at, at_j, Slot(st.tile.buffer, j))
            b.add(If(inside, body.block, None, span=b.span))
            lw.tracker.commit()
        for st in self.staged:
            lw.tracker.rings[st.tile.buffer.name] = self.stages
            log.debug("`%s`: `%s` staged by a %d-stage cp.async ring (%d bytes a stage)",
                      lw.k.name, st.tile.sym.name, self.stages, st.tile.nbytes)  # fmt: skip

    def top(self) -> None:
        """A turn's start: its stages landed for every thread (the tracker's wait and
        barrier), then the copies of the turn S-1 ahead into the stage the last turn
        read."""
        lw, b = self.lw, self.lw.b
        for st in self.staged:
            lw.tracker.landed(Slot(st.tile.buffer, 0))
        var = lw.env[self.loop.var]
        et = elem_of(self.loop.var.type)
        ahead = Imm((self.stages - 1) * self.step, var.type)
        nxt = scalars.binary(b, "+", var, ahead, et)
        more = scalars.materialize(b, scalars.binary(b, "<", nxt, self.hi, et), "bool")
        with b.region() as body:
            for st in self.staged:
                self._copy(st, nxt, self._last(st), Slot(st.tile.buffer, self.stages - 1))
        b.add(If(more, body.block, None, span=b.span))
        lw.tracker.commit()
        for st in self.staged:
            st.tile.base = st.stage

    def bottom(self) -> None:
        """A turn's end: every stage one turn on."""
        for st in self.staged:
            self.lw.b.mov(st.stage, self._turn(st, st.stage, +1), "u32")
            self.lw.tracker.rotate(st.tile.buffer, self.stages)

    def _last(self, st: Staged):
        """The stage the last turn read (the next copies' target), computed where it is
        needed: a register more held through the turn would cost the GEMMs whose
        accumulators fill the register file an occupancy step."""
        return self._turn(st, st.stage, -1)

    def _turn(self, st: Staged, stage: Reg, by: int):
        """The stage `by` (+1 or -1) turns from `stage`, wrapping round the ring."""
        b = self.lw.b
        lo, n, s = st.tile.buffer.offset, st.tile.nbytes, self.stages
        if s == 2:  # the other of two: their sum less this one
            return b.op("sub", "u32", Imm(2 * lo + n, "u32"), stage, hint="stage")
        edge, wrapped = (lo + (s - 1) * n, lo) if by > 0 else (lo, lo + (s - 1) * n)
        at_edge = b.op("setp", "pred", stage, Imm(edge, "u32"), cmp="eq", type="u32")
        moved = b.op("add" if by > 0 else "sub", "u32", stage, Imm(n, "u32"), hint="stage")
        return scalars.select(b, at_edge, Imm(wrapped, "u32"), moved, "u32")

    def close(self) -> None:
        for st in self.staged:
            st.tile.base = None
            self.lw.tracker.rings.pop(st.tile.buffer.name, None)

    def lower(self, s) -> bool:
        """A ring's staging statement emits nothing where it stands: its stage is ready."""
        return any(st.stmt is s for st in self.staged)

    # -- the copies ----------------------------------------------------------

    def _copy(self, st: Staged, at, dst_base, slot) -> None:
        """cp.async of the statement's slice at loop value `at` into the stage at
        `dst_base` (the tracker's `slot`), one vector of its sweep a copy."""
        lw, b = self.lw, self.lw.b
        lw.tracker.copy_async(slot)
        saved = lw.env.get(self.loop.var)
        lw.env[self.loop.var] = at
        tile = st.tile
        saved_base = tile.base
        tile.base = dst_base  # a register, or an offset known here (a stage of the prologue)
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
                    if isinstance(guard, Halves):  # a bound between an 8-wide vector's halves
                        half = Imm(size // 2, "u32") if guard.first is not None else Imm(0, "u32")
                        if guard.first is not None:
                            half = scalars.select(b, guard.first, half, Imm(0, "u32"), "u32")
                        n = half
                        if guard.full is not None:
                            n = scalars.select(b, guard.full, Imm(size, "u32"), half, "u32")
                        srcs.append(n)
                    elif guard is not None:
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
