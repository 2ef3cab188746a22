"""The lowering of one checked kernel (hir) to the per-thread IR (lir).

`lower_kernel(k)` is the entry point. It reads the kernel's parameters per the
`.entry` slot convention (each tensor a `u64` pointer named after it, each scalar one
slot of `phobos.lower.types.SLOT`'s type, then one index slot per dynamic dimension),
decides where each tile lives (`phobos.lower.placement`), gives the shared tiles
their bytes (`phobos.lower.alloc`), then lowers statement by statement:
scalar code here and in `phobos.lower.scalars`, elementwise tile statements in
`phobos.lower.sweep`, row reductions and collectives in `phobos.lower.reduce`, with
barriers from `phobos.lower.barriers`.

    >>> from phobos.sema.check import check_kernel
    >>> from phobos.source import SourceFile
    >>> from phobos.syntax.parser import parse
    >>> program, _ = parse(SourceFile("k.ph", '''
    ... kernel k(x: tensor<f32>[N], a: f32) {
    ...   let i = ctx.block.x * ctx.threads + ctx.thread
    ...   if i < N { x[i] = a * x[i] }
    ... }'''))
    >>> hk, _ = check_kernel(program, "k")
    >>> k, diags = lower_kernel(hk)
    >>> [p.name + ":" + p.type for p in k.params], diags
    (['x:u64', 'a:f32', 'N:s32'], [])

A construct with no lowering yet gives a diagnostic (E0500) at its statement, never
an exception.
"""

from __future__ import annotations

import logging
import os
from contextlib import contextmanager
from math import gcd

from phobos.diagnostics.diagnostic import Diagnostic
from phobos.lower import (
    attend,
    lir,
    memory,
    passes,
    pingpong,
    placement,
    scalars,
    staging,
    statements,
)
from phobos.lower.barriers import Tracker
from phobos.lower.builder import Builder, reg_or_imm
from phobos.lower.errors import NotLowered
from phobos.lower.hirwalk import scalar_only
from phobos.lower.lir import Imm, Reg, Value
from phobos.lower.options import switch_count
from phobos.lower.types import BYTES, REG, SLOT, elem_of, index_reg
from phobos.sema import hir

log = logging.getLogger("phobos.lower")

# Math built-ins of one argument; `pow` takes two.
MATH1 = ("exp", "log", "sqrt", "tanh", "round", "floor", "ceil", "abs", "rsqrt", "sin", "cos")
CONVERSIONS = ("f16", "bf16", "f32", "f64", "i8", "i32", "i64", "u8", "u16", "u32")
CTX_SREG = {"block": "ctaid", "blocks": "nctaid"}


def raster_group() -> int:
    """The columns of x a group of the rasterised order takes: `RASTER`, or
    `PHOBOS_RASTER=N` (N from 2 to 64) to measure another.

    >>> raster_group() in range(2, 65)
    True
    """
    asked = switch_count("PHOBOS_RASTER", 2, 64)
    return RASTER if asked is None else asked


RASTER = 8  # columns of x a group of the rasterised block order takes (`Lowering.raster`)


def lower_kernel(
    k: hir.Kernel, chip: str = "sm_90", *, after=None
) -> tuple[lir.Kernel | None, list[Diagnostic]]:
    """Lower a checked kernel for `chip`; (the lir kernel, []) or (None, the diagnostics).

    The lowering runs the passes of `phobos.lower.passes`; `after(pass, lowering,
    output)` is called as each one finishes (the driver keeps their texts with it).
    """
    lowered, diagnostics, _ = lower_kernel_counted(k, chip, after=after)
    return lowered, diagnostics


def lower_kernel_counted(
    k: hir.Kernel, chip: str = "sm_90", *, after=None
) -> tuple[lir.Kernel | None, list[Diagnostic], int]:
    """`lower_kernel`, with the instructions the lowering emitted (refused or not): what
    the driver's whole-space budget counts under `--all-variants`."""
    # The temporaries' names reach the lir and the PTX (and so the cache key of a
    # contract made from the PTX): each kernel numbers its own from 1, so a kernel
    # lowers to the same text whatever this process lowered before it.
    placement.restart_names()
    staging.restart_names()
    lw = Lowering(k, chip)
    try:
        return lw.run(after), [], lw.b.emitted
    except NotLowered as err:
        return None, [err.diagnostic(lw.b.span or k.span)], lw.b.emitted


