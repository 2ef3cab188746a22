"""The worker processes: results in the calls' order, a call that raises or whose
process dies failing alone, the calls a broken pool took down run again alone."""

from __future__ import annotations

import os
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool

from phobos import workers
from phobos.source import SourceFile
from phobos.workers import Failure, in_processes, pool_size


def test_one_job_runs_here_in_order():
    assert in_processes(pow, [(2, n) for n in range(4)], jobs=1) == [1, 2, 4, 8]
    assert isinstance(in_processes(int, [("x",)], jobs=1)[0], Failure)


def test_the_pool_is_started_only_for_enough_kernels():
    assert pool_size(3, 16, check_races=True) == 1
    assert pool_size(4, 16, check_races=True) == 4
    assert pool_size(40, 16, check_races=True) == 16
    assert pool_size(40, 16, check_races=False) == 1
    assert pool_size(64, 16, check_races=False) == 16


def _dies_on_three(n: int) -> int:
    """A worker's work: its process dies on 3, it raises on 5."""
    if n == 3:
        os._exit(7)
    if n == 5:
        raise RuntimeError("five")
    return n * 10


def test_a_dead_worker_fails_its_own_call_and_the_others_complete():
    seen = []
    results = workers.in_processes(
        _dies_on_three, [(n,) for n in range(7)], jobs=2, progress=lambda d, t: seen.append(d)
    )
    assert [results[n] for n in (0, 1, 2, 4, 6)] == [0, 10, 20, 40, 60]
    assert isinstance(results[3], Failure) and isinstance(results[3].error, BrokenProcessPool)
    assert isinstance(results[5], Failure) and str(results[5].error) == "five"
    assert sorted(seen) == list(range(1, 8))


class _BreaksOn:
    """An executor that runs each call at once, here, except that the pool breaks on
    `bad` (and on every call handed to it after that), as when a worker dies."""

    def __init__(self, bad: int):
        self.bad = bad
        self.broken = False

    def submit(self, fn, work, data, table):
        future: Future = Future()
        files = [SourceFile(name, text) for name, text in table]
        _, n = workers._loads(data, files)
        self.broken = self.broken or n == self.bad
        if self.broken:
            future.set_exception(BrokenProcessPool("a worker died"))
        else:
            future.set_result(fn(work, data, table))
        return future

    def shutdown(self, wait=True, cancel_futures=False):
        pass


def test_the_calls_a_broken_pool_took_down_are_run_again_alone():
    pools = []

    def pool(jobs):
        pools.append(jobs)
        return _BreaksOn(bad=2)

    results = workers.in_processes(pow, [(2, n) for n in range(5)], jobs=3, pool=pool)
    assert results[:2] == [1, 2]
    assert isinstance(results[2], Failure)  # broke its own pool again
    assert results[3:] == [8, 16]  # lost with the first pool, fine alone
    assert pools == [3, 1, 1, 1]
