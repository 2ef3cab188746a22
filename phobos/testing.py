"""Helpers for timing and testing kernels outside the autotuner.

`do_bench` times any callable the way the autotuner times a variant
(`phobos.tune.timing.measure`): a warm-up of at least `warmup_s` seconds, then
`rounds` launches each timed by CUDA events, the L2 flushed before each, and the
fastest kept. It needs a GPU (the CUDA driver) unless a `clock` is given.

    import phobos.lang as ph
    from phobos.testing import do_bench

    x = cupy.ones(1 << 20, cupy.float32)       # any device array
    ms = do_bench(lambda: saxpy[grid](x, y, out, 2.0))
    print(f"{ms:.3f} ms, {3 * x.nbytes / ms / 1e6:.1f} GB/s")

A `clock` stands in for the card (`phobos.tune.timing.Clock`: `flush_l2()`,
`time_ms(launch)`, `wall()`), so the schedule can be run without one:

    >>> class Ticks:
    ...     now = 0.0
    ...     def flush_l2(self): pass
    ...     def time_ms(self, launch):
    ...         launch(); self.now += 1.0; return 0.5
    ...     def wall(self): return self.now
    >>> calls = []
    >>> do_bench(lambda: calls.append(1), rounds=3, warmup_s=0, clock=Ticks())
    0.5
    >>> len(calls)   # one warm-up launch, then the three rounds
    4
"""

from __future__ import annotations

from collections.abc import Callable

from phobos.tune.timing import ROUNDS, WARMUP_S, measure, summary

__all__ = ["do_bench"]


def do_bench(
    fn: Callable[[], object],
    *,
    rounds: int = ROUNDS,
    warmup_s: float = WARMUP_S,
    flush_l2: bool = True,
    stream: int = 0,
    device: int = 0,
    clock=None,
    samples: bool = False,
):
    """The fastest of `rounds` timed calls of `fn`, in milliseconds.

    `fn` launches the work once, on `stream` (a kernel launch takes `stream=`; the
    legacy default stream, 0, unless told). `flush_l2=False` times it with the L2
    warm. With `samples=True` the answer is `(best, median, spread, every sample)`.
    An exception `fn` raises is raised here, after the clock is closed.
    """
    raised: list[BaseException] = []

    def launch() -> None:
        try:
            fn()
        except BaseException as exc:
            raised.append(exc)
            raise

    own = clock is None
    if own:
        from phobos.runtime import cuda
        from phobos.tune.timing import CudaClock

        clock = CudaClock(cuda.device(device), stream)
    try:
        timed, failures = measure(
            {"fn": launch}, clock, rounds=rounds, warmup_s=warmup_s, flush_l2=flush_l2
        )
    finally:
        if own:
            clock.close()
    if failures:
        if raised:
            raise raised[-1]
        raise RuntimeError(failures["fn"])
    best, median, spread = summary(timed["fn"])
    if samples:
        return best, median, spread, list(timed["fn"])
    return best
