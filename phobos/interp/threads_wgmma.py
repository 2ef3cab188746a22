"""wgmma in the threads interpreter: warpgroup matrix multiply-accumulate from shared
memory descriptors (or a register A), run a warpgroup at a time.

A warpgroup is 128 consecutive threads from a multiple of 128. `wgmma_mma`,
`wgmma_fence`, `wgmma_commit` and `wgmma_wait` run on whole warpgroups (every running
thread of the group, and all 128 of them); a group running one in part is an error at the
instruction, as on the card it is undefined.

`wgmma_mma` decodes its descriptors (`phobos.lower.warpgroup.Descriptor`; every thread of
the warpgroup must give the same ones, and the same scale), gathers A (64 x 16) and B
(16 x N) from shared memory by the ISA's canonical layouts and swizzles
(`warpgroup.address`), or A from the registers (`warpgroup.a_place`), and computes
`A @ B` (+ the accumulator where the scale is true) in float64, rounded once to f32,
into the registers `warpgroup.acc_place` names. The PTX rules it checks:

- a `wgmma_fence` runs before a warpgroup's first wgmma, and again after any other
  instruction writes a register a later wgmma reads (its accumulator, a register A);
- the accumulator of a wgmma in flight (not yet retired by a `wgmma_wait`) is touched by
  no other instruction: reading or writing it is an error naming the register (a wgmma
  on the same accumulator may follow: the card orders them);
- a `wgmma_commit` closes the wgmma issued since the last into a group; `wgmma_wait N`
  retires the oldest groups until N remain; the kernel may not end with one in flight.

The product is computed when issued, so the operand bytes it reads are those in shared
memory then; a write to them before the wait (a race on the card) is not detected, nor
a generic-proxy write the async proxy reads without `fence.shared [proxy=async]`. For the race
check, each element read counts as read by the warpgroup's first thread.

    >>> from phobos.lower.warpgroup import Descriptor
    >>> WgmmaOps.descriptor_word(Descriptor(0, 16, 1024, "128B"), 2048)
    4611686293305360512
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from phobos.interp.errors import InterpError
from phobos.interp.threads_hopper import WGMMA_OPS, any_inst
from phobos.interp.threads_memory import gather
from phobos.interp.threads_tensor import unpack
from phobos.lower import lir
from phobos.lower.warpgroup import WARPGROUP, Descriptor, a_place, acc_place, address


def uses_wgmma(kernel: lir.Kernel) -> bool:
    """Whether `kernel` issues a wgmma (its registers are then watched)."""
    return any_inst(kernel, lambda i: i.op in WGMMA_OPS)


@dataclass
class _Group:
    """A warpgroup's wgmma state: registers written since its last fence (None: never
    fenced), the accumulators of its open wgmma, and its committed groups in flight."""

    written: set | None = None
    open: set = field(default_factory=set)
    flight: list = field(default_factory=list)


def _text(i: lir.Inst) -> str:
    return lir.print_item(i).strip()


class WgmmaOps:
    """The wgmma half of a CTA's run (mixed into the CTA)."""

    def wgmma_setup(self) -> None:
        self.wgmma_on = uses_wgmma(self.kernel)
        self.groups: dict[int, _Group] = {}
        self.in_flight: dict[str, int] = {}  # accumulator register -> its warpgroup

    # -- watching the registers ---------------------------------------------------

    def wgmma_read(self, r: lir.Reg) -> None:
        """A read of `r` by an instruction other than a wgmma: not of one in flight."""
        if r.name in self.in_flight:
            raise InterpError(
                f"register `{r}` is the accumulator of a wgmma in flight in warpgroup "
                f"{self.in_flight[r.name]}: touched before a `wgmma_wait` retires it"
            )

    def wgmma_wrote(self, r: lir.Reg, mask) -> None:
        self.wgmma_read(r)  # nor written
        for g in np.unique(self.tid[mask] // WARPGROUP).tolist():
            state = self.groups.get(g)
            if state is not None and state.written is not None:
                state.written.add(r.name)

    def wgmma_end(self) -> None:
        if self.in_flight:
            name, g = next(iter(self.in_flight.items()))
            raise InterpError(f"the kernel ends with a wgmma in flight in warpgroup {g} "
                              f"(its accumulator `%{name}`): `wgmma_wait 0` first")  # fmt: skip

    # -- the ops --------------------------------------------------------------------

    def _warpgroups(self, i: lir.Inst, mask) -> list[int]:
        running = ~self.returned
        out = []
        for g in np.unique(self.tid[mask] // WARPGROUP).tolist():
            part = slice(g * WARPGROUP, (g + 1) * WARPGROUP)
            if part.stop > self.T or (mask[part] != running[part]).any() or not mask[part].all():
                raise InterpError(f"`{_text(i)}` runs on whole warpgroups (128 threads), but "
                                  f"warpgroup {g} of block {self.ctaid} runs it in part", i.span)  # fmt: skip
            out.append(g)
        return out

    def _group(self, g: int) -> _Group:
        return self.groups.setdefault(g, _Group())

    def do_wgmma_fence(self, i: lir.Inst, mask) -> None:
        for g in self._warpgroups(i, mask):
            self._group(g).written = set()

    def do_wgmma_commit(self, i: lir.Inst, mask) -> None:
        for g in self._warpgroups(i, mask):
            state = self._group(g)
            state.flight.append(state.open)
            state.open = set()

    def do_wgmma_wait(self, i: lir.Inst, mask) -> None:
        pending = i.attr("pending")
        for g in self._warpgroups(i, mask):
            state = self._group(g)
            while len(state.flight) > pending:
                for name in state.flight.pop(0):
                    if not any(name in later for later in (*state.flight, state.open)):
                        self.in_flight.pop(name, None)

    @staticmethod
    def descriptor_word(d: Descriptor, start) -> int:
        """The descriptor `d` with its start at shared offset `start`."""
        return Descriptor(0, d.lbo, d.sbo, d.swizzle).encode() | (int(start) >> 4 & 0x3FFF)

    def do_wgmma_desc(self, i: lir.Inst, mask) -> None:
        d = Descriptor(0, i.attr("lbo"), i.attr("sbo"), i.attr("swizzle"))
        starts = self.value(i.srcs[0], "u32").astype(np.uint64)
        word = np.uint64(d.encode()) | ((starts >> np.uint64(4)) & np.uint64(0x3FFF))
        self.write(i.dests[0], word, "u64", mask)

    def _uniform(self, i: lir.Inst, reg: lir.Value, threads, t: str, what: str):
        values = np.unique(np.asarray(self.reg(reg) if isinstance(reg, lir.Reg)
                                      else self.value(reg, t))[threads])  # fmt: skip
        if values.size != 1:
            raise InterpError(f"`{_text(i)}`: the warpgroup's threads give different {what}",
                              i.span)  # fmt: skip
        return values[0]

    def _operand(self, i: lir.Inst, word, major: str, rows: int, elem: str, threads) -> np.ndarray:
        """The `rows` x 16 operand (rows along M or N, columns along K) `word` names."""
        d = Descriptor.decode(int(word))
        if d.base_offset:
            raise InterpError(f"`{_text(i)}`: a descriptor's base offset ({d.base_offset}) is "
                              "not modelled: start each swizzle atom on its own boundary",
                              i.span)  # fmt: skip
        addr = np.array([[address(d, major, mn, k, 2) for k in range(16)] for mn in range(rows)],
                        np.int64)  # fmt: skip
        if (addr % 2).any() or addr.min() < 0 or addr.max() + 2 > self.smem.size:
            raise InterpError(f"`{_text(i)}`: its {major}-major operand at shared offset "
                              f"{d.start} reaches past the {self.smem.size} bytes of shared "
                              "memory", i.span)  # fmt: skip
        if self.recorder is not None:
            first = np.full(addr.size, threads[0], np.int64)
            self.recorder.access("read", i, first, addr.reshape(-1), 2)
        raw = gather(self.smem, addr.reshape(-1), 2)
        bits = np.ascontiguousarray(raw).view(np.uint16).reshape(rows, 16)
        return unpack(bits.astype(np.uint32), elem, 0, 2)

    def _register_a(self, regs, threads, elem: str) -> np.ndarray:
        a = np.zeros((64, 16))
        for t_local, t in enumerate(threads.tolist()):
            for r, reg in enumerate(regs):
                word = np.asarray([self.reg(reg)[t]]).view(np.uint32)
                for part in (0, 1):
                    row, col = a_place(t_local, r, part)
                    a[row, col] = unpack(word, elem, part, 2)[0]
        return a

    def do_wgmma_mma(self, i: lir.Inst, mask) -> None:
        half = i.attr("type") == "f16"  # f16 sums: two elements a b32 register
        n = len(i.dests)
        N = 4 * n if half else 2 * n
        elem = i.attr("from_type")
        regs_a = len(i.srcs) == 6 + n
        for g in self._warpgroups(i, mask):
            state = self._group(g)
            threads = np.arange(g * WARPGROUP, (g + 1) * WARPGROUP)
            if state.written is None:
                raise InterpError(f"`{_text(i)}`: warpgroup {g} issues a wgmma with no "
                                  "`wgmma_fence` before it", i.span)  # fmt: skip
            read = [*(i.srcs[:4] if regs_a else ()), *i.dests]
            stale = [r for r in read if r.name in state.written]
            if stale:
                raise InterpError(f"`{_text(i)}`: register `{stale[0]}` was written since "
                                  f"warpgroup {g}'s last `wgmma_fence`", i.span)  # fmt: skip
            if regs_a:
                a = self._register_a(i.srcs[:4], threads, elem)
            else:
                word = self._uniform(i, i.srcs[0], threads, "u64", "A descriptors")
                a = self._operand(i, word, i.attr("major_a", "K"), 64, elem, threads)
            bword = self._uniform(i, i.srcs[4 if regs_a else 1], threads, "u64", "B descriptors")
            b = self._operand(i, bword, i.attr("major_b", "K"), N, elem, threads)
            scale = bool(self._uniform(i, i.srcs[5 if regs_a else 2], threads, "pred", "scales"))
            d = a @ b.T  # (64, N): B is gathered (n, k)
            places = [[acc_place(t, r, N) for r in range(N // 2)] for t in range(WARPGROUP)]
            rows = np.array([[p[0] for p in ps] for ps in places])
            cols = np.array([[p[1] for p in ps] for ps in places])
            if half:  # the f32 accumulator's element order, two a word, the even one low
                words = np.stack([self.reg(dst)[threads] for dst in i.dests], axis=1)
                words = words.astype(np.uint32)
                parts = [(words >> np.uint32(16 * h)) & np.uint32(0xFFFF) for h in (0, 1)]
                pairs = np.stack(parts, axis=2).astype(np.uint16).view(np.float16)
                acc = pairs.reshape(WARPGROUP, N // 2).astype(np.float64)
            else:
                acc = np.stack([self.reg(dst)[threads] for dst in i.dests], axis=1)
                acc = acc.astype(np.float64)
            # The products of a k step summed exactly (as f64 here), then added to the
            # accumulator and rounded once to its type: the ISA fixes no finer order.
            out = d[rows, cols] + (acc if scale else 0.0)
            if half:
                h = out.astype(np.float16).view(np.uint16).astype(np.uint32)
                h = h.reshape(WARPGROUP, n, 2)
                out = h[:, :, 0] | (h[:, :, 1] << np.uint32(16))
            for r, dst in enumerate(i.dests):
                self.reg(dst)[threads] = out[:, r].astype(np.float32 if not half else np.uint32)
                self.in_flight[dst.name] = g
                state.open.add(dst.name)


__all__ = ["WgmmaOps", "uses_wgmma"]
