"""Thread-block clusters in the threads interpreter: the CTAs of one cluster run side by
side, meet at the cluster's barrier and receive each other's multicast TMA loads.

A kernel of clusters (`lir.Kernel.cluster` C > 1) groups its CTAs C at a time along x:
the CTA at `ctaid.x` has rank `ctaid.x % C` in cluster `ctaid.x // C` (the special
registers `cluster_ctarank`, `clusterid.x`, `nclusterid.x`; a kernel without clusters
reads 0, `ctaid.x`, `nctaid.x`, a CTA being its own cluster as in PTX). The C CTAs of a
cluster wait on each other, so they cannot run one after another: they run as strands of
one `Scheduler` (`phobos.interp.threads_strands`), each CTA's body an arm, and a CTA that
finds its mbarrier's phase incomplete or waits at the cluster barrier hands the baton to
the next ready strand, its peers' included. Clusters still run one after another.

The cluster barrier (`cluster_arrive`, `cluster_wait`; barrier.cluster .aligned) counts
every thread of every CTA of the cluster: a phase completes when all have arrived, and a
thread's wait returns once the phase it arrived in has completed. A thread waits once
between two arrivals; each op is run by whole warps. An exited thread is not counted as
arrived (PTX waits only for the threads that have not exited, but a CTA that exits while
a peer still waits for it is a bug: the peer may yet write its shared memory), so a
barrier that a CTA never reaches is a hang naming the waiting block. Arrive releases
and wait acquires: with `check_races`, each CTA keeps its own `RaceRecorder`, and the
completion of a phase closes the epoch in every CTA of the cluster (a CTA's own `bar`
closes only its own); where any thread's arrival was `[relaxed=1]` (which orders no
memory access, only the threads' progress) the phase closes no epoch. Bulk copies and
multicasts in flight are tracked apart from epochs, so a relaxed barrier still orders a
peer's multicast after a wgmma's reads that a `wgmma_wait` retired before it.

A multicast `tma_load` (a sixth operand, a 16-bit CTA mask) writes its box at the same
shared offset in each CTA whose rank's bit is set, completing the box's bytes on the
mbarrier at the same offset in each: the bytes are a pending bulk copy of each
destination (`threads_hopper.Bulk`), in flight there until a wait on that mbarrier in
that CTA lands them. A mask of no CTA or past the cluster, a destination whose mbarrier
is not yet initialised, or one that has exited, is an error.

    >>> c = Cluster(2, 32)
    >>> c.size, c.phases, c.strands is not None
    (2, 0, True)
"""

from __future__ import annotations

import numpy as np

from phobos.interp.errors import InterpError
from phobos.interp.threads_strands import Scheduler
from phobos.lower import lir

MAX_CLUSTER = 16  # a CTA mask has 16 bits (PTX: .multicast::cluster's ctaMask)


class Cluster:
    """The CTAs of one cluster by rank and what they share: the scheduler their strands
    take turns on (None for a cluster of one, whose CTA runs by itself) and the state of
    the cluster barrier."""

    def __init__(self, size: int, threads: int):
        self.size = size
        self.ctas: list = []
        self.strands = Scheduler() if size > 1 else None
        # per rank and thread: arrived and not yet waited, and the phase arrived in
        self.arrived = np.zeros((size, threads), bool)
        self.arrived_in = np.zeros((size, threads), np.int64)
        self.count = 0  # arrivals in the current phase
        self.relaxed = False  # whether one of them was relaxed (orders no memory)
        self.phases = 0  # phases completed
        self.waiting: list = []  # strands blocked at `cluster_wait`

    def run(self, ctas) -> None:
        """Run the cluster's CTAs (by rank) to their end, side by side."""
        self.ctas = list(ctas)
        if self.strands is None:
            self.ctas[0].run()
            return
        try:
            self.strands.fork([cta.run for cta in self.ctas])
        finally:
            self.strands.close()


class ClusterOps:
    """The cluster half of a CTA's run (mixed into the CTA)."""

    def do_cluster_arrive(self, i: lir.Inst, mask) -> None:
        self._whole(i, mask, 32, "warp")
        c, rank = self.cluster, self.rank
        again = mask & c.arrived[rank]
        if again.any():
            raise InterpError(f"thread {int(np.argmax(again))} of block {self.ctaid} arrives at "
                              "the cluster barrier again without waiting (`cluster_wait`) "
                              "since its last arrival")  # fmt: skip
        c.arrived[rank] |= mask
        c.arrived_in[rank][mask] = c.phases
        c.count += int(mask.sum())
        c.relaxed |= bool(i.attr("relaxed"))
        if c.count == c.size * self.T:
            self._cluster_complete()
        elif self.strands is not None:
            self.strands.moved()

    def _cluster_complete(self) -> None:
        """Every thread of the cluster has arrived: the phase completes, in every CTA."""
        c = self.cluster
        c.phases += 1
        c.count = 0
        ordered, c.relaxed = not c.relaxed, False
        for cta in c.ctas:
            self.launch.barriers += 1
            if cta.recorder is not None:
                if ordered:
                    cta.recorder.barrier()
                else:  # relaxed: only the mbarrier inits a fence released are ordered
                    cta.recorder.forget(cta.released, 8)
            cta.released = []
        waiting, c.waiting = c.waiting, []
        if self.strands is not None:
            self.strands.release(waiting)

    def do_cluster_wait(self, i: lir.Inst, mask) -> None:
        self._whole(i, mask, 32, "warp")
        c, rank = self.cluster, self.rank
        missing = mask & ~c.arrived[rank]
        if missing.any():
            raise InterpError(f"thread {int(np.argmax(missing))} of block {self.ctaid} waits at "
                              "the cluster barrier without having arrived (`cluster_arrive`)")  # fmt: skip
        text = lir.print_item(i).strip()
        total = c.size * self.T

        def hang(others: str) -> InterpError:
            also = f"; also stuck: {others}" if others else ""
            return InterpError(
                f"`{text}` hangs: block {self.ctaid} waits at the cluster barrier for the "
                f"{total} threads of its cluster's {c.size} CTAs, {c.count} arrived, and no "
                f"other thread can reach it{also}",
                i.span,
            )

        while (c.arrived_in[rank][mask] >= c.phases).any():
            if self.strands is None:
                raise hang("")
            what = (f"{int(mask.sum())} threads of block {self.ctaid} at `{text}` "
                    f"({c.count} of {total} arrived)")  # fmt: skip
            c.waiting.append(self.strands.current)
            self.strands.block(what, hang)
        c.arrived[rank] &= ~mask

    def multicast_targets(self, thread: int, bits: int) -> list:
        """The CTAs a multicast of CTA mask `bits` by `thread` writes into, by rank."""
        c = self.cluster
        if bits <= 0:
            raise InterpError(f"thread {thread}: a multicast's CTA mask of 0 names no CTA")
        if bits >= 1 << c.size:
            raise InterpError(f"thread {thread}: a multicast's CTA mask {bits:#x} names rank "
                              f"{bits.bit_length() - 1}, past the cluster's {c.size} CTAs")  # fmt: skip
        targets = [cta for r, cta in enumerate(c.ctas) if bits >> r & 1]
        for cta in targets:
            if cta.exited:  # its shared memory is gone
                raise InterpError(f"thread {thread}: a multicast writes the shared memory "
                                  f"of block {cta.ctaid}, which has exited")  # fmt: skip
        return targets
