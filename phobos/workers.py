"""Work run in spawned worker processes: the compiler's parallelism.

`in_processes(work, calls, jobs)` runs `work(*call)` for every call in up to `jobs`
processes and gives the results in the calls' order; a call that raises, or whose
process dies, gives a `Failure` while the others still run. `pool_size` says how many
processes are worth starting for so many kernels to lower (and race-check). The
driver lowers the kernels of `phobos-compile --jobs N` through it, and the tuner
compiles the variants of an `@autotune` space through it.

Workers are spawned, never forked: the parent may hold a CUDA context, which a fork
cannot share.

    >>> in_processes(pow, [(2, 3), (2, 10)], jobs=1)
    [8, 1024]
    >>> pool_size(25, 16, True), pool_size(3, 16, True), pool_size(25, 16, False)
    (16, 1, 1)
"""

from __future__ import annotations

import contextlib
import io
import multiprocessing
import os
import pickle
import sys
import threading
import types
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from concurrent.futures.thread import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from phobos.source import SourceFile

# Starting a worker (spawning it, importing the compiler, its first lowering) costs
# 0.25-0.5 s; a kernel costs 5-15 ms to lower and 20-300 ms to race-check. Fewer
# kernels than these are compiled faster in the caller's process.
MIN_POOL = 4  # race-checked
MIN_POOL_UNCHECKED = 64  # lowered only


def pool_size(kernels: int, jobs: int, check_races: bool) -> int:
    """The processes worth starting to compile `kernels` kernels (or variants) with at
    most `jobs`: 1 (the caller's own) when they are too few to pay for starting any."""
    least = MIN_POOL if check_races else MIN_POOL_UNCHECKED
    return 1 if kernels < least else max(1, min(jobs, kernels))


