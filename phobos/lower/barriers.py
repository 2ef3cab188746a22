"""Barrier insertion by SPEC.md's rule ("Tiles and shared memory"):

    A CTA barrier follows a tile store only when a later op reads or writes those
    bytes from other threads. Two elementwise passes at the same vector width need
    none; a reduction, dot or transpose after one does.

The tracker records, since the last barrier, which shared buffers each op touched and
through which *layout* (which thread touches which byte: a hashable key, equal for two
sweeps of one shape at one vector width). An access that meets bytes another layout
wrote, or writes bytes another layout read, gets a `bar.sync 0` first. A thread's own
point accesses (`t[i, j]`, layout None) are tracked as accesses by some thread: a
point read of bytes a sweep wrote, or a tile taking bytes a dead tile's point reads
read (`phobos.lower.alloc` reuses bytes by liveness), gets a barrier between.

Loops: the first access in a loop body that may meet the previous iteration's gets a
barrier (the body is entered with every buffer marked as touched by an unknown
layout); after the loop, what the body left pending stays pending. Once the body is
lowered, that entry barrier is checked against what it actually orders: the accesses
after it up to the body's next barrier (at the body's top level), against what the
body leaves pending at its end (the previous turn's tail) and what was pending before
the loop (its first turn). When none of them meet, the barrier is taken out again: a
loop whose turns touch shared memory through one layout runs with no barrier a turn.

Uniformity: a barrier must be reached by every thread, so it is never emitted under
varying control (an `if` or a loop whose condition or bounds differ between threads,
or the rest of a loop or kernel after a `break`, `continue` or `return` under one).
There the tracker hoists it to the *anchor*, the nearest point of uniform control
before the divergent region, which orders everything pending from before that point.
An access that meets only another access made inside the divergent region gets no
barrier: both are per-thread accesses, which SPEC.md leaves to the program.

Asynchronous copies (cp.async): a copy's bytes land only when its thread waits for its
group, and other threads see them only after a barrier. The tracker keeps the groups in
flight (`copy_async`, `commit`); an access that meets bytes still in flight gets a
`cp_async_wait` first, its count the number of younger groups that may stay in flight,
and a barrier after it. A loop's ring of stages (`phobos.lower.pipeline`) names its stages
by `Slot(buffer, turns)`, the stage a turn `turns` ahead of this one reads; while the ring
turns, the ring tile's own accesses are of `Slot(buffer, 0)`, and `rotate` moves every
record one turn on at the end of a turn. Bytes of a ring still in flight when its loop
ends are waited for before anything else touches them.

    >>> class Lw:
    ...     from phobos.lower.builder import Builder
    ...     b = Builder()
    >>> t = Tracker(Lw())
    >>> t.access("tile_a", "write", ("sweep", (8, 64), 4))
    >>> t.access("tile_a", "read", ("sweep", (8, 64), 4))   # same threads: no barrier
    >>> t.access("tile_a", "read", ("rows", (8, 64)))       # other threads: a barrier
    >>> t.count
    1
    >>> t.copy_async("tile_b"); t.commit()                  # one group in flight
    >>> t.access("tile_b", "read", ("sweep", (8, 64), 4))   # waits for it, then meets
    >>> [i.op for i in Lw.b.stack[-1]][-3:], t.count
    (['cp_async_commit', 'cp_async_wait', 'bar'], 2)
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import dataclass
from typing import NamedTuple

from phobos.lower import lir
from phobos.lower.lir import Imm

log = logging.getLogger("phobos.lower")
ANY = "*"  # a buffer or layout that stands for every one


ASYNC = ("async",)  # the layout of a cp.async write: no thread reads it as its own


def _barrier_srcs(lw) -> tuple:
    """`bar.sync 0`, or the lowering's own (a named barrier of the consumers, where a
    producer warpgroup runs beside them)."""
    own = getattr(lw, "barrier_srcs", None)
    return own() if own is not None else (Imm(0, "u32"),)


class Slot(NamedTuple):
    """A ring's stage: the bytes of `buffer` that the turn `turns` ahead reads."""

    buffer: object
    turns: int


class Pending(NamedTuple):
    """An access since the last barrier; `seq` orders it against anchors."""

    buffer: object
    kind: str
    layout: object
    seq: int


@dataclass
class Anchor:
    """The point of uniform control before a divergent region: the open block and the
    index a hoisted barrier goes at, and the `seq` of the first access after it."""

    items: list
    index: int
    seq: int
    hoisted: bool = False


