r"""Hopper's asynchronous ops in the threads interpreter: mbarriers, bulk copies,
`elect_sync`, named barriers and `setmaxnreg`.

An mbarrier (at an 8-byte aligned shared offset) holds its expected arrival count, the
arrivals still pending in the current phase, a transaction count in bytes, and how many
phases have completed. `mbarrier_init` sets them; each arriving thread takes one
pending arrival (`mbarrier_arrive_expect_tx` first adds its bytes to the transaction
count); a bulk copy's bytes, when they land, take theirs off. The phase completes when
both reach 0: the count of completed phases goes up and the pending arrivals are reset.
The state token is the number of the phase arrived on. `mbarrier_try_wait_parity p` is
true when the phase of parity `p` has completed, that is when the count of completed
phases has the other parity (so a wait for parity 1 on a fresh mbarrier passes, as on
the card: it names the phase before the first).

A TMA load (`tma_load`) is a bulk copy of its tensor map's box (`lir.Kernel.maps`, the
tensor and extents read from the launch's parameters), elements past the tensor 0, its
16-byte chunks placed by the map's swizzle at their shared addresses (`swizzled`); with
a CTA mask it is one bulk copy into each CTA of the cluster the mask names
(`threads_cluster`).

`cp_async_bulk` reads its source when issued and lands at the latest moment the ISA
allows: when a thread waits on its mbarrier and the phase could not complete otherwise,
the copies on that mbarrier in issue order until the phase completes (a peer's multicast
for the next phase stays in flight; one landing before this CTA's `expect_tx` takes the
transaction count below 0, as PTX allows, while the pending arrival holds the phase).
Until then its bytes are in flight, and with `check_races` an access to them is an
`async/read` or `async/write` race. The ordering an mbarrier gives between threads is
not modelled by the race check, so a bulk copy's landing counts as nobody's write; the
mbarrier's own word is checked (its init a write, arrivals and waits atomics), so a
re-init racing another thread's wait on it is found.

Kernels using these run their `If` arms as strands (`phobos.interp.threads_strands`): a
`try_wait` that finds its phase incomplete lets the other arms run, and a phase that can
never complete is reported as a hang naming the instruction. `bar %id, %count` is then a
real barrier for `count` threads (multiples of 32), `[arrive=1]` arriving without
waiting; a named barrier closes the race check's epoch for the whole block, which may
hide races between threads it does not name.

    >>> from phobos.lower.lirparse import parse_kernel
    >>> uses_strands(parse_kernel("kernel k() threads=32 smem=0 {\n  bar 1:u32, 32:u32\n}"))
    True
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from phobos.interp.errors import InterpError
from phobos.interp.threads_memory import gather, scatter
from phobos.interp.threads_strands import Scheduler
from phobos.lower import lir
from phobos.lower.types import BYTES


def any_inst(kernel: lir.Kernel, test) -> bool:
    """Whether an instruction anywhere in `kernel` (in every arm and loop) meets `test`."""

    def walk(block: lir.Block) -> bool:
        for item in block.items:
            if isinstance(item, lir.Inst):
                if test(item):
                    return True
            elif isinstance(item, lir.If):
                if walk(item.then) or (item.orelse is not None and walk(item.orelse)):
                    return True
            elif isinstance(item, (lir.For, lir.Loop)) and walk(item.body):
                return True
        return False

    return walk(kernel.body)


TMAP_BASE = 0x7E00_0000_0000  # the addresses `tmap_addr` gives the kernel's tensor maps
SPANS = {"128B": 128, "64B": 64, "32B": 32}


def swizzled(offsets, mode: str):
    """Shared offsets moved by a TMA swizzle: for a span of W bytes, the 16-byte chunk
    bits 4 on are XORed with bits 7 on, as many bits as W has chunks (PTX ISA, "Tensor
    copies: swizzling modes"); `none` moves nothing.

        >>> swizzled(np.array([0, 16, 128, 144, 1040, 1168]), "128B").tolist()
        [0, 16, 144, 128, 1040, 1152]
    """
    offsets = np.asarray(offsets, np.int64)
    if mode == "none":
        return offsets
    mask = SPANS[mode] // 16 - 1
    return offsets ^ (((offsets >> 7) & mask) << 4)


# wgmma synchronises a warpgroup by itself (`threads_wgmma`): no strands for it
WGMMA_OPS = {"wgmma_mma", "wgmma_fence", "wgmma_commit", "wgmma_wait", "wgmma_desc"}


def uses_strands(kernel: lir.Kernel) -> bool:
    """Whether `kernel` synchronises by mbarriers, named barriers or the CTAs of its
    clusters (so runs as strands)."""
    return kernel.cluster > 1 or any_inst(
        kernel, lambda i: (i.op in lir.HOPPER and i.op not in WGMMA_OPS)
        or (i.op == "bar" and len(i.srcs) > 1))  # fmt: skip


@dataclass
class MBarrier:
    expected: int
    pending: int
    tx: int = 0
    phases: int = 0  # phases completed


@dataclass
class Bulk:
    inst: lir.Inst
    thread: int
    offset: int
    data: np.ndarray
    bar: int


@dataclass
class Named:
    """A named barrier filling up: threads arrived and the strands waiting at it."""

    count: int
    arrived: int = 0
    waiting: list = field(default_factory=list)


class HopperOps:
    """The Hopper half of a CTA's run (mixed into the CTA)."""

    def hopper_setup(self) -> None:
        # a cluster's CTAs take turns on its scheduler (`threads_cluster`); one alone, its own
        self.own_strands = self.cluster.strands is None
        if self.own_strands:
            self.strands = Scheduler() if uses_strands(self.kernel) else None
        else:
            self.strands = self.cluster.strands
        self.mbarriers: dict[int, MBarrier] = {}
        self.inited: list[int] = []  # mbarrier words initialised, not yet fenced
        self.released: list[int] = []  # ... fenced by `fence_mbarrier_init`
        self.bulks: list[Bulk] = []
        self.named: dict[int, Named] = {}

    @contextmanager
    def running(self):
        try:
            yield
        finally:
            if self.strands is not None and self.own_strands:
                self.strands.close()

    def side_by_side(self, item: lir.If, then, orelse, loop) -> bool:
        """Run both arms of `item` as strands, if the kernel needs them and both have threads."""
        if self.strands is None or item.orelse is None or not then.any() or not orelse.any():
            return False
        self.strands.fork(
            [
                lambda: self.block(item.then, then, loop),
                lambda: self.block(item.orelse, orelse, loop),
            ]
        )
        return True

    # -- mbarriers -----------------------------------------------------------

    def _hop_where(self, i: lir.Inst, mask, k: int = 0) -> tuple[np.ndarray, np.ndarray]:
        threads = np.nonzero(mask)[0]
        return threads, self.value(i.srcs[k], "u32")[threads].astype(np.int64)

    def _mbar(self, i: lir.Inst, thread: int, offset: int, init: bool = False,
              whose: str = "") -> MBarrier:  # fmt: skip
        """The mbarrier at `offset`; `whose` names its block where `thread` is a peer's."""
        if offset % 8 or offset + 8 > self.smem.size:
            raise InterpError(f"thread {thread}: an mbarrier at shared offset {offset}{whose} "
                              "is not an aligned 8-byte word of shared memory")  # fmt: skip
        bar = self.mbarriers.get(offset)
        if bar is None and not init:
            raise InterpError(f"thread {thread}: the mbarrier at shared offset {offset}{whose} "
                              "is used before `mbarrier_init`")  # fmt: skip
        return bar

    def _moved(self) -> None:
        if self.strands is not None:
            self.strands.moved()

    def _complete(self, bar: MBarrier) -> None:
        if bar.pending == 0 and bar.tx == 0:
            bar.phases += 1
            bar.pending = bar.expected

    def _race_word(self, kind: str, i: lir.Inst, threads, offsets) -> None:
        """With the race check, an mbarrier's word as the shared memory it is: its init a
        write, an arrival or a wait an atomic (those order each other, never race), so an
        init in the epoch of another thread's arrival or wait on that word is a race."""
        if self.recorder is not None:
            self.recorder.access(kind, i, threads, offsets, 8)

    def do_mbarrier_init(self, i: lir.Inst, mask) -> None:
        threads, offsets = self._hop_where(i, mask)
        self._race_word("write", i, threads, offsets)
        self.inited.extend(offsets.tolist())
        counts = self.value(i.srcs[1], "u32")[threads]
        for t, off, n in zip(threads.tolist(), offsets.tolist(), counts.tolist(), strict=True):
            self._mbar(i, t, off, init=True)
            if not 1 <= n < 1 << 20:
                raise InterpError(f"thread {t}: an mbarrier counts 1 to 2^20 - 1 arrivals, not {n}")
            if any(b.bar == off for b in self.bulks):
                raise InterpError(f"thread {t}: the mbarrier at {off} is re-initialised while "
                                  "a bulk copy completes on it")  # fmt: skip
            self.mbarriers[off] = MBarrier(n, n)
        self._moved()

    def _arrive(self, i: lir.Inst, mask, tx=None) -> None:
        threads, offsets = self._hop_where(i, mask)
        self._race_word("atomic", i, threads, offsets)
        tokens = np.zeros(self.T, np.uint64)
        for k, (t, off) in enumerate(zip(threads.tolist(), offsets.tolist(), strict=True)):
            bar = self._mbar(i, t, off)
            if bar.pending == 0:
                raise InterpError(f"thread {t} arrives on the mbarrier at {off}, whose phase "
                                  "has no arrival left pending")  # fmt: skip
            if tx is not None:
                bar.tx += int(tx[k])
            tokens[t] = bar.phases
            bar.pending -= 1
            self._complete(bar)
        if i.dests:
            self.write(i.dests[0], tokens, "b64", mask)
        self._moved()

    def do_mbarrier_arrive(self, i: lir.Inst, mask) -> None:
        self._arrive(i, mask)

    def do_mbarrier_arrive_expect_tx(self, i: lir.Inst, mask) -> None:
        self._arrive(i, mask, self.value(i.srcs[1], "u32")[mask])

    def do_fence_mbarrier_init(self, i: lir.Inst, mask) -> None:
        """Orders the inits for the async proxy; the interpreter's memory is in order.
        For the race check the inits before it are released: a relaxed cluster barrier
        after it orders them (`threads_cluster`), as it orders no other write."""
        self.released.extend(self.inited)
        self.inited = []

    def do_mbarrier_try_wait_parity(self, i: lir.Inst, mask) -> None:
        threads, offsets = self._hop_where(i, mask)
        self._race_word("atomic", i, threads, offsets)
        parity = self.value(i.srcs[1], "u32")[threads] & np.uint32(1)
        done = np.zeros(self.T, bool)
        for k, (t, off) in enumerate(zip(threads.tolist(), offsets.tolist(), strict=True)):
            bar = self._mbar(i, t, off)
            if bar.phases % 2 == int(parity[k]):
                self._land(off)  # as late as possible: only when the wait needs the bytes
            done[t] = bar.phases % 2 != int(parity[k])
        self.write(i.dests[0], done, "pred", mask)
        if self.strands is not None and not done[threads].all():
            t = int(threads[~done[threads]][0])
            off = int(offsets[~done[threads]][0])
            bar = self.mbarriers[off]
            state = (f"phase {bar.phases} of the mbarrier at shared offset {off}: "
                     f"{bar.pending} arrivals and {bar.tx} transaction bytes pending")  # fmt: skip
            what = f"thread {t} at `{lir.print_item(i).strip()}` ({state})"

            def hang(others: str) -> InterpError:
                also = f"; also stuck: {others}" if others else ""
                return InterpError(
                    f"`{lir.print_item(i).strip()}` hangs: thread {t} of block {self.ctaid} "
                    f"waits for {state}, and no other thread can make progress{also}",
                    i.span,
                )

            self.strands.spin(what, hang)

    # -- bulk copies ---------------------------------------------------------

    def do_cp_async_bulk(self, i: lir.Inst, mask) -> None:
        threads, dst = self._hop_where(i, mask)
        src = self.value(i.srcs[1], "u64")[threads]
        size = self.value(i.srcs[2], "u32")[threads].astype(np.int64)
        bars = self.value(i.srcs[3], "u32")[threads].astype(np.int64)
        memory = self.launch.memory
        for t, d, s, n, b in zip(
            *(a.tolist() for a in (threads, dst, src, size, bars)), strict=True
        ):
            if n <= 0 or n % 16 or d % 16 or s % 16:
                raise InterpError(f"thread {t}: a bulk copy moves a positive multiple of 16 "
                                  f"bytes between 16-byte aligned addresses, not {n} bytes "
                                  f"from {s:#x} to shared offset {d}")  # fmt: skip
            if d + n > self.smem.size:
                raise InterpError(f"thread {t}: a bulk copy of {n} bytes to shared offset {d} "
                                  f"ends past the {self.smem.size} bytes of shared memory")  # fmt: skip
            self._mbar(i, t, b)
            index, offset, ok = memory.locate(np.array([s], np.uint64), n)
            if not ok.all():
                raise InterpError(f"thread {t}: a bulk copy reads {memory.describe(s, n)}")
            data = gather(memory.buffers[int(index[0])].data, offset, n)[0]
            if self.recorder is not None:
                self.recorder.bulk_issued(i, t, d, n)
            self.bulks.append(Bulk(i, t, d, data, b))

    # -- TMA: tensor maps and their copies -----------------------------------

    def do_tmap_addr(self, i: lir.Inst, mask) -> None:
        names = [m.name for m in self.kernel.maps]
        address = TMAP_BASE + 128 * names.index(i.attr("map"))
        self.write(i.dests[0], np.full(self.T, address, np.uint64), "u64", mask)

    def _tmap(self, thread: int, address: int, what: str = "load") -> lir.TensorMap:
        j, off = divmod(address - TMAP_BASE, 128)
        if off or not 0 <= j < len(self.kernel.maps):
            raise InterpError(f"thread {thread}: a TMA {what} names {address:#x}, not a "
                              "tensor map's address (`tmap_addr`)")  # fmt: skip
        return self.kernel.maps[j]

    def do_tma_load(self, i: lir.Inst, mask) -> None:
        threads, dst = self._hop_where(i, mask)
        maps = self.value(i.srcs[1], "u64")[threads]
        xs = self.value(i.srcs[2], "s32")[threads].astype(np.int64)
        ys = self.value(i.srcs[3], "s32")[threads].astype(np.int64)
        bars = self.value(i.srcs[4], "u32")[threads].astype(np.int64)
        multicast = len(i.srcs) == 6
        ctas = self.value(i.srcs[5], "u16")[threads] if multicast else np.zeros_like(threads)
        for t, d, a, x, y, b, k in zip(
            *(v.tolist() for v in (threads, dst, maps, xs, ys, bars, ctas)), strict=True
        ):
            m = self._tmap(t, int(a))
            n = m.box[0] * m.box[1] * BYTES[m.elem]
            if d % 128:
                raise InterpError(f"thread {t}: a TMA load writes shared offset {d}, which is "
                                  "not 128-byte aligned")  # fmt: skip
            if d + n > self.smem.size:
                raise InterpError(f"thread {t}: a TMA load of {n} bytes to shared offset {d} "
                                  f"ends past the {self.smem.size} bytes of shared memory")  # fmt: skip
            targets = self.multicast_targets(t, int(k)) if multicast else [self]
            for cta in targets:
                cta._mbar(i, t, b, whose="" if cta is self else f" of block {cta.ctaid}")
            if (x * BYTES[m.elem]) % 16:
                raise InterpError(f"thread {t}: a TMA box starts at column {x} of `{m.name}`, "
                                  f"{x * BYTES[m.elem]} bytes into its rows: not on a 16-byte "
                                  "boundary")  # fmt: skip
            box = self._box(t, m, x, y)
            data = np.zeros(n, np.uint8)
            data[swizzled(d + np.arange(n), m.swizzle) - d] = box
            for cta in targets:  # in flight in each destination until it lands there
                if cta.recorder is not None:
                    cta.recorder.bulk_issued(i, t, d, n)
                cta.bulks.append(Bulk(i, t, d, data, b))

    def _box(self, thread: int, m: lir.TensorMap, x: int, y: int) -> np.ndarray:
        """The bytes of `m`'s box at column `x`, row `y`, row-major, 0 past the tensor."""
        size = BYTES[m.elem]
        tensor = self.tensor_of(thread, m)
        rows, cols = tensor.shape[0], tensor.shape[1] // size
        out = np.zeros((m.box[0], m.box[1] * size), np.uint8)
        r0, r1 = max(y, 0), min(y + m.box[0], rows)
        c0, c1 = max(x, 0), min(x + m.box[1], cols)
        if r0 < r1 and c0 < c1:
            out[r0 - y : r1 - y, (c0 - x) * size : (c1 - x) * size] = \
                tensor[r0:r1, c0 * size : c1 * size]  # fmt: skip
        return out.reshape(-1)

    def tensor_of(self, thread: int, m: lir.TensorMap) -> np.ndarray:
        """The bytes of `m`'s tensor, (rows, row bytes): a view of global memory."""
        size = BYTES[m.elem]
        rows, cols = (d if isinstance(d, int) else int(self.launch.params[d]) for d in m.dims)
        base = int(self.launch.params[m.tensor])
        if base % 16 or (cols * size) % 16:
            raise InterpError(f"thread {thread}: tensor map `{m.name}` of `{m.tensor}` needs a "
                              "16-byte aligned base and rows a multiple of 16 bytes, not "
                              f"{base:#x} and {cols * size} bytes")  # fmt: skip
        memory = self.launch.memory
        whole = rows * cols * size
        index, offset, ok = memory.locate(np.array([base], np.uint64), whole)
        if whole and not ok.all():
            raise InterpError(f"thread {thread}: tensor map `{m.name}` covers "
                              f"{memory.describe(base, whole)}")  # fmt: skip
        if not whole:
            return np.zeros((rows, cols * size), np.uint8)
        tensor = memory.buffers[int(index[0])].data[int(offset[0]) : int(offset[0]) + whole]
        return tensor.reshape(rows, cols * size)

    def _land(self, bar_offset: int) -> None:
        """Land the bulk copies completing on the mbarrier at `bar_offset`, in issue order,
        until its phase completes: a copy after that is for a later phase (a peer's
        multicast may run ahead of this CTA's wait) and stays in flight."""
        bar = self.mbarriers[bar_offset]
        phase = bar.phases
        still = []
        for copy in self.bulks:
            if copy.bar != bar_offset or bar.phases != phase:
                still.append(copy)
                continue
            n = copy.data.size
            scatter(self.smem, np.array([copy.offset]), copy.data[None, :])
            if self.recorder is not None:
                self.recorder.bulk_landed(copy.offset, n)
            bar.tx -= n
            self._complete(bar)
            self._moved()
        if self.recorder is not None and len(still) < len(self.bulks):
            for copy in still:  # bytes a later copy has in flight stay so
                self.recorder.bulk_issued(copy.inst, copy.thread, copy.offset, copy.data.size)
        self.bulks = still

    # -- warps and warpgroups ------------------------------------------------

    def _whole(self, i: lir.Inst, mask, size: int, what: str) -> None:
        running = ~self.returned
        for g in np.unique(self.tid[mask] // size).tolist():
            part = slice(g * size, (g + 1) * size)
            if (mask[part] != running[part]).any() or part.stop > self.T:
                raise InterpError(f"`{i.op}` is run by part of {what} {g}: all its threads "
                                  "run it together")  # fmt: skip

    def do_elect_sync(self, i: lir.Inst, mask) -> None:
        self._whole(i, mask, 32, "warp")
        lanes = self.tid % 32
        warps = self.tid // 32
        chosen = np.zeros(self.T, bool)
        leader = np.zeros(self.T, np.uint32)
        for w in np.unique(warps[mask]).tolist():
            first = int(np.nonzero(mask & (warps == w))[0][0])  # the lowest lane leads
            chosen[first] = True
            leader[warps == w] = lanes[first]
        self.write(i.dests[0], chosen, "pred", mask)
        if len(i.dests) == 2:
            self.write(i.dests[1], leader, "u32", mask)

    def do_setmaxnreg(self, i: lir.Inst, mask) -> None:
        regs = i.attr("regs")
        if not isinstance(regs, int) or not 24 <= regs <= 256 or regs % 8:
            raise InterpError(f"`setmaxnreg` sets a multiple of 8 registers from 24 to 256, "
                              f"not {regs!r}")  # fmt: skip
        self._whole(i, mask, 128, "warpgroup")

    # -- barriers ------------------------------------------------------------

    def do_barrier(self, i: lir.Inst, mask) -> None:
        if self.strands is None:
            return self.do_bar(i, mask)
        ids = self.value(i.srcs[0], "u32")[mask] if i.srcs else np.zeros(1, np.uint32)
        if np.unique(ids).size != 1:
            raise InterpError("`bar` names different barriers in one warp's threads")
        bid = int(ids[0])
        running = int((~self.returned).sum())
        if len(i.srcs) > 1:
            counts = np.unique(self.value(i.srcs[1], "u32")[mask])
            count = int(counts[0])
            if counts.size != 1 or count % 32 or count == 0:
                raise InterpError(f"`bar` counts a positive multiple of 32 threads, not {counts}")
        elif i.attr("arrive"):
            raise InterpError("`bar` arrives without a thread count")
        else:
            count = running
        state = self.named.setdefault(bid, Named(count))
        if state.count != count:
            raise InterpError(f"barrier {bid} is used for {count} threads while {state.arrived} "
                              f"of {state.count} have arrived")  # fmt: skip
        state.arrived += int(mask.sum())
        if state.arrived > count:
            raise InterpError(f"{state.arrived} threads arrive at barrier {bid}, "
                              f"which counts {count}")  # fmt: skip
        if state.arrived == count:
            del self.named[bid]
            self.launch.barriers += 1
            if self.recorder is not None:
                self.recorder.barrier()
            self.strands.release(state.waiting)
            return
        self.strands.moved()
        if i.attr("arrive"):
            return
        text = lir.print_item(i).strip()
        what = f"{int(mask.sum())} threads at `{text}` ({state.arrived} of {count} arrived)"

        def hang(others: str) -> InterpError:
            also = f"; also stuck: {others}" if others else ""
            return InterpError(
                f"`{text}` hangs: barrier {bid} of block {self.ctaid} waits for {count} "
                f"threads, {state.arrived} arrived, and no other thread can reach it{also}",
                i.span,
            )

        state.waiting.append(self.strands.current)
        self.strands.block(what, hang)
