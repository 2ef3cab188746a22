"""`phobos.testing.do_bench`: the tuner's schedule, timing any callable."""

from __future__ import annotations

import pytest

from phobos.testing import do_bench


class Ticks:
    """A clock that gives each timed call the next of `times` and counts flushes."""

    def __init__(self, times):
        self.times = list(times)
        self.now = 0.0
        self.flushes = 0
        self.calls = 0

    def flush_l2(self) -> None:
        self.flushes += 1

    def time_ms(self, launch) -> float:
        launch()
        ms = self.times[self.calls % len(self.times)]
        self.calls += 1
        self.now += 1.0
        return ms

    def wall(self) -> float:
        return self.now


def test_the_fastest_round_is_the_answer() -> None:
    calls = []
    clock = Ticks([9.0, 3.0, 2.0, 4.0])
    ms = do_bench(lambda: calls.append(1), rounds=3, warmup_s=0, clock=clock)
    assert ms == 2.0  # the warm-up's 9.0 is not a sample
    assert len(calls) == 4 and clock.flushes == 4


def test_samples_and_a_warm_l2() -> None:
    clock = Ticks([1.0, 2.0, 4.0])
    best, median, spread, samples = do_bench(
        lambda: None, rounds=2, warmup_s=0, flush_l2=False, clock=clock, samples=True
    )
    assert samples == [2.0, 4.0] and (best, median, spread) == (2.0, 3.0, 1.0)
    assert clock.flushes == 0


def test_an_exception_of_the_callable_is_raised() -> None:
    def broken() -> None:
        raise ValueError("not launchable")

    with pytest.raises(ValueError, match="not launchable"):
        do_bench(broken, rounds=2, warmup_s=0, clock=Ticks([1.0]))
