"""The shared-memory race check of the threads interpreter (`--check-races`).

Between two barriers (an *epoch*) a CTA's threads run in no order the program may rely
on, so a shared byte that one thread writes and another thread reads or writes in the
same epoch is a race: what the reader sees, or which write lands, depends on timing.
The recorder keeps, for each shared byte of the running CTA, the first thread that
wrote it, the first two distinct threads that read it and the first two that updated
it atomically (with the instruction of each); that is enough to find every such pair,
since a third thread differs from one of two distinct ones. Atomics do not race with
each other; an atomic and a plain access of another thread do.

An asynchronous copy (`cp_async`) writes its bytes at some moment between its issue and
the `cp_async_wait` of the issuing thread that retires its group, so it counts as a write
by that thread both in the epoch it is issued in and in the epoch it lands in; in between
its bytes are *in flight*, and any access to them, by any thread (the issuing one too), is
a race of kind `async/read` or `async/write`. Other threads see the bytes race-free once
the issuing thread has waited and a barrier has followed.

A TMA store (`tma_store`) reads its shared source asynchronously until the issuing
thread's `bulk_wait` (with `read=1` or without) completes its group: a write or atomic to
those bytes before then, by any thread, is an `async/write` race; reading them is not.

Global memory is not checked: a race there between threads of one CTA, or between CTAs,
is out of scope (compute-sanitizer's racecheck covers shared memory only, too).

    >>> import numpy as np
    >>> from phobos.lower.lir import Reg, inst
    >>> st = inst("st", (), (Reg("a", "u32"), Reg("v", "f32")), space="shared", type="f32")
    >>> ld = inst("ld", (Reg("w", "f32"),), (Reg("b", "u32"),), space="shared", type="f32")
    >>> rec = RaceRecorder(16)
    >>> rec.access("write", st, np.array([0, 1]), np.array([0, 4]), 4)
    >>> rec.access("read", ld, np.array([2]), np.array([4]), 4)
    >>> [(r.kind, r.offset, r.thread_a, r.thread_b) for r in rec.races]
    [('read/write', 4, 1, 2)]
    >>> rec.barrier()
    >>> rec.access("read", ld, np.array([3]), np.array([0]), 4)
    >>> len(rec.races)
    1
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from phobos.diagnostics import Diagnostic, Label
from phobos.lower import lir
from phobos.source import Span

KINDS = ("write/write", "read/write", "atomic/write", "atomic/read", "async/read", "async/write")


@dataclass(frozen=True)
class RacePair:
    """Two threads of one CTA touching shared byte `offset` in one epoch, one of them
    writing: `thread_a` by `inst_a` first, then `thread_b` by `inst_b`.

    `kind` is `write/write`, `read/write` (a write and a read, in either order),
    `atomic/write` or `atomic/read`; `async/read` and `async/write` are an access by
    `thread_b` while the copy `inst_a` of `thread_a` is still in flight. `buffer` names
    the `SharedBuffer` holding the byte (None outside every buffer) and `buffer_offset`
    is its offset there.
    """

    kind: str
    offset: int
    buffer: str | None
    buffer_offset: int
    cta: tuple[int, int, int]
    thread_a: int
    thread_b: int
    inst_a: lir.Inst = field(repr=False)
    inst_b: lir.Inst = field(repr=False)

    @property
    def span_a(self) -> Span | None:
        return self.inst_a.span

    @property
    def span_b(self) -> Span | None:
        return self.inst_b.span

    @property
    def where(self) -> str:
        if self.buffer is None:
            return f"shared byte {self.offset}"
        return f"shared `{self.buffer}` byte {self.buffer_offset}"

    @property
    def in_flight(self) -> bool:
        return self.kind.startswith("async/")

    def message(self) -> str:
        """One line: what raced, between which threads and instructions, where."""
        if self.in_flight and self.inst_a.op == "tma_store":
            return (
                f"data race ({self.kind}) on {self.where} in block {self.cta}: "
                f"thread {self.thread_b} {_verb(self.inst_b)} it at {_place(self.inst_b)} "
                f"while thread {self.thread_a}'s TMA store at {_place(self.inst_a)} may still "
                f"be reading it: the store has read its source only after thread "
                f"{self.thread_a}'s `bulk_wait` completes its group"
            )
        if self.in_flight and self.inst_a.op in ("cp_async_bulk", "tma_load"):
            copy = "bulk copy" if self.inst_a.op == "cp_async_bulk" else "TMA load"
            return (  # a multicast's thread is of the issuing block, maybe a peer
                f"data race ({self.kind}) on {self.where} in block {self.cta}: "
                f"thread {self.thread_b} {_verb(self.inst_b)} it at {_place(self.inst_b)} "
                f"while thread {self.thread_a}'s {copy} into it at {_place(self.inst_a)} "
                "is still in flight: the copy lands when its mbarrier's phase completes, "
                "so wait on that mbarrier first"
            )
        if self.in_flight:
            return (
                f"data race ({self.kind}) on {self.where} in block {self.cta}: "
                f"thread {self.thread_b} {_verb(self.inst_b)} it at {_place(self.inst_b)} "
                f"while thread {self.thread_a}'s cp.async into it at {_place(self.inst_a)} "
                f"is still in flight: the copy lands at thread {self.thread_a}'s wait for its "
                "group, and other threads may touch it only after that wait and a barrier"
            )
        return (
            f"data race ({self.kind}) on {self.where} in block {self.cta}: "
            f"thread {self.thread_a} {_verb(self.inst_a)} it at {_place(self.inst_a)} and "
            f"thread {self.thread_b} {_verb(self.inst_b)} it at {_place(self.inst_b)} "
            "with no barrier between"
        )

    def diagnostic(self) -> Diagnostic:
        """The race as a diagnostic at the second access, the first as a secondary label."""
        b_says = f"thread {self.thread_b} {_verb(self.inst_b)} it here"
        primary = Label(self.span_b, b_says) if self.span_b else None
        secondary = []
        if self.span_a is not None:
            a_says = f"thread {self.thread_a} {_verb(self.inst_a)} it here"
            secondary.append(Label(self.span_a, a_says))
        if self.in_flight:
            return Diagnostic.error(
                None,
                f"data race ({self.kind}) on {self.where} between threads {self.thread_a} and "
                f"{self.thread_b} of block {self.cta}: an asynchronous copy into it is in flight",
                primary,
                secondary=secondary,
                notes=[f"the accesses are `{_text(self.inst_a)}` and `{_text(self.inst_b)}`"],
                help=f"wait for the copy's group in thread {self.thread_a}, then put a "
                "`barrier()` between that wait and this access"
                if self.inst_a.op != "tma_store"
                else f"wait with `bulk_wait  [read=1]` in thread {self.thread_a}, then put "
                "a `barrier()` between that wait and this write",
            )
        return Diagnostic.error(
            None,
            f"data race ({self.kind}) on {self.where} between threads {self.thread_a} and "
            f"{self.thread_b} of block {self.cta}",
            primary,
            secondary=secondary,
            notes=[f"the accesses are `{_text(self.inst_a)}` and `{_text(self.inst_b)}`"],
            help="put a `barrier()` between the two accesses",
        )


def _verb(i: lir.Inst) -> str:
    verbs = {"ld": "reads", "st": "writes", "cp_async": "copies into", "stmatrix": "writes",
             "tma_store": "reads", "ldmatrix": "reads"}  # fmt: skip
    return verbs.get(i.op, "copies into" if i.op == "cp_async_bulk" else "updates")


def _text(i: lir.Inst) -> str:
    return lir.print_item(i).strip()


def _place(i: lir.Inst) -> str:
    span = i.span
    if span is None:
        return f"`{_text(i)}`"
    line, col = span.source.line_col(span.start)
    return f"{span.source.name}:{line}:{col}"


class RaceRecorder:
    """Who touched each shared byte of the running CTA in the current epoch.

    `access(kind, inst, threads, offsets, nbytes)` records one instruction's accesses
    (`kind` read, write or atomic; one `nbytes` access per thread); `barrier()` closes the
    epoch; `new_cta(cta)` starts a CTA. `copy_issued` and `copy_landed` record an
    asynchronous copy's start and its landing (one `nbytes` copy per thread);
    `bulk_issued`/`bulk_landed` a bulk copy's, `store_reading`/`store_read` a TMA store's
    reading of its source. The first
    `limit` distinct races (by kind and the pair of instructions) are kept in `races`;
    `found` counts every racing byte.
    """

    def __init__(self, size: int, buffers=(), limit: int = 8):
        self.size = size
        self.buffers = tuple(buffers)
        self.limit = limit
        self.races: list[RacePair] = []
        self.found = 0
        self.epochs = 0
        self.cta = (0, 0, 0)
        self._insts: list[lir.Inst] = []
        self._inst_ids: dict[int, int] = {}
        self._seen: set[tuple[str, int, int]] = set()
        # per byte: [thread, inst] for writer, reader 1, reader 2, atomic 1, atomic 2
        self._who = np.full((5, 2, size), -1, np.int64)
        # per byte: [thread, inst] of the asynchronous copy in flight into it; a barrier
        # does not end a copy, only the issuing thread's wait does
        self._flight = np.full((2, size), -1, np.int64)
        # per byte: [thread, inst] of a TMA store still reading it (the latest, if several)
        self._reading = np.full((2, size), -1, np.int64)

    def new_cta(self, cta) -> None:
        self.cta = tuple(cta) + (0,) * (3 - len(cta))
        self._flight.fill(-1)
        self._reading.fill(-1)
        self.barrier()

    def barrier(self) -> None:
        self._who.fill(-1)
        self.epochs += 1

    def forget(self, offsets, nbytes: int) -> None:
        """End the epoch for the `nbytes` at each of `offsets` alone: what ordered them
        (a fenced mbarrier init under a relaxed cluster barrier) ordered nothing else."""
        for off in offsets:
            self._who[:, :, off : off + nbytes] = -1

    def _id(self, inst: lir.Inst) -> int:
        key = id(inst)
        if key not in self._inst_ids:
            self._inst_ids[key] = len(self._insts)
            self._insts.append(inst)
        return self._inst_ids[key]

    def access(self, kind: str, inst: lir.Inst, threads, offsets, nbytes: int) -> None:
        threads = np.asarray(threads, np.int64)
        if threads.size == 0:
            return
        me = self._id(inst)
        byte = (np.asarray(offsets, np.int64)[:, None] + np.arange(nbytes)).reshape(-1)
        th = np.repeat(threads, nbytes)
        copier = self._flight[0][byte]
        hit = copier >= 0
        if hit.any():  # whoever touches a byte in flight, the copy's own thread included
            race_kind = "async/read" if kind == "read" else "async/write"
            self._report(race_kind, byte, copier, self._flight[1][byte], th, me, hit)
        reader = self._reading[0][byte]
        hit = reader >= 0
        if kind != "read" and hit.any():  # a TMA store may still read it: any thread's write
            self._report("async/write", byte, reader, self._reading[1][byte], th, me, hit)
        writer, r1, r2, a1, a2 = (self._who[k] for k in range(5))
        checks = {
            "write": [(writer, "write/write"), (r1, "read/write"), (r2, "read/write"),
                      (a1, "atomic/write"), (a2, "atomic/write")],
            "read": [(writer, "read/write"), (a1, "atomic/read"), (a2, "atomic/read")],
            "atomic": [(writer, "atomic/write"), (r1, "atomic/read"), (r2, "atomic/read")],
        }[kind]  # fmt: skip
        for slot, race_kind in checks:
            other = slot[0][byte]
            hit = (other >= 0) & (other != th)
            if hit.any():
                self._report(race_kind, byte, slot[0][byte], slot[1][byte], th, me, hit)
        # Two threads writing one byte in the same instruction race with each other.
        order = np.lexsort((th, byte))
        sb, st = byte[order], th[order]
        same = (sb[1:] == sb[:-1]) & (st[1:] != st[:-1])
        if kind == "write" and same.any():
            hit = np.zeros(sb.size, bool)
            hit[1:] = same
            prev = np.concatenate(([-1], st[:-1]))
            self._report("write/write", sb, prev, np.full(sb.size, me), st, me, hit)
        # Record: the first writer; the first two distinct readers (or atomics).
        first = np.ones(sb.size, bool)
        first[1:] = sb[1:] != sb[:-1]
        b0, t0 = sb[first], st[first]
        if kind == "write":
            keep = writer[0][b0] < 0
            writer[0][b0[keep]] = t0[keep]
            writer[1][b0[keep]] = me
            return
        one, two = (r1, r2) if kind == "read" else (a1, a2)
        second = np.zeros(sb.size, bool)
        second[1:] = (sb[1:] == sb[:-1]) & (st[1:] != st[:-1])
        # the second distinct thread of each byte in this access, if any (sorted by thread)
        t1 = np.full(b0.size, -1, np.int64)
        pos = np.nonzero(second)[0]
        if pos.size:
            group = (np.cumsum(first) - 1)[pos]
            lead = np.ones(pos.size, bool)
            lead[1:] = group[1:] != group[:-1]
            t1[group[lead]] = st[pos[lead]]
        old1, old2 = one[0][b0], two[0][b0]
        new1 = np.where(old1 < 0, t0, old1)
        new2 = old2
        for cand in (t0, t1):
            take = ((new2 < 0) | (new2 == new1)) & (cand >= 0) & (cand != new1)
            new2 = np.where(take, cand, new2)
        one[1][b0] = np.where(old1 < 0, me, one[1][b0])
        one[0][b0] = new1
        two[1][b0] = np.where((new2 != old2), me, two[1][b0])
        two[0][b0] = new2

    def copy_issued(self, inst: lir.Inst, threads, offsets, nbytes: int) -> None:
        """An asynchronous copy starts: a write in this epoch, then its bytes in flight."""
        self.access("write", inst, threads, offsets, nbytes)
        threads = np.asarray(threads, np.int64)
        byte = (np.asarray(offsets, np.int64)[:, None] + np.arange(nbytes)).reshape(-1)
        self._flight[0][byte] = np.repeat(threads, nbytes)
        self._flight[1][byte] = self._id(inst)

    def copy_landed(self, inst: lir.Inst, threads, offsets, nbytes: int) -> None:
        """A wait retired the copy: its bytes are no longer in flight, and it writes them
        in this epoch, so only a barrier makes them safe for other threads."""
        byte = (np.asarray(offsets, np.int64)[:, None] + np.arange(nbytes)).reshape(-1)
        self._flight[:, byte] = -1
        self.access("write", inst, threads, offsets, nbytes)

    def bulk_issued(self, inst: lir.Inst, thread: int, offset: int, nbytes: int) -> None:
        """A bulk copy (`cp_async_bulk`) starts: its bytes are in flight until it lands.
        Its landing is ordered by an mbarrier, which epochs cannot see, so it records no
        write of its own."""
        byte = np.arange(offset, offset + nbytes)
        self._flight[0][byte] = thread
        self._flight[1][byte] = self._id(inst)

    def bulk_landed(self, offset: int, nbytes: int) -> None:
        self._flight[:, offset : offset + nbytes] = -1

    def store_reading(self, inst: lir.Inst, thread: int, byte, issued: bool = True) -> None:
        """A TMA store reads shared bytes `byte`: when `issued`, a read in this epoch;
        until its group completes, bytes no thread may write."""
        byte = np.asarray(byte, np.int64)
        if issued:
            self.access("read", inst, np.full(byte.size, thread), byte, 1)
        self._reading[0][byte] = thread
        self._reading[1][byte] = self._id(inst)

    def store_read(self, byte) -> None:
        """A store's group completed: its source bytes may be written again (the caller
        marks again, `issued=False`, those that stores still in flight read)."""
        self._reading[:, np.asarray(byte, np.int64)] = -1

    def _report(self, kind, byte, other_thread, other_inst, thread, me, hit) -> None:
        where = np.nonzero(hit)[0]
        self.found += int(where.size)
        for k in where:
            a_inst = self._insts[int(other_inst[k])]
            key = (kind, int(other_inst[k]), me)
            if key in self._seen:
                continue
            self._seen.add(key)
            if len(self.races) >= self.limit:
                return
            offset = int(byte[k])
            buffer, buffer_offset = None, offset
            for buf in self.buffers:
                if buf.offset <= offset < buf.offset + buf.size:
                    buffer, buffer_offset = buf.name, offset - buf.offset
                    break
            self.races.append(
                RacePair(
                    kind,
                    offset,
                    buffer,
                    buffer_offset,
                    self.cta,
                    int(other_thread[k]),
                    int(thread[k]),
                    a_inst,
                    self._insts[me],
                )
            )
