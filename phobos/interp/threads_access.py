"""Loads, stores and atomics of the threads interpreter, in every memory space.

An access is `vec` values of the instruction's type at one address per thread, aligned
to its whole size. Global addresses are decoded to (buffer, offset) by `GlobalMemory`;
shared addresses are byte offsets into the CTA's shared memory; local addresses are
offsets into the thread's own bytes (which grow as they are touched); a `param` load
reads the parameter its address register names. An access outside its space, or
misaligned, stops the run at the instruction's span. Atomics run over the active threads
one at a time in thread order, so their results are deterministic.

    >>> sorted(ATOMIC_OPS)
    ['add', 'and', 'cas', 'dec', 'exch', 'inc', 'max', 'min', 'or', 'xor']
"""

from __future__ import annotations

import numpy as np

from phobos.interp.errors import InterpError
from phobos.interp.threads_memory import gather, scatter
from phobos.interp.threads_ops import arith, bits
from phobos.interp.threads_values import DTYPE, UINT, bits_of, from_bits
from phobos.lower import lir


def _atomic(op: str, t: str, old, b, c):
    """The value an atomic `op` leaves, from `old` and its operands (arrays of one)."""
    if op in ("add", "min", "max"):
        return arith(op, t, [old, b])
    if op == "exch":
        return b
    if op == "cas":
        return np.where(bits_of(old, t) == bits_of(b, t), c, old)
    if op == "inc":  # (old >= b) ? 0 : old + 1, unsigned
        return np.where(old >= b, DTYPE[t](0), old + DTYPE[t](1)).astype(DTYPE[t])
    if op == "dec":  # (old == 0 || old > b) ? b : old - 1, unsigned
        return np.where((old == 0) | (old > b), b, old - DTYPE[t](1)).astype(DTYPE[t])
    if op in ("and", "or", "xor"):
        return bits(op, t, [old, b])
    raise InterpError(f"`atom.{op}` is not an atomic operation")


ATOMIC_OPS = ("add", "min", "max", "exch", "cas", "inc", "dec", "and", "or", "xor")


