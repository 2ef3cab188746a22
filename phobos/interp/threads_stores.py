"""TMA stores in the threads interpreter: `tma_store` and its bulk groups (`bulk_commit`,
`bulk_wait`). (`stmatrix`, warp-collective like ldmatrix, is in `threads_tensor`.)

A `tma_store` copies its tensor map's box from shared memory to global memory. It reads
the box when it is issued, each 16-byte chunk from where the map's swizzle put it
(`threads_hopper.swizzled`, the inverse of a TMA load's placement), and writes the box's
elements that lie inside the tensor; those past its edges are dropped, never written. The
source is 128-byte aligned and the box's first column on a 16-byte boundary, as for a
load; unlike a load's, a store's coordinates are never negative (the H200 stops with an
illegal-instruction fault on one, while it clips a box past the right and bottom edges).

Each thread has an open group of stores and the groups it has committed, numbered by its
`bulk_commit`s at issue (as `threads_async` numbers cp_async groups). `bulk_wait
pending=N` completes every committed group of the waiting thread but its N newest; the
open group is never waited for. With `read=1` a completed group has read its source (the
shared bytes may be written again) but its global writes are not yet visible; without,
they land, in issue order. Writes still pending land when the CTA ends.

With `check_races`, a write or atomic by any thread to shared bytes a store reads, before
the issuing thread's wait completes the store's group, is an `async/write` race
(`phobos.interp.races`); the store's own read counts as the issuing thread's, in the
epoch it is issued in. A CTA that ends while a store still reads its source (its group
not completed by a `bulk_wait`, with `read=1` or without, or never committed) stops the
run with an error at the store: the card would free the shared memory under it, so a
kernel waits `bulk_wait  [pending=0, read=1]` before it exits.

Not checked: that generic-proxy writes (st.shared, stmatrix) a store reads are ordered
before it by `fence.shared  [proxy=async]`; the interpreter's shared memory has one
proxy (as for wgmma's operands, `threads_wgmma`). Global memory is not race-checked.

    >>> BulkStore.__dataclass_fields__.keys() >= {"group", "read_done"}
    True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from phobos.interp.errors import InterpError
from phobos.interp.threads_hopper import swizzled
from phobos.lower import lir
from phobos.lower.types import BYTES


@dataclass
class BulkStore:
    """One thread's TMA store: its source bytes, and what lands where in global memory."""

    inst: lir.Inst
    thread: int
    group: int  # the thread's bulk_commits when it issued the store
    source: np.ndarray  # the shared byte offsets it reads
    target: np.ndarray | None  # a view of the tensor's bytes it writes (None: nothing)
    data: np.ndarray | None  # the bytes for `target`
    read_done: bool = False


class StoreOps:
    """The TMA-store half of a CTA's run (mixed into the CTA)."""

    def stores_setup(self) -> None:
        self.bulk_commits = np.zeros(self.T, np.int64)
        self.stores: list[BulkStore] = []

    def do_tma_store(self, i: lir.Inst, mask) -> None:
        threads = np.nonzero(mask)[0]
        maps = self.value(i.srcs[0], "u64")[threads]
        xs = self.value(i.srcs[1], "s32")[threads].astype(np.int64)
        ys = self.value(i.srcs[2], "s32")[threads].astype(np.int64)
        srcs = self.value(i.srcs[3], "u32")[threads].astype(np.int64)
        for t, a, x, y, s in zip(*(v.tolist() for v in (threads, maps, xs, ys, srcs)), strict=True):
            self.stores.append(self._store(i, t, self._tmap(t, int(a), "store"), x, y, s))

    def _store(self, i: lir.Inst, t: int, m: lir.TensorMap, x: int, y: int, s: int):
        size = BYTES[m.elem]
        n = m.box[0] * m.box[1] * size
        if s % 128:
            raise InterpError(f"thread {t}: a TMA store reads shared offset {s}, which is not "
                              "128-byte aligned", i.span)  # fmt: skip
        source = swizzled(s + np.arange(n), m.swizzle)
        if int(source.max()) >= self.smem.size:
            raise InterpError(f"thread {t}: a TMA store of {n} bytes from shared offset {s} "
                              f"reads past the {self.smem.size} bytes of shared memory", i.span)  # fmt: skip
        if (x * size) % 16:
            raise InterpError(f"thread {t}: a TMA box starts at column {x} of `{m.name}`, "
                              f"{x * size} bytes into its rows: not on a 16-byte boundary",
                              i.span)  # fmt: skip
        if x < 0 or y < 0:  # seen on the H200: an illegal-instruction fault, not a clip
            raise InterpError(f"thread {t}: a TMA store's box starts at column {x}, row {y} "
                              f"of `{m.name}`: a store's coordinates are not negative (the "
                              "card faults; past the right and bottom edges it clips)", i.span)  # fmt: skip
        box = self.smem[source].reshape(m.box[0], m.box[1] * size)
        if self.recorder is not None:
            self.recorder.store_reading(i, t, source)
        tensor = self.tensor_of(t, m)
        rows, cols = tensor.shape[0], tensor.shape[1] // size
        r0, r1 = max(y, 0), min(y + m.box[0], rows)
        c0, c1 = max(x, 0), min(x + m.box[1], cols)
        target = data = None
        if r0 < r1 and c0 < c1:  # only the part inside the tensor is written
            target = tensor[r0:r1, c0 * size : c1 * size]
            data = box[r0 - y : r1 - y, (c0 - x) * size : (c1 - x) * size].copy()
        return BulkStore(i, t, int(self.bulk_commits[t]), source, target, data)

    def do_bulk_commit(self, i: lir.Inst, mask) -> None:
        self.bulk_commits[mask] += 1

    def do_bulk_wait(self, i: lir.Inst, mask) -> None:
        pending = i.attr("pending")
        if not isinstance(pending, int) or isinstance(pending, bool) or pending < 0:
            raise InterpError(f"`bulk_wait` needs a `pending` count from 0, not {pending!r}")
        read_only = bool(i.attr("read", 0))
        retire = self.bulk_commits - pending  # a thread's groups below are complete
        recorder = self.recorder
        still = []
        for store in self.stores:
            if mask[store.thread] and store.group < retire[store.thread]:
                if not store.read_done and recorder is not None:
                    recorder.store_read(store.source)
                store.read_done = True
                if not read_only:
                    self._land_store(store)
                    continue
            still.append(store)
        self.stores = still
        if recorder is not None:  # bytes another store still reads stay guarded
            for store in still:
                if not store.read_done:
                    recorder.store_reading(store.inst, store.thread, store.source, issued=False)

    def _land_store(self, store: BulkStore) -> None:
        if store.target is not None:
            store.target[...] = store.data

    def stores_end(self) -> None:
        """The CTA's end: every store must have read its source; pending writes land."""
        for store in self.stores:
            if not store.read_done:
                committed = store.group < self.bulk_commits[store.thread]
                why = ("no `bulk_wait` completed its group" if committed
                       else "its group was never committed (`bulk_commit`)")  # fmt: skip
                raise InterpError(
                    f"block {self.ctaid} ends while thread {store.thread}'s "
                    f"`{lir.print_item(store.inst).strip()}` may still read shared memory: "
                    f"{why}; wait with `bulk_wait  [pending=0, read=1]` before the end",
                    store.inst.span,
                )
        for store in self.stores:
            self._land_store(store)
        self.stores = []