@dataclass
class EntryWatch:
    """A loop's entry barrier, while its body is lowered: the barrier (once the body's
    first access asked for it), the block it went into, and the accesses after it up to
    the body's next barrier (`segment`, collected while `open`)."""

    record: Pending  # the body's "touched by an unknown layout" entry
    before: list  # pending when the loop was entered
    depth: int  # the loop's nesting depth
    barrier: object = None
    items: list | None = None
    segment: list | None = None
    open: bool = False
    eligible: bool = True


class Tracker:
    def __init__(self, lw):
        self.lw = lw
        self.pending: list[Pending] = []  # since the last barrier
        self.count = 0
        self.seq = 0
        self.anchor: Anchor | None = None  # set while under varying control
        self.loops: list[tuple[Anchor, bool]] = []  # each open loop: its anchor, varying
        self.sticky: list[int] = []  # loop depths whose rest a jump made divergent
        self.ifs: list[tuple[Anchor, int]] = []  # each open `if`: its anchor, loop depth
        self.watches: list[EntryWatch] = []  # each open uniform loop's entry barrier
        self.flight: list[list] = []  # committed groups of async copies, oldest first
        self.open: list = []  # what the copies issued since the last commit write
        self.rings: dict[str, int] = {}  # buffer name -> stages, while its ring turns

    def _overlap(self, x, y) -> bool:
        if x == ANY or y == ANY:
            return True
        if x is y or x == y:
            return True
        if isinstance(x, Slot) and isinstance(y, Slot) and x.buffer == y.buffer:
            return x.turns == y.turns  # two stages of one ring: apart
        x, y = getattr(x, "buffer", x), getattr(y, "buffer", y)  # a stage: its ring's bytes
        if x is y or x == y:
            return True
        xo, xs = getattr(x, "offset", None), getattr(x, "size", None)
        yo, ys = getattr(y, "offset", None), getattr(y, "size", None)
        if None in (xo, xs, yo, ys):
            return False
        return xo < yo + ys and yo < xo + xs

    def _record(self, buffer, kind: str, layout) -> Pending:
        self.seq += 1
        return Pending(buffer, kind, layout, self.seq)

    def _meets(self, buffer, kind: str, layout, p: Pending) -> bool:
        """Whether an access of `buffer` by `layout` needs ordering against `p`."""
        return (
            "write" in (kind, p.kind)
            and self._overlap(buffer, p.buffer)
            and not (layout is not None and layout == p.layout and p.buffer is not ANY)
        )

    def access(self, buffer, kind: str, layout) -> None:
        """Record an access of `buffer` (a SharedBuffer) by `layout`; insert a barrier first
        when it meets another layout's access since the last one (a wait and a barrier
        when it meets bytes still in flight)."""
        buffer = self._stage(buffer)
        self.landed(buffer)
        met = [p for p in self.pending if self._meets(buffer, kind, layout, p)]
        if met:
            name = getattr(buffer, "name", buffer)
            log.debug("barrier before a %s of `%s`: %s by another layout since the last one",
                      kind, name, "written" if met[0].kind == "write" else "read")  # fmt: skip
            if self.anchor is None:
                self.barrier()
                self._entry_barrier(met)
            elif any(p.seq < self.anchor.seq for p in met):
                self.hoist()
            else:
                log.debug("no barrier for `%s` under varying control: per-thread accesses "
                          "inside one divergent region", name)  # fmt: skip
        self._note(buffer, kind, layout)

    # -- asynchronous copies ----------------------------------------------------

    def _stage(self, buffer):
        """A ring tile's buffer, while its ring turns, as this turn's stage."""
        name = getattr(buffer, "name", None)
        if name in self.rings and not isinstance(buffer, Slot):
            return Slot(buffer, 0)
        return buffer

    def copy_async(self, dst) -> None:
        """A cp.async into `dst` (a buffer or a `Slot`) is about to be emitted: ordered
        after every access of those bytes by other threads (a barrier where one is
        pending), then in flight in the open group."""
        dst = self._stage(dst)
        met = [p for p in self.pending if self._meets(dst, "write", ASYNC, p)]
        if met:
            log.debug("barrier before cp.async into `%s`: read by other threads since the last",
                      getattr(dst, "name", dst))  # fmt: skip
            if self.anchor is None:
                self.barrier()
            else:
                self.hoist()
        self.open.append(dst)

    def commit(self) -> None:
        """`cp_async_commit`: the open copies become one group (an empty one too: the
        wait counts groups, so every thread commits the same number)."""
        self.lw.b.emit("cp_async_commit")
        self.flight.append(self.open)
        self.open = []

    def landed(self, buffer) -> None:
        """Before an access of `buffer`: where copies in flight write its bytes, wait for
        the youngest group among them (the younger groups stay in flight) and meet."""
        if any(self._overlap(buffer, d) for d in self.open):
            self.commit()  # a copy cannot be waited for before its group is closed
        hit = [
            g for g, group in enumerate(self.flight) if any(self._overlap(buffer, d) for d in group)
        ]
        if not hit:
            return
        newest = hit[-1]
        keep = len(self.flight) - 1 - newest
        self.lw.b.emit("cp_async_wait", pending=keep)
        log.debug("cp.async wait (%d groups left in flight) and a barrier before `%s`: its "
                  "bytes were in flight", keep, getattr(buffer, "name", buffer))  # fmt: skip
        del self.flight[: newest + 1]
        if self.anchor is None:
            self.barrier()
        else:
            self.hoist()

    def rotate(self, buffer, stages: int) -> None:
        """A ring's turn ends: each stage of `buffer` is one turn nearer (the stage this
        turn read is the one `stages - 1` turns ahead)."""

        def on(x):
            if isinstance(x, Slot) and x.buffer == buffer:
                return Slot(buffer, (x.turns - 1) % stages)
            return x

        self.flight = [[on(d) for d in group] for group in self.flight]
        self.open = [on(d) for d in self.open]
        self.pending = [p._replace(buffer=on(p.buffer)) for p in self.pending]

    def _note(self, buffer, kind: str, layout) -> None:
        """Record an access as pending, with no check against what is pending."""
        record = self._record(buffer, kind, layout)
        self.pending.append(record)
        for watch in self.watches:
            if watch.open:
                watch.segment.append(record)

    def statement(self, accesses) -> None:
        """Record one statement's accesses `(buffer, kind, layout)`, all emitted after the
        barrier any of them asks for: where a later one asks, the earlier ones are
        recorded again after it (they stand after it in the code, not before)."""
        done = []
        for buffer, kind, layout in accesses:
            before = self.count
            self.access(buffer, kind, layout)
            if self.count != before:  # the barrier went in before the statement's code
                pending = self.pending.pop()  # keep the statement's accesses in order
                for again in done:
                    self._note(*again)
                self.pending.append(pending)
            done.append((buffer, kind, layout))

    def _entry_barrier(self, met: list[Pending]) -> None:
        """The barrier just emitted: when only the innermost loop's entry record asked
        for it, at the top level of that loop's body, it may be taken out once the body
        is lowered (`_settle`)."""
        watch = self.watches[-1] if self.watches else None
        if watch is None or watch.barrier is not None or watch.depth != len(self.loops):
            return
        if any(p is not watch.record for p in met):
            watch.eligible = False  # a real meeting inside the body: the barrier stays
            return
        watch.barrier = self.lw.b.stack[-1][-1]
        watch.items = self.lw.b.stack[-1]
        watch.segment = []
        watch.open = True

    def barrier(
        self, force: bool = False, whole: bool = False, cluster: bool = False, relaxed: bool = False
    ) -> None:
        """Emit `bar.sync 0` (or the lowering's own barrier of its threads; `whole`:
        barrier 0 of the CTA, a producer warpgroup too; `cluster`: the cluster's
        barrier, every thread of its CTAs, its arrive `relaxed` where it orders only
        the threads' progress) and forget what was pending."""
        if cluster:
            self.lw.b.emit("cluster_arrive", **({"relaxed": 1} if relaxed else {}))
            self.lw.b.emit("cluster_wait")
        else:
            self.lw.b.emit("bar", (), (Imm(0, "u32"),) if whole else _barrier_srcs(self.lw))
        self.count += 1
        self.pending = []
        here = self.lw.b.stack[-1]
        for watch in self.watches:
            if watch.open:
                watch.open = False
                if here is not watch.items:  # it closes the segment only on some paths
                    watch.eligible = False

    def ordered(self) -> None:
        """Forget what is pending, with no barrier: its accesses are ordered by other
        means (a TMA ring's mbarriers, where a producer warpgroup feeds it)."""
        self.pending = []

    def hoist(self) -> None:
        """Under varying control: a barrier at the anchor (once), forgetting what was
        pending from before it."""
        a = self.anchor
        for watch in self.watches:
            watch.eligible = False
        if not a.hoisted:
            a.items.insert(
                a.index, lir.inst("bar", (), _barrier_srcs(self.lw), span=self.lw.b.span)
            )
            a.hoisted = True
            self.count += 1
            log.debug("barrier hoisted out of varying control")
        self.pending = [p for p in self.pending if p.seq >= a.seq]

    def _here(self) -> Anchor:
        items = self.lw.b.stack[-1]
        return Anchor(items, len(items), self.seq + 1)

    @contextmanager
    def divergent(self, varying: bool = True, anchor: Anchor | None = None):
        """A region under varying control (nothing to do when `varying` is false or the
        control is already varying); `anchor` defaults to here."""
        if not varying or self.anchor is not None:
            yield
            return
        self.anchor = anchor or self._here()
        try:
            yield
        finally:
            self._converge()

    def _converge(self) -> None:
        a, self.anchor = self.anchor, None
        if a is not None and a.hoisted:
            self.pending = [p for p in self.pending if p.seq >= a.seq]

    def jumped(self, kind: str, at: Anchor) -> None:
        """A `break`, `continue` or `return` under varying control (in an `if` that
        starts at `at`): the rest of its loop, or of the kernel, runs diverged. After a
        `continue` the next turn converges again; after a `break` or `return` no later
        turn of the loop is uniform, so the anchor moves before the loop (the outermost
        one for `return`)."""
        if self.anchor is not None or (kind != "return" and not self.loops):
            return
        outer = [a for a, depth in self.ifs if depth == len(self.loops)]
        if kind == "continue":
            anchor = outer[0] if outer else at  # dominates the rest of the turn
        elif kind == "break":
            anchor = self.loops[-1][0]
        elif self.loops:
            anchor = self.loops[0][0]
        else:
            anchor = outer[0] if outer else at
        self.anchor = Anchor(anchor.items, anchor.index, anchor.seq)
        self.sticky.append(len(self.loops) if kind != "return" else 0)
        for watch in self.watches:
            watch.eligible = False

    @contextmanager
    def loop(self, body=None, varying: bool = False):
        """A loop's body; `varying` when its bounds or condition differ between threads."""
        here = self._here()
        with self.divergent(varying, here):
            before = list(self.pending)
            entry = self._record(ANY, "write", None)
            self.pending = before + [entry]
            self.loops.append((here, varying))
            depth = len(self.loops)
            watch = EntryWatch(entry, before, depth, eligible=self.anchor is None)
            self.watches.append(watch)
            try:
                yield
            finally:
                self.watches.pop()
                if watch.eligible and watch.barrier is not None:
                    self._settle(watch)
                self.loops.pop()
                if self.sticky and self.sticky[-1] == depth:
                    self.sticky.pop()
                    self._converge()
                self.pending = [p for p in self.pending if p.buffer is not ANY] + [
                    p for p in before if p not in self.pending
                ]

    def _settle(self, watch: EntryWatch) -> None:
        """Take a loop's entry barrier out when what follows it, up to the body's next
        barrier, meets neither the body's tail (the previous turn) nor what was pending
        before the loop (the first turn)."""
        earlier = [p for p in self.pending + watch.before if p.buffer is not ANY]
        for a in watch.segment:
            if any(self._meets(a.buffer, a.kind, a.layout, p) for p in earlier if p is not a):
                return
        if not any(i is watch.barrier for i in watch.items):
            return
        watch.items[:] = [i for i in watch.items if i is not watch.barrier]
        self.count -= 1
        log.debug("no barrier at the loop's entry: its turns touch shared memory in one layout")

    @contextmanager
    def branch(self, varying: bool = False):
        """An `if`'s arms; `varying` when its condition differs between threads."""
        here = self._here()
        with self.divergent(varying, here):
            self.ifs.append((here, len(self.loops)))
            before = list(self.pending)
            arms: list[list] = []

            def next_arm():
                arms.append(self.pending)
                self.pending = list(before)

            try:
                yield next_arm
            finally:
                self.ifs.pop()
                arms.append(self.pending)
                merged = list(before)
                for arm in arms:
                    merged += [p for p in arm if p not in merged]
                self.pending = merged
