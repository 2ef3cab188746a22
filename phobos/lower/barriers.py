"""Barrier insertion by SPEC.md's rule ("Tiles and shared memory"):

    A CTA barrier follows a tile store only when a later op reads or writes those
    bytes from other threads. Two elementwise passes at the same vector width need
    none; a reduction, dot or transpose after one does.

The tracker records, since the last barrier, which shared buffers each op touched and
through which *layout* (which thread touches which byte: a hashable key, equal for two
sweeps of one shape at one vector width). An access that meets bytes another layout
wrote, or writes bytes another layout read, gets a `bar.sync 0` first. A thread's own
point accesses (`t[i, j]`) are not tracked: SPEC.md leaves those to `barrier()`.

Loops: the first access in a loop body that may meet the previous iteration's gets a
barrier (the body is entered with every buffer marked as touched by an unknown
layout); after the loop, what the body left pending stays pending.

    >>> class Lw:
    ...     from phobos.lower.builder import Builder
    ...     b = Builder()
    >>> t = Tracker(Lw())
    >>> t.access("tile_a", "write", ("sweep", (8, 64), 4))
    >>> t.access("tile_a", "read", ("sweep", (8, 64), 4))   # same threads: no barrier
    >>> t.access("tile_a", "read", ("rows", (8, 64)))       # other threads: a barrier
    >>> t.count
    1
"""

from __future__ import annotations

import logging
from contextlib import contextmanager

from phobos.lower.lir import Imm

log = logging.getLogger("phobos.lower")
ANY = "*"  # a buffer or layout that stands for every one


class Tracker:
    def __init__(self, lw):
        self.lw = lw
        self.pending: list[tuple] = []  # (buffer, kind, layout) since the last barrier
        self.count = 0

    def _overlap(self, x, y) -> bool:
        if x == ANY or y == ANY:
            return True
        if x is y or x == y:
            return True
        xo, xs = getattr(x, "offset", None), getattr(x, "size", None)
        yo, ys = getattr(y, "offset", None), getattr(y, "size", None)
        if None in (xo, xs, yo, ys):
            return False
        return xo < yo + ys and yo < xo + xs

    def access(self, buffer, kind: str, layout) -> None:
        """Record an access of `buffer` (a SharedBuffer) by `layout`; insert a barrier first
        when it meets another layout's access since the last one."""
        for other_buf, other_kind, other_layout in self.pending:
            if "write" not in (kind, other_kind):
                continue
            if not self._overlap(buffer, other_buf):
                continue
            if layout is not None and layout == other_layout and other_buf is not ANY:
                continue
            name = getattr(buffer, "name", buffer)
            log.debug("barrier before a %s of `%s`: %s by another layout since the last one",
                      kind, name, "written" if other_kind == "write" else "read")  # fmt: skip
            self.barrier()
            break
        self.pending.append((buffer, kind, layout))

    def barrier(self, force: bool = False) -> None:
        """Emit `bar.sync 0` and forget what was pending."""
        self.lw.b.emit("bar", (), (Imm(0, "u32"),))
        self.count += 1
        self.pending = []

    @contextmanager
    def loop(self, body=None):
        before = list(self.pending)
        self.pending = before + [(ANY, "write", None)]
        try:
            yield
        finally:
            self.pending = [p for p in self.pending if p[0] is not ANY] + before

    @contextmanager
    def branch(self):
        before = list(self.pending)
        arms: list[list] = []

        def next_arm():
            arms.append(self.pending)
            self.pending = list(before)

        try:
            yield next_arm
        finally:
            arms.append(self.pending)
            merged = list(before)
            for arm in arms:
                merged += [p for p in arm if p not in merged]
            self.pending = merged
