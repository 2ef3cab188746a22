"""Lane and CTA collectives, shuffles, and the cooperative scheduler for `grid_barrier`.

A lane collective folds each `width`-lane piece of each warp as the hardware does, an
xor butterfly, so every lane of a piece ends with the same fold:

    >>> import numpy as np
    >>> lane_fold(np.arange(8, dtype=np.int32), 4, np.add).tolist()
    [6, 6, 6, 6, 22, 22, 22, 22]
"""

from __future__ import annotations

import threading

import numpy as np

from phobos.interp.errors import InterpError

LANES = 32


def lane_fold(v, width: int, op):
    """Fold `v` (one value per thread) within each `width`-lane piece, by butterfly."""
    n = len(v)
    if width <= 0 or width & (width - 1) or n % width:
        raise InterpError(f"a collective's width {width} must be a power of two dividing the CTA")
    idx = np.arange(n)
    x = v
    m = width // 2
    while m >= 1:
        x = op(x, x[idx ^ m])
        m //= 2
    return x


def cta_fold(v, op):
    """Fold `v` over the whole CTA: each warp by butterfly, then the warps in order."""
    n = len(v)
    width = min(LANES, n)
    per_warp = lane_fold(v, width, op)[::width]
    acc = per_warp[0:1]
    for w in range(1, len(per_warp)):
        acc = op(acc, per_warp[w : w + 1])
    return acc[0]


def argmax_op(values, index):
    """The fold of (value, index) pairs keeping the larger value, the smaller index on a tie.

    `a` and `b` are positions into `values` and `index`. A NaN counts as -inf, as in
    `rowargmax`: it never wins, and a piece of NaNs alone gives its smallest index. Keys
    so ordered make the fold associative and commutative, so every lane of a piece and
    every fold order (the butterfly, the GPU's) picks the same position:

        >>> import numpy as np
        >>> v = np.array([np.nan, 1.0, 3.0, 3.0], np.float32)
        >>> lane_fold(np.arange(4), 4, argmax_op(v, np.arange(4))).tolist()
        [2, 2, 2, 2]
        >>> v = np.array([np.nan, -np.inf, np.nan, np.nan], np.float32)
        >>> lane_fold(np.arange(4), 4, argmax_op(v, np.arange(4))).tolist()
        [0, 0, 0, 0]
    """
    if values.dtype.kind == "f":
        values = np.where(np.isnan(values), values.dtype.type(-np.inf), values)

    def op(a, b):
        va, ia = values[a], index[a]
        vb, ib = values[b], index[b]
        better = (vb > va) | ((vb == va) & (ib < ia))
        return np.where(better, b, a)

    return op


def shuffle(v, kind: str, amount, width: int, threads: int):
    """`shfl<kind amount, width>(v)`: each thread reads another lane's `v`."""
    v = np.broadcast_to(np.asarray(v), (threads,))
    thread = np.arange(threads)
    lane = thread % width
    base = thread - lane
    amount = np.broadcast_to(np.asarray(amount).astype(np.int64), (threads,))
    if kind == "from":
        src = amount % width
        ok = np.ones(threads, bool)
    elif kind == "xor":
        src = lane ^ amount
        ok = (src >= 0) & (src < width)
    elif kind == "down":
        src = lane + amount
        ok = src < width
    elif kind == "up":
        src = lane - amount
        ok = src >= 0
    else:
        raise InterpError(f"shuffle `{kind}` is not supported by the interpreter yet")
    src = np.where(ok, base + np.clip(src, 0, width - 1), thread)
    return v[src]


class Aborted(Exception):
    """Raised in a CTA's thread when another CTA failed."""


class Cooperative:
    """Runs CTAs one at a time, handing the turn on at `grid_barrier` and spin points.

    Each CTA runs in its own Python thread, but only the one holding the turn runs, so a
    run is deterministic: turns go round in block order.
    """

    def __init__(self, n: int):
        self.cv = threading.Condition()
        self.n = n
        self.turn = 0
        self.alive = set(range(n))
        self.waiting: set[int] = set()
        self.error: BaseException | None = None

    def _pass(self, k: int) -> None:
        runnable = sorted(self.alive - self.waiting)
        if not runnable and self.waiting:
            if len(self.waiting) < self.n:  # a block ended: the others would wait for good
                done = sorted(set(range(self.n)) - self.alive)
                self.error = self.error or InterpError(
                    f"block {done[0]} ended without reaching `grid_barrier`, which every "
                    "block must reach"
                )
                self.cv.notify_all()
                return
            self.waiting.clear()  # every block reached the barrier
            runnable = sorted(self.alive)
        if not runnable:
            return
        later = [r for r in runnable if r > k]
        self.turn = later[0] if later else runnable[0]
        self.cv.notify_all()

    def _wait(self, k: int) -> None:
        self.cv.wait_for(
            lambda: self.error is not None or (self.turn == k and k not in self.waiting)
        )
        if self.error is not None:
            raise Aborted()

    def start(self, k: int) -> None:
        with self.cv:
            self._wait(k)

    def yield_turn(self, k: int) -> None:
        with self.cv:
            self._pass(k)
            self._wait(k)

    def barrier(self, k: int) -> None:
        with self.cv:
            self.waiting.add(k)
            self._pass(k)
            self._wait(k)

    def finish(self, k: int) -> None:
        with self.cv:
            self.alive.discard(k)
            self._pass(k)

    def fail(self, err: BaseException) -> None:
        with self.cv:
            if self.error is None:
                self.error = err
            self.cv.notify_all()

    def run(self, bodies) -> None:
        """Run `bodies[k]()` for each block k cooperatively; re-raise the first error."""

        def main(k: int) -> None:
            try:
                self.start(k)
                bodies[k]()
                self.finish(k)
            except Aborted:
                pass
            except BaseException as err:  # handed to the launching thread
                self.fail(err)

        threads = [threading.Thread(target=main, args=(k,), daemon=True) for k in range(self.n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if self.error is not None:
            raise self.error