def cpu_count() -> int:
    """The CPUs this process may run on (a container's share, not the machine's)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


# ---------------------------------------------------------------------------
# Worker processes


@dataclass(frozen=True)
class Failure:
    """A call that did not return: it raised `error`, or its process died
    (`BrokenProcessPool`)."""

    error: BaseException


def in_processes(
    work: Callable[..., Any],
    calls: Sequence[tuple],
    jobs: int,
    progress: Callable[[int, int], None] | None = None,
    *,
    pool: Callable[[int], Executor] | None = None,
    wanted: Callable[[int, list[Any]], bool] | None = None,
) -> list[Any]:
    """`work(*call)` for each call, in the calls' order, run by `jobs` worker processes;
    a call that raises or whose process dies gives a `Failure`, the others still run.

    `wanted(i, results)`, asked just before call `i` starts with the results so far
    (None where not done), may say no: call `i` is then not run and its result is
    None. The calls start in order, a few more than `jobs` in flight, so a budget that
    the first calls spend stops the later ones early (the driver's `--all-variants`).

        >>> in_processes(pow, [(2, 3), (2, 4), (2, 5)], 1, wanted=lambda i, done: i != 1)
        [8, None, 32]

    `work` is a module-level function (a worker imports it by name); a call's
    arguments and result travel pickled, and every `SourceFile` among them comes back
    as the caller's own object, so a diagnostic's span still points into the file it
    was found in. One job, or `PHOBOS_LOG` set (so the lowering's lines come in
    order), runs here instead. `pool(jobs)` makes the executor (default: spawned
    processes).
    """
    total = len(calls)
    if jobs <= 1 or total <= 1 or os.environ.get("PHOBOS_LOG"):
        return _here(work, calls, progress, wanted)
    results: list[Any] = [None] * total
    done = 0
    lock = threading.Lock()  # the calls run alone report from threads of their own

    def finished(index: int, value) -> None:
        nonlocal done
        with lock:
            results[index] = value
            done += 1
            if progress is not None:
                progress(done, total)

    def want(i: int) -> bool:
        if wanted is None:
            return True
        with lock:
            yes = wanted(i, list(results))
        if not yes:
            finished(i, None)
        return yes

    jobs = min(jobs, total)
    lost = _in_pool(work, calls, range(total), jobs, pool or _spawn_pool, finished, want)
    # A process that died took down the pool, and the calls it was running with it:
    # run each of those alone, so one that kills its process again fails by itself.
    if lost:
        _alone(work, calls, lost, min(jobs, len(lost)), pool or _spawn_pool, finished)
    return results


def _here(work, calls, progress, wanted=None) -> list[Any]:
    results: list[Any] = []
    for i, call in enumerate(calls):
        if wanted is not None and not wanted(i, results + [None] * (len(calls) - i)):
            results.append(None)
        else:
            try:
                results.append(work(*call))
            except Exception as exc:
                results.append(Failure(exc))
        if progress is not None:
            progress(len(results), len(calls))
    return results


def _in_pool(work, calls, indices, jobs: int, pool, finished, want=None) -> list[int]:
    """Run `calls[i]` for each index in one pool of `jobs`, in order, at most twice
    `jobs` in flight, each only if `want(i)`; the indices whose process died."""
    lost: list[int] = []
    futures: dict[Future, int] = {}
    files: dict[int, list[SourceFile]] = {}
    waiting = iter(indices)
    executor = pool(jobs)

    def submit() -> None:
        """Hand out calls until twice `jobs` are in flight or none is left."""
        with _main_left_alone():
            for i in waiting:
                if want is not None and not want(i):
                    continue
                data, files[i] = _encode(calls[i])
                try:
                    future = executor.submit(
                        _remote, work, data, [(f.name, f.text) for f in files[i]]
                    )
                except BrokenProcessPool:  # a worker died before every call was handed out
                    lost.append(i)
                    continue
                futures[future] = i
                if len(futures) >= 2 * jobs:
                    return

    try:
        submit()
        while futures:
            done, _ = wait(set(futures), return_when=FIRST_COMPLETED)
            for future in sorted(done, key=futures.__getitem__):
                i = futures.pop(future)
                error = future.exception()
                if isinstance(error, BrokenProcessPool):
                    lost.append(i)
                elif error is not None:
                    finished(i, Failure(error))
                else:
                    finished(i, _loads(future.result(), files[i]))
            submit()
    finally:
        executor.shutdown(wait=True, cancel_futures=True)
    return sorted(lost)


def _alone(work, calls, indices, jobs: int, pool, finished) -> None:
    """Each of `indices` in a pool of its own, `jobs` at a time."""

    def one(i: int) -> None:
        if _in_pool(work, calls, [i], 1, pool, finished):
            finished(i, Failure(BrokenProcessPool("the compiler's process died")))

    with ThreadPoolExecutor(jobs) as threads:
        for future in [threads.submit(one, i) for i in indices]:
            future.result()


def _spawn_pool(jobs: int) -> Executor:
    return ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"))


@contextlib.contextmanager
def _main_left_alone() -> Iterator[None]:
    """Start workers without running the caller's main script in them.

    A spawned worker runs the parent's `__main__` file again unless the script keeps its
    work under `if __name__ == "__main__"`; a script that tunes at its top level would
    then tune (and open the GPU) in every worker, and fail there. The workers need only
    the compiler, so while they start, `__main__` is an empty module.
    """
    main = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = main


# A call's arguments and result travel with every SourceFile replaced by its index in a
# table of (name, text) sent beside it; the worker rebuilds each file once, and the
# result's spans come back pointing into the caller's own files (a SourceFile compares
# by identity: a copy would be another file to a span map or a duplicate check).


class _Pickler(pickle.Pickler):
    def __init__(self, handle, files: list[SourceFile], grow: bool):
        super().__init__(handle, protocol=pickle.HIGHEST_PROTOCOL)
        self.files = files
        self.index = {id(f): i for i, f in enumerate(files)}
        self.grow = grow

    def persistent_id(self, obj):
        if not isinstance(obj, SourceFile):
            return None
        found = self.index.get(id(obj))
        if found is None and self.grow:
            found = self.index[id(obj)] = len(self.files)
            self.files.append(obj)
        return found


class _Unpickler(pickle.Unpickler):
    def __init__(self, handle, files: list[SourceFile]):
        super().__init__(handle)
        self.files = files

    def persistent_load(self, pid):
        return self.files[pid]


def _dumps(value, files: list[SourceFile], grow: bool) -> bytes:
    handle = io.BytesIO()
    _Pickler(handle, files, grow).dump(value)
    return handle.getvalue()


def _loads(data: bytes, files: list[SourceFile]):
    return _Unpickler(io.BytesIO(data), files).load()


def _encode(call: tuple) -> tuple[bytes, list[SourceFile]]:
    """The call pickled, and the caller's files it refers to, in the order of the table."""
    files: list[SourceFile] = []
    return _dumps(call, files, grow=True), files


def _remote(work, data: bytes, table: list[tuple[str, str]]) -> bytes:
    """In a worker: run `work` on the call `data` holds; its result, encoded."""
    files = [SourceFile(name, text) for name, text in table]
    return _dumps(work(*_loads(data, files)), files, grow=False)
