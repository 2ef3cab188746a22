"""The threads interpreter: runs lir (`phobos.lower.lir`) on numpy — the executable
definition of lir.

CTAs run one after another, or in a kernel of clusters (`lir.Kernel.cluster`) a cluster
at a time, its CTAs side by side as they wait on each other (`threads_cluster`); the
threads of a CTA run together, each register an array over them (`threads_values`),
control under a per-thread condition masked: an `If` runs `then` where its condition
holds and `orelse` where it does not, a `For` or `Loop` runs while any thread is still
in it, and `Break`/`Continue`/`Return` take threads out of the innermost loop's
iteration, the loop, or the kernel. Global memory is a `GlobalMemory` of byte arrays at
fake addresses (an access outside every buffer stops the run with an `InterpError` at
the instruction's span); shared memory is one byte array per CTA,
filled with 0xFF bytes at the start, as it holds no defined value (an f32 read before
any write is a NaN). With `check_races=True` a `RaceRecorder` (`phobos.interp.races`)
watches every shared access between barriers, one for each CTA of a cluster; global
memory is not race-checked.

What PTX leaves undefined is an error here, at the instruction's span: a `bar` that not
every running thread of the CTA reaches, a `shfl` that reads a lane not running it, an
integer division by zero, a misaligned access, a cluster barrier arrived at twice. Modules: `threads_values` (types, bits,
`cvt`), `threads_ops` (arithmetic, bits, comparisons, math), `threads_exec` (dispatch
by op family), `threads_access` (ld, st, atom, red), `threads_warp` (shfl, vote),
`threads_async` (cp_async and its groups), `threads_tensor` (ldmatrix, stmatrix, mma and
WMMA, a warp at a time), `threads_stores` (TMA stores and their bulk groups),
`threads_wgmma` (wgmma, a warpgroup at a time), `threads_hopper` (mbarriers, bulk copies,
named barriers; the arms of an `If` run side by side as `threads_strands`),
`threads_cluster` (a cluster's CTAs as strands of one scheduler, its barrier, multicast
TMA loads), `threads_memory` (global memory).

    >>> import numpy as np
    >>> from phobos.lower.lir import Block, Imm, Kernel, Param, Reg, inst
    >>> out, t, a = Reg("out", "u64"), Reg("t", "u32"), Reg("a", "u64")
    >>> body = Block((
    ...     inst("sreg", (t,), (), name="tid.x"),
    ...     inst("mul_wide", (a,), (t, Imm(4, "u32")), type="u32"),
    ...     inst("add", (a,), (a, out), type="u64"),
    ...     inst("st", (), (a, t), space="global", type="u32"),
    ... ))
    >>> mem = GlobalMemory()
    >>> buf = mem.place(np.zeros(8, np.uint32))
    >>> report = run_lir(Kernel("k", (Param("out", "u64"),), body, threads=8), 1, {"out": buf}, mem)
    >>> mem.read(buf).tolist(), report.ctas
    ([0, 1, 2, 3, 4, 5, 6, 7], 1)
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass

import numpy as np

from phobos.interp.errors import InterpError
from phobos.interp.races import RacePair, RaceRecorder
from phobos.interp.threads_access import MemoryOps
from phobos.interp.threads_async import AsyncOps, Copy
from phobos.interp.threads_cluster import MAX_CLUSTER, Cluster, ClusterOps
from phobos.interp.threads_exec import InstOps
from phobos.interp.threads_hopper import HopperOps
from phobos.interp.threads_memory import GlobalMemory
from phobos.interp.threads_ops import arith, compare
from phobos.interp.threads_stores import StoreOps
from phobos.interp.threads_tensor import TensorOps
from phobos.interp.threads_values import DTYPE, bits_of, immediate, reinterpret
from phobos.interp.threads_warp import WarpOps
from phobos.interp.threads_wgmma import WgmmaOps
from phobos.lower import lir

__all__ = ["GlobalMemory", "RunReport", "run_lir"]

SHARED_FILL = 0xFF  # the bytes shared memory holds before a CTA writes it


@dataclass(frozen=True)
class RunReport:
    """What a run saw: the CTAs run, the barriers passed (all CTAs), and with
    `check_races` the first races found (`races`) and how many racing bytes (`races_found`).
    """

    ctas: int
    barriers: int = 0
    races: tuple[RacePair, ...] = ()
    races_found: int = 0

    @property
    def race_free(self) -> bool:
        return not self.races

    def format_races(self) -> str:
        """One line per race kept."""
        return "\n".join(r.message() for r in self.races)


# CTAs a grid-walking kernel runs on: two, so that each walks several blocks and the
# ring's phases carry from one block to the next, as on the card (a kernel of clusters
# runs two clusters: `_walkers`).
WALKERS = 2


def run_lir(
    kernel: lir.Kernel,
    grid,
    params: dict[str, object],
    memory: GlobalMemory,
    *,
    check_races: bool = False,
    dynamic_smem: int = 0,
    max_races: int = 8,
    max_iterations: int | None = None,
    walkers: int | None = None,
) -> RunReport:
    """Run `kernel` over `grid` (an int or 1 to 3 block counts, x first).

    A kernel whose CTAs walk the grid's blocks (`Kernel.walk`) gets the grid's counts
    in its walk params and runs on `walkers` CTAs (default `WALKERS`, or two clusters'
    worth in a kernel of clusters; fewer where the grid has fewer blocks), as the
    launcher runs it on as many as the card holds. A kernel of clusters
    (`Kernel.cluster`) runs its CTAs a cluster at a time (`threads_cluster`): the grid's
    x extent, or `walkers`, a multiple of the cluster's size.

    `params` gives every parameter slot its value by name: a pointer slot (`u64`) an
    address from `memory.place`/`memory.alloc`, a scalar slot a number (a `b16` slot of an
    f16 or bf16 scalar takes the bits, or a numpy float16). `dynamic_smem` is the dynamic
    shared memory in bytes, after the kernel's static `smem`. A loop that runs more than
    `max_iterations` times (default `phobos.interp.tiles.iteration_limit()`) is an error.
    """
    from phobos.interp.tiles import iteration_limit, loop_seconds

    grid = tuple(int(g) for g in (grid if isinstance(grid, (tuple, list)) else (grid,)))
    if not 1 <= len(grid) <= 3 or any(g < 1 for g in grid):
        raise InterpError(f"a grid has 1 to 3 positive extents, not {list(grid)}", kernel.span)
    if not 1 <= kernel.threads <= 1024:
        raise InterpError(f"a CTA has 1 to 1024 threads, not {kernel.threads}", kernel.span)
    if kernel.dynamic_smem and not dynamic_smem:
        raise InterpError("the kernel takes dynamic shared memory: pass its size", kernel.span)
    size = kernel.smem + int(dynamic_smem)
    for buf in kernel.shared:
        if buf.offset + buf.size > size:
            raise InterpError(
                f"shared buffer `{buf.name}` ends at byte {buf.offset + buf.size}, "
                f"past the {size} bytes of shared memory",
                kernel.span,
            )
    c = kernel.cluster
    if not 1 <= c <= MAX_CLUSTER:
        raise InterpError(f"a cluster has 1 to {MAX_CLUSTER} CTAs, not {c}", kernel.span)
    if kernel.walk:
        params = {**params, **dict(zip(kernel.walk, (*grid, 1, 1)[:3], strict=True))}
        grid = (_walkers(kernel, int(np.prod(grid)), walkers),)
    elif grid[0] % c:
        raise InterpError(f"the grid's x extent of {grid[0]} blocks is not a multiple of the "
                          f"kernel's clusters of {c} CTAs", kernel.span)  # fmt: skip
    values = {}
    for p in kernel.params:
        if p.name not in params:
            raise InterpError(f"no value for parameter `{p.name}`", kernel.span)
        values[p.name] = _param_value(p, params[p.name], kernel)
    full = grid + (1,) * (3 - len(grid))
    launch = _Launch(kernel, full, values, memory, size, max_iterations or iteration_limit())
    launch.max_seconds = loop_seconds()
    if check_races:  # one a rank: a cluster's CTAs interleave, each with its own epochs
        launch.recorders = [RaceRecorder(size, kernel.shared, max_races) for _ in range(c)]
    ctas = 0
    if c == 1 and not kernel.walk and spins(kernel):
        return _run_coresident(launch, full, check_races, size, max_races)
    with np.errstate(all="ignore"):
        for z, y, x in itertools.product(range(full[2]), range(full[1]), range(0, full[0], c)):
            cluster = Cluster(c, kernel.threads)
            cluster.run([_CTA(launch, (x + r, y, z), cluster) for r in range(c)])
            ctas += c
    races, found = _races(launch.recorders, max_races)
    return RunReport(ctas, launch.barriers, races, found)


def spins(kernel: lir.Kernel) -> bool:
    """Whether a loop of `kernel` waits on global memory another block writes (an acquire
    load in a `Loop`: `grid_barrier`'s wait, a spin on `load_acquire`)."""
    return _acquires(kernel.body, False)


def _acquires(block: lir.Block, inside: bool) -> bool:
    """Whether `block` has an acquire load inside a `Loop` (`inside`: it is one's body)."""
    for item in block.items:
        if isinstance(item, lir.Inst):
            if inside and item.op == "ld" and item.attr("sem") == "acquire":
                return True
        elif isinstance(item, lir.If):
            if _acquires(item.then, inside) or (item.orelse and _acquires(item.orelse, inside)):
                return True
        elif isinstance(item, (lir.For, lir.Loop)):
            if _acquires(item.body, inside or isinstance(item, lir.Loop)):
                return True
    return False


def _barrier_regs(block: lir.Block) -> list:
    """The registers naming the barriers `block` waits at (a `bar.sync` by register)."""
    found: list = []
    for i in lir.insts(block):
        if (i.op == "bar" and not i.attr("arrive") and i.srcs and isinstance(i.srcs[0], lir.Reg)
                and i.srcs[0] not in found):  # fmt: skip
            found.append(i.srcs[0])
    return found


def _run_coresident(launch: _Launch, full, check_races: bool, size: int, limit: int):
    """Every CTA of a kernel that spins on another's writes (`spins`), side by side as
    strands of one scheduler, as a co-resident (`@persistent`) grid runs on the card: a
    CTA whose spin finds nothing changed hands the turn on (`_CTA.loop`). One after
    another, the first would wait for good for the others' arrival at a grid barrier."""
    from phobos.interp.threads_strands import Scheduler

    order = list(itertools.product(range(full[2]), range(full[1]), range(full[0])))
    if check_races:  # each CTA its own epochs and shared memory
        launch.recorders = [RaceRecorder(size, launch.kernel.shared, limit) for _ in order]
    scheduler = Scheduler()
    ctas = []
    for k, (z, y, x) in enumerate(order):
        cluster = Cluster(1, launch.kernel.threads)
        cluster.strands = scheduler
        ctas.append(_CTA(launch, (x, y, z), cluster, slot=k))
    launch.coresident = True
    with np.errstate(all="ignore"):
        try:
            scheduler.fork([cta.run for cta in ctas])
        finally:
            scheduler.close()
    races, found = _races(launch.recorders, limit)
    return RunReport(len(ctas), launch.barriers, races, found)


def _walkers(kernel: lir.Kernel, blocks: int, walkers: int | None) -> int:
    """The CTAs a walking kernel runs on: `walkers`, or by default `WALKERS` or two
    clusters, whichever is more; no more than the blocks, in whole clusters."""
    c = kernel.cluster
    most = -(-blocks // c) * c
    if not walkers:
        walkers = -(-max(WALKERS, 2 * c) // c) * c
    elif walkers % c:
        raise InterpError(f"{walkers} walking CTAs are not a whole number of the kernel's "
                          f"clusters of {c} CTAs", kernel.span)  # fmt: skip
    return min(walkers, most)


def _races(recorders, limit: int) -> tuple[tuple[RacePair, ...], int]:
    """The races the recorders kept, each pair of instructions once (as one recorder keeps
    them), at most `limit`; and the racing bytes of them all."""
    races, seen = [], set()
    for rec in recorders:
        for r in rec.races:
            key = (r.kind, id(r.inst_a), id(r.inst_b))
            if key not in seen and len(races) < limit:
                seen.add(key)
                races.append(r)
    return tuple(races), sum(rec.found for rec in recorders)


def _param_value(p: lir.Param, value, kernel):
    try:
        if isinstance(value, np.generic) and value.dtype.kind == "f" and lir.is_int(p.type):
            if value.dtype.itemsize != lir.WIDTH[p.type]:
                raise InterpError(f"a {value.dtype} does not fill a {p.type} slot")
            return bits_of(np.asarray(value), {2: "f16", 4: "f32", 8: "f64"}[value.itemsize])[()]
        if isinstance(value, (bool, np.bool_)):
            value = int(value)
        if isinstance(value, np.generic):
            value = value.item()
        return immediate(value, p.type)
    except InterpError as exc:
        raise InterpError(f"parameter `{p.name}`: {exc.message}", kernel.span) from None


class _Launch:
    """What every CTA of one run shares."""

    def __init__(self, kernel, grid, params, memory, smem, max_iterations):
        self.kernel = kernel
        self.grid = grid
        self.params = params
        self.memory = memory
        self.smem = smem
        self.max_iterations = max_iterations
        self.max_seconds = 10.0  # run_lir sets `phobos.interp.tiles.loop_seconds()`
        self.recorders: list[RaceRecorder] = []  # with check_races: one per cluster rank
        self.barriers = 0
        self.coresident = False  # every CTA side by side (`_run_coresident`)
        self.spinning: dict[int, bool] = {}  # a `Loop`'s id -> whether it waits on global
        self.barrier_regs: dict[int, list] = {}  # a `For`'s id -> `_barrier_regs` of its body


class _Loop:
    """The threads that left a loop (`broken`) or this iteration (`continued`)."""

    def __init__(self, threads: int):
        self.broken = np.zeros(threads, bool)
        self.continued = np.zeros(threads, bool)


class _CTA(
    InstOps, MemoryOps, WarpOps, AsyncOps, TensorOps, HopperOps, WgmmaOps, StoreOps, ClusterOps
):
    """One CTA's run: its registers, shared memory and active threads."""

    def __init__(self, launch: _Launch, ctaid, cluster: Cluster, slot: int | None = None):
        self.launch = launch
        self.kernel = launch.kernel
        self.ctaid = ctaid
        self.cluster = cluster
        self.rank = ctaid[0] % cluster.size
        self.exited = False
        self.T = launch.kernel.threads
        self.tid = np.arange(self.T, dtype=np.int64)
        self.regs: dict[str, np.ndarray] = {}
        self.returned = np.zeros(self.T, bool)
        self.smem = np.full(launch.smem, SHARED_FILL, np.uint8)
        self.local = np.zeros((self.T, 0), np.uint8)
        self.commits = np.zeros(self.T, np.int64)  # cp_async_commits per thread
        self.copies: list[Copy] = []  # asynchronous copies in flight
        for p in self.kernel.params:
            self.regs[p.name] = np.full(self.T, launch.params[p.name], DTYPE[p.type])
        # a recorder a cluster rank, or a CTA of a co-resident grid (its `slot`)
        index = self.rank if slot is None else slot
        self.recorder = launch.recorders[index] if launch.recorders else None
        if self.recorder is not None:
            self.recorder.new_cta(ctaid)
        self.hopper_setup()  # mbarriers, bulk copies, strands (threads_hopper)
        self.wgmma_setup()  # warpgroups' fences and groups in flight (threads_wgmma)
        self.stores_setup()  # TMA stores and their bulk groups (threads_stores)

    # -- registers -----------------------------------------------------------

    def reg(self, r: lir.Reg):
        arr = self.regs.get(r.name)
        if arr is None:
            arr = self.regs[r.name] = np.zeros(self.T, DTYPE[r.type])
        return arr

    def value(self, v: lir.Value, t: str):
        """Operand `v` read as type `t`: an array over the CTA's threads."""
        if isinstance(v, lir.Imm):
            if lir.is_float(v.type) and lir.is_float(t):
                val = immediate(v.value, t)
            else:
                val = reinterpret(immediate(v.value, v.type), v.type, t, f"`{v}`")
            return np.full(self.T, val, DTYPE[t])
        if self.wgmma_on:
            self.wgmma_read(v)
        return reinterpret(self.reg(v), v.type, t, f"register `{v}`")

    def write(self, r: lir.Reg, value, t: str, mask) -> None:
        """Store `value` (of type `t`) into register `r` where `mask` holds."""
        value = np.broadcast_to(np.asarray(value).astype(DTYPE[t], copy=False), (self.T,))
        value = reinterpret(value, t, r.type, f"a {t} result written to `{r}`")
        if self.wgmma_on:
            self.wgmma_wrote(r, mask)
        arr = self.reg(r)
        arr[mask] = value[mask]

    # -- control -------------------------------------------------------------

    def run(self) -> None:
        with self.running():
            self.block(self.kernel.body, np.ones(self.T, bool), None)
        if self.wgmma_on:
            self.wgmma_end()
        self.stores_end()
        self.exited = True

    def block(self, block: lir.Block, mask, loop: _Loop | None) -> None:
        """Run `block`'s items for the threads of `mask` still running."""
        for item in block.items:
            eff = mask & ~self.returned
            if loop is not None:
                eff &= ~(loop.broken | loop.continued)
            if not eff.any():
                return
            if isinstance(item, lir.Inst):
                self.inst(item, eff)
            elif isinstance(item, lir.If):
                cond = self.value(item.cond, "pred")
                then, orelse = eff & cond, eff & ~cond
                if self.side_by_side(item, then, orelse, loop):
                    continue
                if then.any():
                    self.block(item.then, then, loop)
                if item.orelse is not None and orelse.any():
                    self.block(item.orelse, orelse, loop)
            elif isinstance(item, lir.For):
                self.for_(item, eff)
            elif isinstance(item, lir.Loop):
                self.loop(item, eff)
            elif isinstance(item, (lir.Break, lir.Continue, lir.Return)):
                leaving = eff
                if item.cond is not None:
                    cond = self.value(item.cond, "pred")
                    leaving = eff & (~cond if item.negated else cond)
                if isinstance(item, lir.Return):
                    self.returned |= leaving
                elif loop is None:
                    raise InterpError(f"`{type(item).__name__.lower()}` outside a loop")
                elif isinstance(item, lir.Break):
                    loop.broken |= leaving
                else:
                    loop.continued |= leaving
            else:
                raise InterpError(f"not a lir item: {item!r}")

    def _waits(self, item: lir.Loop) -> bool:
        found = self.launch.spinning.get(id(item))
        if found is None:
            found = self.launch.spinning[id(item)] = _acquires(item.body, True)
        return found

    def _spin(self, item: lir.Loop) -> None:
        """A turn of a loop waiting on another block's write found it not yet there: the
        other blocks run; the wait is a hang when none of them can write anything."""
        span = item.span
        where = f" at line {span.source.line_col(span.start)[0]}" if span is not None else ""
        what = f"block {self.ctaid} spinning{where}"

        def hang(others: str) -> InterpError:
            also = f"; also stuck: {others}" if others else ""
            return InterpError(
                f"block {self.ctaid} waits for a write no other block can make (every block "
                f"of the grid is waiting or done){also}",
                item.span,
            )

        self.strands.spin(what, hang)

    def _count(self, n: int, span, started: float) -> None:
        if n > self.launch.max_iterations:
            raise InterpError(
                f"the loop ran past {self.launch.max_iterations} iterations: it looks endless",
                span,
            )
        if n % 64 == 0 and time.thread_time() - started > self.launch.max_seconds:
            from phobos.interp.tiles import LOOP_SECONDS_VAR

            raise InterpError(
                f"the loop ran past {self.launch.max_seconds:g} seconds ({n} iterations): "
                f"it looks endless; `{LOOP_SECONDS_VAR}` raises the limit",
                span,
            )

    def for_(self, item: lir.For, eff) -> None:
        """Run a `for` for the threads of `eff`. Where the kernel runs strands and the
        body waits at barriers its threads name by a register (warpgroups taking turns,
        `phobos.lower.pingpong`), the threads naming different barriers run the loop as
        strands of their own, as their warps would: in lockstep, one group would wait
        at its barrier for an arrival only the other group, held in the same step, could
        make."""
        if self.strands is not None:
            groups = self._by_barrier(item, eff)
            if len(groups) > 1:
                self.strands.fork([lambda g=g: self._for(item, g) for g in groups])
                return
        self._for(item, eff)

    def _by_barrier(self, item: lir.For, eff) -> list:
        """`eff` split by the values of the registers naming the body's barriers."""
        regs = self.launch.barrier_regs.get(id(item))
        if regs is None:
            regs = self.launch.barrier_regs[id(item)] = _barrier_regs(item.body)
        if not regs:
            return [eff]
        keys = np.stack([self.value(r, "u32") for r in regs], axis=1)
        groups = []
        for key in np.unique(keys[eff], axis=0):
            groups.append(eff & (keys == key).all(axis=1))
        return groups

    def _for(self, item: lir.For, eff) -> None:
        var, t = item.var, item.var.type
        self.write(var, self.value(item.lo, t), t, eff)
        frame = _Loop(self.T)
        inside = eff.copy()
        n, started = 0, time.thread_time()
        while True:
            inside &= ~self.returned & ~frame.broken
            inside &= compare("lt", t, self.reg(var), self.value(item.hi, t))
            if not inside.any():
                return
            n += 1
            self._count(n, item.span, started)
            frame.continued[:] = False
            self.block(item.body, inside, frame)
            if self.launch.coresident and self._waits(item) and (inside & ~frame.broken).any():
                self._spin(item)
            inside &= ~frame.broken & ~self.returned
            stepped = arith("add", t, [self.value(var, t), self.value(item.step, t)])
            self.write(var, stepped, t, inside)

    def loop(self, item: lir.Loop, eff) -> None:
        frame = _Loop(self.T)
        inside = eff.copy()
        n, started = 0, time.thread_time()
        while True:
            inside &= ~self.returned & ~frame.broken
            if not inside.any():
                return
            n += 1
            self._count(n, item.span, started)
            frame.continued[:] = False
            self.block(item.body, inside, frame)
            if self.launch.coresident and self._waits(item) and (inside & ~frame.broken).any():
                self._spin(item)