class MemoryOps:
    """The memory half of a CTA's run (mixed into the CTA)."""

    def _where(self, i: lir.Inst, mask, nbytes: int, verb: str):
        """Decode the addresses of the threads of `mask`: a list of (data, offsets, rows)
        groups, `data` a uint8 array, `rows` the positions among the active threads."""
        space = i.attr("space")
        threads = np.nonzero(mask)[0]
        addr_reg = i.srcs[0]
        addr = self.value(addr_reg, addr_reg.type)[threads].astype(np.uint64)
        addr = addr + np.uint64(int(i.attr("offset", 0)) & (2**64 - 1))
        misaligned = addr % np.uint64(nbytes) != 0
        if misaligned.any():
            k = int(np.argmax(misaligned))
            raise InterpError(
                f"`{_text(i)}`: thread {threads[k]} of block {self.ctaid} {verb} {nbytes} "
                f"bytes at misaligned address {int(addr[k]):#x}",
                i.span,
            )
        if space == "global":
            memory = self.launch.memory
            index, offset, ok = memory.locate(addr, nbytes)
            if not ok.all():
                k = int(np.argmax(~ok))
                raise InterpError(
                    f"`{_text(i)}`: thread {threads[k]} of block {self.ctaid} {verb} "
                    f"{memory.describe(int(addr[k]), nbytes)}",
                    i.span,
                )
            groups = []
            for b in np.unique(index):
                rows = np.nonzero(index == b)[0]
                groups.append((memory.buffers[int(b)].data, offset[rows], rows))
            return threads, groups
        if space == "shared":
            offset = addr.astype(np.int64)
            bad = (addr + np.uint64(nbytes)) > np.uint64(self.smem.size)
            if bad.any():
                k = int(np.argmax(bad))
                raise InterpError(
                    f"`{_text(i)}`: thread {threads[k]} of block {self.ctaid} {verb} {nbytes} "
                    f"bytes at shared offset {int(addr[k])}, past the {self.smem.size} bytes "
                    "of shared memory",
                    i.span,
                )
            return threads, [(self.smem, offset, np.arange(threads.size))]
        if space == "local":
            end = int((addr + np.uint64(nbytes)).max())
            if end > self.local.shape[1]:
                grown = np.zeros((self.T, -(-end // 256) * 256), np.uint8)
                grown[:, : self.local.shape[1]] = self.local
                self.local = grown
            flat = self.local.reshape(-1)
            offset = threads * self.local.shape[1] + addr.astype(np.int64)
            return threads, [(flat, offset, np.arange(threads.size))]
        raise InterpError(f"`{_text(i)}`: {verb} in the {space} space is not supported", i.span)

    def _record(self, kind: str, i: lir.Inst, threads, offsets, nbytes: int) -> None:
        recorder = self.recorder
        if recorder is not None and i.attr("space") == "shared":
            recorder.access(kind, i, threads, offsets, nbytes)

    def do_ld(self, i: lir.Inst, mask) -> None:
        t = self._type(i)
        vec = i.attr("vec", 1)
        width = lir.WIDTH[t]
        if i.attr("space") == "param":
            return self._ld_param(i, t, mask)
        threads, groups = self._where(i, mask, width * vec, "reads")
        words = np.zeros((threads.size, vec), UINT[width])
        for data, offsets, rows in groups:
            raw = gather(data, offsets, width * vec)
            words[rows] = np.ascontiguousarray(raw).view(UINT[width]).reshape(-1, vec)
            self._record("read", i, threads[rows], offsets, width * vec)
        values = from_bits(words, t)
        for k, dest in enumerate(i.dests):
            full = np.zeros(self.T, DTYPE[t])
            full[threads] = values[:, k]
            self.write(dest, full, t, mask)

    def _ld_param(self, i: lir.Inst, t: str, mask) -> None:
        src = i.srcs[0]
        names = {p.name for p in self.kernel.params}
        if not isinstance(src, lir.Reg) or src.name not in names:
            raise InterpError(f"`{_text(i)}`: a param load names a parameter", i.span)
        value = np.full(self.T, self.launch.params[src.name], DTYPE[src.type])
        self.write(i.dests[0], value, src.type, mask)

    def do_st(self, i: lir.Inst, mask) -> None:
        t = self._type(i)
        vec = i.attr("vec", 1)
        width = lir.WIDTH[t]
        if i.attr("space") == "param":
            raise InterpError(f"`{_text(i)}`: a kernel does not store to its parameters", i.span)
        values = [bits_of(self.value(v, t), t) for v in i.srcs[1 : 1 + vec]]
        threads, groups = self._where(i, mask, width * vec, "writes")
        words = np.stack([v[threads] for v in values], axis=1).astype(UINT[width])
        raw = np.ascontiguousarray(words).view(np.uint8).reshape(threads.size, width * vec)
        for data, offsets, rows in groups:
            self._record("write", i, threads[rows], offsets, width * vec)
            scatter(data, offsets, raw[rows])
        if self.strands is not None and i.attr("space") == "global":
            self.strands.moved()  # a spinning block of the grid may wait for it

    def do_atom(self, i: lir.Inst, mask) -> None:
        t = self._type(i)
        op = i.attr("atom")
        if op not in ATOMIC_OPS:
            raise InterpError(f"`{i.op}` needs an operation, one of {', '.join(ATOMIC_OPS)}")
        width = lir.WIDTH[t]
        operands = [self.value(v, t) for v in i.srcs[1:]]
        if len(operands) != (2 if op == "cas" else 1):
            raise InterpError(f"`{i.op}.{op}` takes {2 if op == 'cas' else 1} operand(s)")
        threads, groups = self._where(i, mask, width, "updates")
        data_of, offset_of = [None] * threads.size, np.zeros(threads.size, np.int64)
        for data, offsets, rows in groups:
            self._record("atomic", i, threads[rows], offsets, width)
            for r, off in zip(rows, offsets, strict=True):
                data_of[r], offset_of[r] = data, off
        olds = np.zeros(self.T, DTYPE[t])
        for r, thread in enumerate(threads):  # one thread after another, in thread order
            data, off = data_of[r], offset_of[r]
            old = from_bits(data[off : off + width].copy().view(UINT[width]), t)
            b = operands[0][thread : thread + 1]
            c = operands[1][thread : thread + 1] if op == "cas" else None
            new = _atomic(op, t, old, b, c)
            data[off : off + width] = np.ascontiguousarray(bits_of(new, t)).view(np.uint8)
            olds[thread] = old[0]
        if i.op == "atom" and i.dests:
            self.write(i.dests[0], olds, t, mask)
        if self.strands is not None:
            self.strands.moved()


def _text(i: lir.Inst) -> str:
    return lir.print_item(i).strip()
