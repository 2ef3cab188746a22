"""Fair timing of a kernel's variants: CUDA events around each launch, the variants
taking turns so they share the card's clock, the L2 flushed before each timed launch.

The schedule (`measure`) is written against a `Clock`, so it runs on the CPU as on
the card: `CudaClock` times with the driver's events, `FakeClock` with numbers it is
given, and records what it was asked to do.

1. Warm-up: the variants take turns, one launch each a turn, through the same path as
   a timed launch, until at least `warmup_s` seconds of wall time have passed (a turn
   at least, so every variant ran once). The card's clocks ramp up on load, and the
   first launch of a module pays for loading it.
2. `rounds` rounds: each variant launched and timed once a round, round `r` starting
   at variant `r mod n`, so no variant always runs right after the flush's write-back
   or after the same neighbour.
3. Before each launch, warm-up included, the L2 is flushed by writing a buffer twice
   its size, outside the events: a variant is timed reading its inputs from memory, as
   it would after other work (`flush_l2=False` times it with the L2 warm).

A variant's time is the fastest of its rounds (`summary`): noise on a card only ever
adds time. Every sample is kept, and the spread says how far the samples scatter.

    >>> clock = FakeClock({"BLOCK=1024": 0.50, "BLOCK=2048": 0.25})
    >>> samples, failures = measure(clock.launches(["BLOCK=1024", "BLOCK=2048"]), clock)
    >>> {name: summary(s)[0] for name, s in samples.items()}, failures
    ({'BLOCK=1024': 0.5, 'BLOCK=2048': 0.25}, {})
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping
from typing import Protocol

from phobos.runtime import cuda

Launch = Callable[[], None]
ROUNDS = 20  # the spec's "fastest of 20 rounds"
WARMUP_S = 0.3  # the spec's warm-up "of at least 300 ms"


class Clock(Protocol):
    """What the schedule needs from a device."""

    def flush_l2(self) -> None:
        """Write the flush buffer (outside any events)."""

    def time_ms(self, launch: Launch) -> float:
        """Events around one `launch()`; the milliseconds between them, once it ran."""

    def wall(self) -> float:
        """Seconds on a monotonic clock (the warm-up's accounting)."""


def measure(
    launches: Mapping[str, Launch],
    clock: Clock,
    *,
    rounds: int = ROUNDS,
    warmup_s: float = WARMUP_S,
    flush_l2: bool = True,
    progress: Callable[[int, int], object] | None = None,
) -> tuple[dict[str, list[float]], dict[str, str]]:
    """Time each of `launches` (variant name -> a callable that launches it once, on the
    clock's stream) by the schedule above.

    Returns `(samples, failures)`; each variant is in exactly one of them:

    - `samples`: variant -> its `rounds` times in milliseconds, in launch order;
    - `failures`: variant -> the one-line text of the exception its launch raised (in
      the warm-up or a round). A failing variant is launched no more; the others finish.

    `progress(done, total)` is called after each timed launch; `total` is
    `rounds * len(launches)`, and `done` counts the launches a failed variant no
    longer makes, so it ends at `total`.

    >>> clock = FakeClock(lambda name, n: 1.0 + n % 3, failing={"c": 0})
    >>> samples, failures = measure(clock.launches("abc"), clock, rounds=4, warmup_s=0)
    >>> samples["a"], failures
    ([2.0, 3.0, 1.0, 2.0], {'c': 'RuntimeError: c: an illegal memory access (fake)'})
    """
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, not {rounds}")
    names = list(launches)
    samples: dict[str, list[float]] = {name: [] for name in names}
    failures: dict[str, str] = {}
    total = rounds * len(names)

    def alive(order: list[str]) -> list[str]:
        return [name for name in order if name not in failures]

    def run(name: str) -> float | None:
        if flush_l2:
            clock.flush_l2()
        try:
            return clock.time_ms(launches[name])
        except Exception as exc:  # the variant's failure, reported as left out
            failures[name] = _reason(exc)
            return None

    # 1. warm-up: whole turns, so every variant is warmed as much as the others
    start = clock.wall()
    while alive(names):
        for name in alive(names):
            run(name)
        if clock.wall() - start >= warmup_s:
            break

    # 2. the rounds, each starting one variant further along
    for r in range(rounds):
        k = r % len(names) if names else 0
        order = alive(names[k:] + names[:k])
        if not order:
            break
        for name in order:
            ms = run(name)
            if ms is not None:
                samples[name].append(ms)
            if progress is not None:
                done = sum(rounds if n in failures else len(samples[n]) for n in names)
                progress(done, total)
    return {n: s for n, s in samples.items() if n not in failures}, failures


def summary(samples: list[float]) -> tuple[float, float, float]:
    """`(best, median, spread)` of a variant's samples in milliseconds: the fastest, the
    median, and `(max - min) / min`.

    >>> summary([0.0125, 0.0123, 0.0130])
    (0.0123, 0.0125, 0.0569...)
    """
    if not samples:
        raise ValueError("no samples to summarize")
    best, worst = min(samples), max(samples)
    if best > 0:
        spread = (worst - best) / best
    else:  # a zero time (a fake's) spreads by nothing or by everything
        spread = 0.0 if worst == best else float("inf")
    return best, statistics.median(samples), spread


def _reason(exc: BaseException) -> str:
    """One line for a record's `reason`: the exception's first line, named by its type
    when that adds anything."""
    lines = str(exc).strip().splitlines()
    text = lines[0].strip() if lines else ""
    if isinstance(exc, cuda.CudaError):
        return text  # already names the call and the driver's words
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class CudaClock:
    """The card's clock: two events made once, timing each launch on `stream`, and a
    flush buffer twice the L2's size. `close()` (or the `with` block's end) frees them.

        with CudaClock(cuda.device(0)) as clock:
            samples, failures = measure(launches, clock)

    The flush is `cuMemsetD8`, on the legacy stream. On stream 0 it stays queued: it is
    ordered before the events, and it keeps the card busy while the host records the
    start event and launches, so a small kernel's time is not the host's launch
    latency. On another stream, which may not synchronize with the legacy one
    (`CU_STREAM_NON_BLOCKING`), the flush is waited for, so it never overlaps a timed
    launch.
    """

    def __init__(self, device: cuda.Device, stream: int = 0):
        device.activate()
        self.device = device
        self.stream = stream
        self.flush_bytes = 2 * device.properties.l2_bytes
        self._events: list[int] = []
        self._buffer = 0
        try:
            self._events = [cuda.event_create(), cuda.event_create()]
            self._buffer = cuda.mem_alloc(self.flush_bytes)
        except BaseException:
            self.close()
            raise
        self._value = 0

    def flush_l2(self) -> None:
        # a different byte each time, so no write can be skipped as unchanged
        self._value = (self._value + 1) & 0xFF
        cuda.memset_d8(self._buffer, self._value, self.flush_bytes)
        if self.stream != 0:
            cuda.ctx_synchronize()

    def time_ms(self, launch: Launch) -> float:
        start, end = self._events
        cuda.event_record(start, self.stream)
        launch()
        cuda.event_record(end, self.stream)
        cuda.event_synchronize(end)
        return cuda.event_elapsed_ms(start, end)

    def wall(self) -> float:
        return time.perf_counter()

    def close(self) -> None:
        """Destroy the events and free the flush buffer; a second call does nothing."""
        events, self._events = self._events, []
        for event in events:
            cuda.event_destroy(event)
        buffer, self._buffer = self._buffer, 0
        if buffer:
            cuda.mem_free(buffer)

    def __enter__(self) -> CudaClock:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class FakeClock:
    """A clock for tests: each variant takes the milliseconds `times` gives, a mapping
    `{name: ms}` or a function `(name, n) -> ms`, `n` counting that variant's timed
    launches from 0, warm-up included. `failing={name: n}` makes a variant's launch
    `n` (counted the same way) and every later one raise.

    `launches(names)` makes the launch callables, which tell the clock who runs.
    `events` records the schedule: `"flush"`, `"launch:NAME"` (the launch itself) and
    `"time:NAME"` (after a timed one). `wall()` advances by each timed launch's time
    plus `overhead_s`, so a warm-up ends.

    >>> clock = FakeClock({"a": 2.0})
    >>> clock.flush_l2(); clock.time_ms(clock.launch("a"))
    2.0
    >>> clock.events, clock.wall()
    (['flush', 'launch:a', 'time:a'], 0.00201)
    """

    def __init__(
        self,
        times: Mapping[str, float] | Callable[[str, int], float],
        *,
        failing: Mapping[str, int] | None = None,
        overhead_s: float = 1e-5,
    ):
        self.times = times
        self.failing = dict(failing or {})
        self.overhead_s = overhead_s
        self.events: list[str] = []
        self.counts: dict[str, int] = {}  # timed launches so far, per variant
        self.now = 0.0
        self._running: str | None = None

    def launch(self, name: str, run: Launch | None = None) -> Launch:
        """A callable that launches variant `name` (calling `run` too, when given)."""

        def launch() -> None:
            self.events.append(f"launch:{name}")
            self._running = name
            n = self.counts.get(name, 0)
            if name in self.failing and n >= self.failing[name]:
                raise RuntimeError(f"{name}: an illegal memory access (fake)")
            if run is not None:
                run()

        return launch

    def launches(self, names) -> dict[str, Launch]:
        """`{name: launch}` for each of `names`, for `measure`."""
        return {name: self.launch(name) for name in names}

    def flush_l2(self) -> None:
        self.events.append("flush")

    def time_ms(self, launch: Launch) -> float:
        self._running = None
        launch()
        name = self._running
        if name is None:
            raise ValueError("FakeClock times only the launches its `launch` made")
        n = self.counts.get(name, 0)
        self.counts[name] = n + 1
        ms = self.times(name, n) if callable(self.times) else self.times[name]
        self.events.append(f"time:{name}")
        self.now += ms / 1000 + self.overhead_s
        return float(ms)

    def wall(self) -> float:
        return self.now
