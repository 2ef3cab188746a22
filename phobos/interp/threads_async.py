"""Asynchronous copies of the threads interpreter: `cp_async` and its groups.

Each thread has an open group of copies and, before it, the groups it has committed,
numbered by how many `cp_async_commit`s the thread had run when it issued them. A
`cp_async` reads its source when it is issued (an address outside every buffer stops the
run there, at its span) but writes shared memory only when a `cp_async_wait` of the
issuing thread retires its group: `pending=N` retires every committed group except the
N newest, so `pending=0` waits for all of them; the open group is never waited for
(PTX's `cp.async.wait_group`). Until then shared memory keeps its old bytes, and with
`check_races` any access to them is reported (`phobos.interp.races`). A copy never
waited for never lands. Retired copies land in the order they were issued.

Only the first `n` bytes of a copy with a source size `n` are read; the rest are zeros,
and with `n` 0 the source address is never touched: that is how a tile read past the end
of a tensor is 0. Both addresses are aligned to the copy's size.

    >>> SIZES
    (4, 8, 16)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from phobos.interp.errors import InterpError
from phobos.interp.threads_memory import gather, scatter
from phobos.lower import lir

SIZES = (4, 8, 16)


@dataclass
class Copy:
    """The copies one `cp_async` started, one row per issuing thread still in flight."""

    inst: lir.Inst
    threads: np.ndarray  # the issuing threads
    groups: np.ndarray  # each copy's group: the thread's commits when it issued it
    offsets: np.ndarray  # shared byte offsets
    data: np.ndarray  # (threads, size) bytes to land


class AsyncOps:
    """The asynchronous-copy half of a CTA's run (mixed into the CTA, which holds
    `commits`, one count per thread, and `copies`, the copies in flight)."""

    def do_cp_async(self, i: lir.Inst, mask) -> None:
        size = i.attr("size")
        if size not in SIZES:
            raise InterpError(f"`cp_async` copies 4, 8 or 16 bytes, not {size}")
        if len(i.srcs) not in (2, 3):
            raise InterpError("`cp_async` takes a shared and a global address, then a size")
        dst_reg, src_reg = i.srcs[:2]
        threads = np.nonzero(mask)[0]
        dst = self.value(dst_reg, dst_reg.type)[threads].astype(np.uint64)
        src = self.value(src_reg, "u64")[threads]
        if len(i.srcs) == 3:
            n = self.value(i.srcs[2], "u32")[threads].astype(np.int64)
        else:
            n = np.full(threads.size, size, np.int64)

        def fault(k: int, says: str) -> InterpError:
            text = lir.print_item(i).strip()
            return InterpError(
                f"`{text}`: thread {threads[k]} of block {self.ctaid} {says}", i.span
            )

        for bad, says in (
            (n > size, "reads {n} source bytes for a {size}-byte copy"),
            (dst % np.uint64(size) != 0, "copies {size} bytes to misaligned shared offset {dst}"),
            (src % np.uint64(size) != 0, "copies {size} bytes from misaligned address {src:#x}"),
            (
                dst + np.uint64(size) > np.uint64(self.smem.size),
                "copies {size} bytes to shared offset {dst}, past the {smem} bytes of shared "
                "memory",
            ),
        ):
            if bad.any():
                k = int(np.argmax(bad))
                facts = {"n": int(n[k]), "dst": int(dst[k]), "src": int(src[k])}
                raise fault(k, says.format(size=size, smem=self.smem.size, **facts))
        data = np.zeros((threads.size, size), np.uint8)
        memory = self.launch.memory
        for m in np.unique(n[n > 0]).tolist():
            rows = np.nonzero(n == m)[0]
            index, offset, ok = memory.locate(src[rows], m)
            if not ok.all():
                k = int(np.argmax(~ok))
                raise fault(int(rows[k]), f"reads {memory.describe(int(src[rows[k]]), m)}")
            for b in np.unique(index).tolist():
                picked = index == b
                data[rows[picked], :m] = gather(memory.buffers[b].data, offset[picked], m)
        offsets = dst.astype(np.int64)
        if self.recorder is not None:
            self.recorder.copy_issued(i, threads, offsets, size)
        self.copies.append(Copy(i, threads, self.commits[threads].copy(), offsets, data))

    def do_cp_async_commit(self, i: lir.Inst, mask) -> None:
        self.commits[mask] += 1

    def do_cp_async_wait(self, i: lir.Inst, mask) -> None:
        pending = i.attr("pending")
        if not isinstance(pending, int) or isinstance(pending, bool) or pending < 0:
            raise InterpError(f"`cp_async_wait` needs a `pending` count from 0, not {pending!r}")
        # A thread's groups below `retire` are complete after the wait.
        retire = self.commits - pending
        still = []
        for copy in self.copies:
            done = mask[copy.threads] & (copy.groups < retire[copy.threads])
            if done.any():
                size = copy.data.shape[1]
                scatter(self.smem, copy.offsets[done], copy.data[done])
                if self.recorder is not None:
                    self.recorder.copy_landed(
                        copy.inst, copy.threads[done], copy.offsets[done], size
                    )
                left = ~done
                copy = Copy(
                    copy.inst,
                    copy.threads[left],
                    copy.groups[left],
                    copy.offsets[left],
                    copy.data[left],
                )
            if copy.threads.size:
                still.append(copy)
        self.copies = still