def print_kernels(kernels: list[lir.Kernel]) -> str:
    """The text `--emit lir` prints: each kernel's text form, a blank line between."""
    return "".join(lir.print_kernel(k) + "\n\n" for k in kernels).rstrip("\n") + "\n"


class Lowering:
    """The state of one kernel's lowering: the builder, bindings, tiles, shared memory."""

    def __init__(self, k: hir.Kernel, chip: str = "sm_90"):
        self.k = k
        self.chip = chip  # the PTX target: which instructions a statement may lower to
        self.threads = k.threads
        self.idx = index_reg(k.index_width)
        self.params: list[lir.Param] = []
        self.env: dict = {}  # Sym -> Value (scalar), Reg (tensor pointer) or memory.Access
        self.tiles: dict = {}  # Sym -> sweep.Tile
        self.dims: dict[str, Value] = {}
        self.divs: dict[hir.Sym, int] = {}
        self.var_regs: set[str] = set()  # registers that belong to a `var`
        self.memo: dict = {}
        self.widened: dict = {}  # label of a slice -> its widths (`widths.slice_vec`)
        self.whole_tiles: dict = {}  # loop Sym -> (extent register, step): `phobos.lower.loopsplit`
        self.prefetch = None  # the innermost loop's `phobos.lower.prefetch.Prefetcher`
        self.maps: list[lir.TensorMap] = []  # TMA tensor maps (`phobos.lower.tma`)
        self.async_written: set[str] = set()  # buffers a TMA ring writes, while it turns
        self.wgmma_pending = 0  # wgmma groups a product leaves in flight (a TMA ring's lag - 1)
        self.rings = 0  # TMA rings set up so far: each after the first reuses the mbarriers
        self.walk = None  # the CTAs' walk over the grid's blocks (`phobos.lower.walk`)
        self.fed = None  # (loop, its TmaRing) a producer warpgroup feeds (`specialized_body`)
        variant = dict(k.variant)
        aligned = getattr(k.attrs, "aligned", None) or {}
        self.aligned = {
            d: (variant.get(t, t) if isinstance(t, str) else t) for d, t in aligned.items()
        }
        names = {p.name for p in k.params} | set(k.dyn_dims)
        self.b = Builder(names)
        self.tracker = Tracker(self)
        self.plan: placement.Plan | None = None
        self.shared: list[lir.SharedBuffer] = []
        self.smem = 0

    # -- the kernel ----------------------------------------------------------

    def run(self, after=None) -> lir.Kernel:
        """The kernel's parameters bound, then each pass of `phobos.lower.passes` in
        order (`after` as `lower_kernel` says); the lir kernel the last one made."""
        self.b.span = self.k.span
        self.bind_params()
        return passes.run(self, after)

    def bind_params(self) -> None:
        b = self.b
        for p in self.k.params:
            if isinstance(p.type, hir.TensorT):
                reg = Reg(p.name, "u64")
                self.params.append(lir.Param(p.name, "u64"))
                self.env[p] = reg
                continue
            t = elem_of(p.type)
            slot = Reg(p.name, SLOT[t])
            self.params.append(lir.Param(p.name, SLOT[t]))
            with b.at_prologue():
                if t == "bool":
                    value = b.op("setp", "pred", slot, Imm(0, "u32"), cmp="ne", type="u32")
                elif SLOT[t] != REG[t]:  # a 16-bit float arrives as its bits
                    value = b.op("mov", "b16", slot, dest_type=REG[t], hint=p.name)
                else:
                    value = slot
            self.env[p] = value
        for name in self.k.dyn_dims:
            self.params.append(lir.Param(name, self.idx))
            self.dims[name] = Reg(name, self.idx)

    def trap_broken_alignment(self) -> None:
        """`@aligned(N = T)` on a dynamic `N`: trap at entry when `N % T != 0`."""
        b = self.b
        for dim, tile in self.aligned.items():
            if dim not in self.dims or not isinstance(tile, int) or tile <= 0:
                continue
            with b.at_prologue():
                n = self.dims[dim]
                if tile & (tile - 1) == 0:
                    rem = b.op("and", "b32" if self.idx == "s32" else "b64", n,
                               Imm(tile - 1, self.idx), dest_type=self.idx)  # fmt: skip
                else:
                    rem = b.op("rem", self.idx, n, Imm(tile, self.idx))
                bad = b.op("setp", "pred", rem, Imm(0, self.idx), cmp="ne", type=self.idx)
                b.emit("trap", guard=bad)
            log.debug("@aligned(%s = %d): masks dropped on `%s`, trap at entry if broken",
                      dim, tile, dim)  # fmt: skip

    # -- helpers the other modules use ---------------------------------------

    def dim_value(self, d) -> Value:
        if isinstance(d, int):
            return Imm(d, self.idx)
        name = d.name if isinstance(d, hir.Dyn) else str(d)
        if name not in self.dims:
            raise NotLowered(f"the extent `{name}`")
        return self.dims[name]

    def once_index(self, key, make):
        return self.b.once(key, make)

    def sreg(self, name: str) -> Reg:
        """A special register read once at entry, as a u32."""
        return self.b.once(("sreg", name), lambda: self.b.op("sreg", "u32", name=name, hint="t"))

    def tid(self) -> Value:
        """`ctx.thread` as an index."""
        return self.b.once(("tid", self.idx), lambda: self._as_index(self.sreg("tid.x")))

    def ctx_lane(self) -> Value:
        """`ctx.lane` as an index."""
        b = self.b
        return b.once(("lane",), lambda: b.op("and", "b32" if self.idx == "s32" else "b64",
                                              self.tid(), Imm(31, self.idx), dest_type=self.idx))  # fmt: skip

    def _as_index(self, r: Reg) -> Reg:
        if self.idx == "s32":
            return self.b.op("mov", "b32", r, dest_type="s32", hint="i")
        return self.b.op("cvt", "s64", r, from_type="u32", hint="i")

    def ctx(self, e: hir.CtxRead) -> Value:
        t = REG[elem_of(e.type)]
        f, axis = e.field, e.axis or "x"
        b = self.b
        if f in ("block", "blocks") and self.walk is not None:
            v = self._as_index(self.walk.ctx(f, axis))
        elif f == "block" and axis in ("x", "y") and self.rasterized:
            v = b.once(("ctx", "raster", axis, t),
                       lambda: self._as_index(self.raster()[axis == "y"]))  # fmt: skip
        elif f in CTX_SREG:
            name = f"{CTX_SREG[f]}.{axis}"
            v = b.once(("ctx", name, t), lambda: self._as_index(self.sreg(name)))
        elif f == "thread":
            v = self.tid()
        elif f == "lane":
            v = self.ctx_lane()
        elif f == "warp":
            v = b.once(("warp",), lambda: b.op("shr", self.idx, self.tid(), Imm(5, "u32")))
        elif f == "threads":
            v = Imm(self.threads, self.idx)
        elif f == "warps":
            v = Imm(self.threads // 32, self.idx)
        elif f == "lanes":
            v = Imm(32, self.idx)
        else:
            raise NotLowered(f"`ctx.{f}`", e.span)
        return v if t == self.idx else scalars.convert(b, v, "i32" if self.idx == "s32" else "i64",
                                                        elem_of(e.type))  # fmt: skip

    def divisor(self, e) -> int:
        """A power of two the integer expression `e` is provably a multiple of."""
        return _p2(self._divisor(e))

    def _divisor(self, e) -> int:
        if isinstance(e, hir.Const):
            return memory.BIG if e.value == 0 else abs(int(e.value))
        if isinstance(e, hir.Ref):
            if e.sym.kind == "dim":
                tile = self.aligned.get(e.sym.name)
                return max(4, _p2(tile)) if isinstance(tile, int) else 4
            return self.divs.get(e.sym, 1)
        if isinstance(e, hir.Binary):
            if e.op == "*":
                return min(self._divisor(e.left) * self._divisor(e.right), memory.BIG)
            if e.op in ("+", "-"):
                return gcd(self._divisor(e.left), self._divisor(e.right))
            if e.op == "<<" and isinstance(e.right, hir.Const):
                return min(self._divisor(e.left) << int(e.right.value), memory.BIG)
        if isinstance(e, hir.Convert) and elem_of(e.type) in ("i32", "i64"):
            return self._divisor(e.value)
        return 1

    def index_value(self, e: hir.Expr) -> Value:
        """A scalar integer expression as an index (converted to the index type)."""
        v = self.value(e)
        t = elem_of(e.type)
        want = "i32" if self.idx == "s32" else "i64"
        if t != want:
            if isinstance(v, Imm):
                return Imm(int(v.value), self.idx)
            v = scalars.convert(self.b, v, t, want)
        return v

    def drop_proven_bounds(self, acc: memory.Access) -> memory.Access:
        """An access with the bounds `@aligned` dims promise away removed."""
        if acc.space != "global" or not self.aligned:
            return acc
        aligned_regs = {self.dims[d].name for d in self.aligned if d in self.dims}
        bounds = tuple(
            tuple(v for v in limits if not (isinstance(v, Reg) and v.name in aligned_regs))
            for limits in acc.bounds
        )
        if bounds != acc.bounds:
            acc.bounds = bounds
        return acc

    def note_shared(self, acc: memory.Access, kind: str, layout) -> None:
        if acc.space == "shared":
            self.tracker.access(acc.buffer, kind, layout)

    # -- scalar expressions --------------------------------------------------

    def value(self, e: hir.Expr) -> Value:
        """A scalar expression's value in a register (or an immediate)."""
        if not isinstance(e.type, hir.Scalar):
            raise NotLowered("a tile used as a scalar", e.span)
        t = e.type.name
        b = self.b
        if isinstance(e, hir.Const):
            return scalars.const(e.value, t)
        if isinstance(e, hir.Ref):
            if e.sym.kind == "dim":
                v = self.dim_value(hir.Dyn(e.sym.name))
                return v if REG[t] == self.idx else scalars.convert(
                    b, v, "i32" if self.idx == "s32" else "i64", t)  # fmt: skip
            if e.sym not in self.env:
                raise NotLowered(f"`{e.sym.name}` read before it has a value", e.span)
            return self.env[e.sym]
        if isinstance(e, hir.CtxRead):
            return self.ctx(e)
        if isinstance(e, hir.Convert):
            return scalars.convert(b, self.value(e.value), elem_of(e.value.type), t)
        if isinstance(e, hir.Unary):
            return scalars.unary(b, e.op, self.value(e.operand), t)
        if isinstance(e, hir.Binary):
            x, y = self.value(e.left), self.value(e.right)
            return scalars.binary(b, e.op, x, y, elem_of(e.left.type))
        if isinstance(e, hir.Slice):
            if all(s.point for s in e.subs):
                tile = self._tile_of(e.base)
                if tile is not None and tile.place != "shared":
                    return tile.point(self, e)
                return memory.point_load(self, e)
            raise NotLowered("a slice used as a scalar", e.span)
        if isinstance(e, hir.Builtin):
            return self.builtin(e)
        raise NotLowered(f"`{type(e).__name__}`", e.span)

    def _tile_of(self, e):
        return self.tiles.get(e.sym) if isinstance(e, hir.Ref) else None

    def builtin(self, e: hir.Builtin) -> Value:
        from phobos.lower import reduce

        name, b = e.name, self.b
        t = elem_of(e.type)
        config = dict(e.config)
        if "over" in config or name in ("shfl",):
            return reduce.collective(self, e)
        args = e.args
        if name in MATH1:
            return scalars.math1(b, name, self.value(args[0]), t)
        if name == "pow":
            return scalars.power(b, self.value(args[0]), self.value(args[1]), t)
        if name in ("min", "max", "tmax"):
            return scalars.minmax(b, "min" if name == "min" else "max", self.value(args[0]),
                                  self.value(args[1]), t)  # fmt: skip
        if name == "where":
            c, x, y = (self.value(a) for a in args)
            return scalars.select(b, scalars.materialize(b, c, "bool"), x, y, t)
        if name in CONVERSIONS:
            return scalars.convert(b, self.value(args[0]), elem_of(args[0].type), t)
        if name == "barrier":
            self.tracker.barrier()
            return Imm(0, REG[t])
        from phobos.lower import atomics, runs

        if name in atomics.ONCE:
            return atomics.lower(self, e)
        if name in runs.RUNS:
            return runs.lower(self, e)
        raise NotLowered(f"`{name}`", e.span)

    # -- statements ------------------------------------------------------------

    def block(self, blk: hir.Block) -> None:
        for s in blk.stmts:
            self.stmt(s)

    # -- the order of the blocks ---------------------------------------------

    @property
    def rasterized(self) -> bool:
        """Whether `ctx.block.x` and `.y` are taken in groups of `RASTER` columns of x
        (`raster`): in a kernel staged by a TMA ring (a GEMM's tiles, x along M and y
        along N, say), so the CTAs running at once read few rows of A and columns of B
        and L2 holds them. Every block still runs once with its own index, so only the
        order the card runs them in changes; a `@persistent` kernel (its blocks may
        wait on one another) keeps the launch's order, as does `PHOBOS_RASTER=0`."""
        return (
            self.plan is not None
            and self.plan.mbarriers is not None
            and not getattr(self.k.attrs, "persistent", False)
            and os.environ.get("PHOBOS_RASTER") != "0"
        )

    def raster(self) -> tuple[Reg, Reg]:
        """The (x, y) block index of this CTA in the grouped order, as u32: the launch's
        n-th CTA (x fastest) takes the n-th index of the order that walks `RASTER`
        columns of x at a time, down all of y, then the next `RASTER` (fewer at the
        grid's edge). A bijection of the grid onto itself."""
        b = self.b

        def make():
            nx, bx, by = (self.sreg(n) for n in ("nctaid.x", "ctaid.x", "ctaid.y"))
            pid = b.op("mad", "u32", by, nx, bx, hint="pid")
            return self.raster_of(pid, nx, self.sreg("nctaid.y"))

        return b.once(("raster",), make)

    def raster_of(self, pid: Reg, nx, ny) -> tuple[Reg, Reg]:
        """The (x, y) index, as u32, the `pid`-th block of an `nx` by `ny` grid takes in
        the grouped order (`raster`)."""
        b, u = self.b, "u32"
        group = raster_group()
        per = b.op("mul", u, ny, Imm(group, u), hint="per")
        first = b.op("mul", u, b.op("div", u, pid, per), Imm(group, u), hint="first")
        left = b.op("sub", u, nx, first, hint="left")
        size = b.op("min", u, left, Imm(group, u), hint="size")
        within = b.op("rem", u, pid, per, hint="within")
        x = b.op("add", u, first, b.op("rem", u, within, size), hint="bx")
        y = b.op("div", u, within, size, hint="by")
        return x, y

    # -- a producer warpgroup ------------------------------------------------

    @property
    def specialized(self) -> bool:
        """Whether a producer warpgroup, past the kernel's own threads, issues the TMA
        ring's loads (`phobos.lower.tma`): then the CTA has `launch_threads`, the
        kernel's threads (`ctx.threads`) are the consumers, and every statement but
        the ring's loop and the scalar ones runs in them alone."""
        return self.plan is not None and self.plan.specialized

    @property
    def launch_threads(self) -> int:
        return self.threads + 128 if self.specialized else self.threads

    def consumers(self) -> Reg:
        """True in the kernel's own threads (not the producer warpgroup's)."""
        b = self.b
        return b.once(("consumers",), lambda: b.op("setp", "pred", self.sreg("tid.x"),
                                                   Imm(self.threads, "u32"), cmp="lt",
                                                   type="u32"))  # fmt: skip

    def barrier_srcs(self) -> tuple:
        """A CTA barrier's operands: barrier 0 for the whole CTA; with a producer
        warpgroup, named barrier 1 counting the consumers alone."""
        if self.specialized:
            return (Imm(1, "u32"), Imm(self.threads, "u32"))
        return (Imm(0, "u32"),)

    def top_block(self, blk: hir.Block) -> None:
        """The kernel's body: with a producer warpgroup, each statement but the ring's
        loop and the scalar ones guarded to run in the consumers alone; where the CTAs
        walk the grid's blocks, the body a loop over them (`phobos.lower.walk`)."""
        from phobos.lower.walk import walker

        walk = walker(self, blk)
        if walk is not None:
            walk.lower()
            return
        if not self.specialized:
            self.block(blk)
            return
        self.specialized_body(blk)

    def specialized_body(self, blk: hir.Block) -> None:
        """A kernel body with a producer warpgroup, not walked: the scalar `let`s before
        the ring's loop in every thread, the ring set up by the whole CTA, then one `if`
        whose arms never join again: the consumers run the other statements before the
        loop, the loop and every statement after it, the producer
        warpgroup's first thread the loop's boxes; `setmaxnreg` moves registers from
        the one to the other (`tma.rebalanced`)."""
        from phobos.lower.tma import TmaRing, rebalanced, staged_by_tma
        from phobos.lower.walk import _step

        b = self.b
        stmts = blk.stmts
        at = next(
            i for i, s in enumerate(stmts) if isinstance(s, hir.For) and staged_by_tma(self, s)
        )
        before = []
        for s in stmts[:at]:
            if scalar_only(s):
                self.stmt(s)  # in every thread: the producer's boxes may read them
            else:
                before.append(s)
        loop = stmts[at]
        step = _step(self, loop)
        if step is None:
            raise NotLowered("a TMA ring a producer warpgroup feeds steps by a constant "
                             "(PHOBOS_SPECIALIZE=1)", loop.span)  # fmt: skip
        ring = TmaRing(self, loop, None, step)
        ring.setup()
        self.fed = (loop, ring)
        regs = rebalanced(self.threads // 128)
        with b.region() as consumer:
            if regs is not None:
                b.emit("setmaxnreg", action="inc", regs=regs[1])
            # The consumers' statements before the loop run with their registers raised:
            # a product there (attention_ahead's first scores) would not fit the share
            # of the whole CTA's threads.
            for s in before:
                self.stmt(s)
            if before and self.tracker.pending:
                # their shared writes ordered here, once, not at the loop's first read
                # (a barrier in the loop's body would keep the warpgroups from taking
                # turns: `pingpong.refusal`)
                self.tracker.barrier(force=True)
            self.stmt(loop)
            items = b.stack[-1]
            found = [i for i, item in enumerate(items) if isinstance(item, lir.For)]
            if found:
                pingpong.take_turns(self, items, found[-1])
            for s in stmts[at + 1 :]:
                self.stmt(s)
        with b.region() as producer:
            if regs is not None:
                b.emit("setmaxnreg", action="dec", regs=regs[0])
            t = REG[elem_of(loop.var.type)]
            with b.region() as issuer:
                lo, hi = (reg_or_imm(b, self.value(e), t) for e in (loop.lo, loop.hi))
                slot, phase = ring.producer_slot()
                ring.produce(lo, hi, slot, phase)
            b.add(lir.If(ring.issuer(), issuer.block, None, span=loop.span))
        b.add(lir.If(self.consumers(), consumer.block, producer.block, span=loop.span))
        log.debug("`%s`: a producer warpgroup issues the TMA ring's loads (%d threads a "
                  "CTA)%s", self.k.name, self.launch_threads,
                  f", setmaxnreg {regs[0]}/{regs[1]}" if regs else "")  # fmt: skip

    def stmt(self, s: hir.Stmt) -> None:
        saved = self.b.span
        self.b.span = s.span or saved
        try:
            getattr(self, "s_" + type(s).__name__)(s)
        except NotLowered as err:
            if err.span is None:
                err.span = s.span
            raise
        finally:
            self.b.span = saved

    def s_Block(self, s: hir.Block) -> None:
        self.block(s)

    def s_Let(self, s: hir.Let) -> None:
        t = s.sym.type
        if isinstance(t, hir.Scalar):
            v = self.value(s.value)
            if isinstance(v, Reg) and v.name in self.var_regs:
                v = self.b.copy(v, v.type, hint=s.sym.name)
            self.env[s.sym] = v
            if t.name in ("i32", "i64"):
                self.divs[s.sym] = self._divisor(s.value)
            return
        if isinstance(t, hir.TensorT) or (
            isinstance(s.value, (hir.Slice, hir.Ref)) and s.sym not in self.tiles
        ):
            self.env[s.sym] = memory.resolve(self, s.value)
            return
        if isinstance(s.value, hir.Builtin) and s.value.name == "flat":
            from phobos.lower.shape import flat_access

            self.env[s.sym] = flat_access(self, s.value)
            return
        self.tile_stmt(s)

    def s_VarDecl(self, s: hir.VarDecl) -> None:
        t = s.sym.type
        if isinstance(t, hir.Scalar):
            rt = REG[t.name]
            reg = self.b.reg(rt, s.sym.name)
            self.var_regs.add(reg.name)
            v = self.value(s.value) if s.value is not None else scalars.const(0, t.name)
            self._assign_reg(reg, v, t.name)
            self.env[s.sym] = reg
            return
        self.tile_stmt(s)

    def _assign_reg(self, reg: Reg, v: Value, t: str) -> None:
        v = scalars.materialize(self.b, v, t) if isinstance(v, Imm) and (
            REG[t] == "pred" or t in ("f16", "bf16")) else v  # fmt: skip
        mov_t = {"pred": "pred", "f16": "b16", "bf16": "b16"}.get(reg.type, reg.type)
        self.b.mov(reg, v, mov_t)

    def s_Assign(self, s: hir.Assign) -> None:
        target = s.target
        if isinstance(target, hir.Ref) and isinstance(target.type, hir.Scalar):
            t = target.type.name
            v = self.value(s.value)
            reg = self.env[target.sym]
            if s.op != "=":
                v = scalars.binary(self.b, s.op[:-1], reg, v, t)
            self._assign_reg(reg, v, t)
            return
        if isinstance(target, hir.Slice) and all(sub.point for sub in target.subs):
            tile = self._tile_of(target.base)
            if tile is not None and tile.place != "shared":
                raise NotLowered("a point store into a register tile", s.span)
            t = elem_of(target.type)
            v = self.value(s.value)
            if s.op != "=":
                v = scalars.binary(self.b, s.op[:-1], memory.point_load(self, target), v, t)
            memory.point_store(self, target, v)
            return
        self.tile_stmt(s)

    def s_If(self, s: hir.If) -> None:
        b = self.b
        cond = scalars.materialize(b, self.value(s.cond), "bool")
        varying = s.cond.uni != hir.UNIFORM
        at = self.tracker._here()
        with self.tracker.branch(varying) as next_arm:
            with b.region() as then:
                self.block(s.then)
            orelse = None
            if s.orelse is not None:
                next_arm()
                with b.region() as other:
                    self.block(s.orelse)
                orelse = other.block
        b.add(lir.If(cond, then.block, orelse, span=s.span))
        if varying:  # the rest of the loop (or kernel) after a jump runs diverged
            for kind in _jumps(s.then, s.orelse):
                self.tracker.jumped(kind, at)

    def s_For(self, s: hir.For) -> None:
        from phobos.lower.loopsplit import lower_split
        from phobos.lower.unroll import lower_unrolled

        if s.unroll and s.unroll > 1 and lower_unrolled(self, s):
            return
        if lower_split(self, s):
            return
        b, t = self.b, REG[elem_of(s.var.type)]
        lo, hi = self.value(s.lo), self.value(s.hi)
        step = self.value(s.step) if isinstance(s.step, hir.Expr) else Imm(int(s.step), t)
        var = b.reg(t, s.var.name)
        self.env[s.var] = var
        step_div = self._divisor(s.step) if isinstance(s.step, hir.Expr) else int(s.step)
        self.divs[s.var] = gcd(self._divisor(s.lo), step_div)
        lo, hi, step = (reg_or_imm(b, v, t) for v in (lo, hi, step))
        varying = max(s.lo.uni, s.hi.uni, getattr(s.step, "uni", hir.UNIFORM)) != hir.UNIFORM
        with self.prefetching(s, lo, hi, step, varying) as ring:
            body = self.loop_body(s.body, varying, ring)
            b.add(lir.For(var, lo, hi, step, body, span=s.span))
            if ring is not None and hasattr(ring, "after"):
                ring.after()

    def loop_body(self, body: hir.Block, varying: bool, ring=None) -> lir.Block:
        """A loop's body lowered as one turn: opened and closed by its cp.async ring."""
        with self.tracker.loop(body, varying):
            with self.b.region() as turn:
                if ring is not None:
                    ring.top()
                self.block(body)
                if ring is not None:
                    ring.bottom()
        return turn.block

    @contextmanager
    def prefetching(self, s: hir.For, lo, hi, step, varying: bool):
        """While `s`'s body is lowered, its staging statements run a turn ahead: by a
        cp.async ring where placement gave their tiles stages of their own
        (`phobos.lower.pipeline`), else through registers (`phobos.lower.prefetch`);
        only in a uniform loop with a constant step. Yields the ring (its `top` and
        `bottom` open and close each turn) or None."""
        from phobos.lower.pipeline import Ring
        from phobos.lower.prefetch import Prefetcher
        from phobos.lower.tma import TmaRing

        saved = self.prefetch
        pre = ring = None
        wanted = os.environ.get("PHOBOS_PREFETCH", "1") != "0"  # off: to measure its gain
        if self.walk is not None and s is self.walk.loop:
            ring = pre = self.walk.ring  # set up before the first block, its phases carried
            ring.hi = hi
            ring.enter(lo)
        elif self.fed is not None and s is self.fed[0]:
            ring = pre = self.fed[1]  # set up by the whole CTA, a producer feeding it
            ring.hi = hi
            ring.enter(lo)
        elif not varying and isinstance(step, Imm) and int(step.value) > 0:
            ring = TmaRing(self, s, hi, int(step.value)) or Ring(self, s, hi, int(step.value))
            if ring:
                ring.prologue(lo)
                pre = ring
            else:
                ring = None
                pre = Prefetcher(self, s, hi, int(step.value)) if wanted else None
                if pre:
                    pre.prologue(lo)
                else:
                    pre = None
        self.prefetch = pre
        if pre is not None:
            self.pipelined = True  # `@pipeline` holds (`pipeline.check_asserted`)
        try:
            yield ring
        finally:
            self.prefetch = saved
            if ring is not None:
                ring.close()

    def s_While(self, s: hir.While) -> None:
        b = self.b
        with self.tracker.loop(s.body, s.cond.uni != hir.UNIFORM):
            with b.region() as body:
                cond = scalars.materialize(b, self.value(s.cond), "bool")
                b.add(lir.Break(cond, negated=True))
                self.block(s.body)
        b.add(lir.Loop(body.block, span=s.span))

    def s_Break(self, s) -> None:
        self.b.add(lir.Break())

    def s_Continue(self, s) -> None:
        self.b.add(lir.Continue())

    def s_Return(self, s) -> None:
        self.b.add(lir.Return())

    def s_ExprStmt(self, s: hir.ExprStmt) -> None:
        e = s.expr
        if isinstance(e, hir.Builtin) and e.name == "barrier":
            self.tracker.barrier(force=True)
            return
        if isinstance(e, hir.Builtin) and e.name == attend.NAME:
            attend.lower(self, e)
            return
        if isinstance(e.type, hir.Scalar):
            self.value(e)
            return
        raise NotLowered(f"`{getattr(e, 'name', type(e).__name__)}`", s.span)

    # -- tile statements -------------------------------------------------------

    def tile_stmt(self, s) -> None:
        if self.prefetch is not None and self.prefetch.lower(s):
            return
        statements.tile_statement(self, s)

    def elem_bytes(self, t: str) -> int:
        return BYTES[t]


def _jumps(*blocks) -> list[str]:
    """The jumps (`return`, `break`, `continue`, strongest first) in `blocks` that leave
    them: a `break` or `continue` inside a nested loop stays in it."""
    found: set[str] = set()

    def walk(stmts, in_loop: bool) -> None:
        for st in stmts:
            if isinstance(st, hir.Return):
                found.add("return")
            elif isinstance(st, (hir.Break, hir.Continue)) and not in_loop:
                found.add("break" if isinstance(st, hir.Break) else "continue")
            elif isinstance(st, hir.If):
                walk(st.then.stmts, in_loop)
                walk(st.orelse.stmts if st.orelse is not None else (), in_loop)
            elif isinstance(st, (hir.For, hir.While)):
                walk(st.body.stmts, True)
            elif isinstance(st, hir.Block):
                walk(st.stmts, in_loop)

    for blk in blocks:
        if blk is not None:
            walk(blk.stmts, False)
    return [k for k in ("return", "break", "continue") if k in found]


def _p2(n: int) -> int:
    """The largest power of two dividing `n` (a large one for 0)."""
    if n <= 0:
        return 1
    return n & -n
