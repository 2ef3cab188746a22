"""The timing schedule (phobos.tune.timing) on a fake clock, and the card's clock on the
fake driver: warm-up, turns, rotation, flushes, failures, and what a variant's time is."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

from phobos.runtime import cuda
from phobos.tune.timing import CudaClock, FakeClock, measure, summary

# the fake CUDA driver the runtime's tests use
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))
from test_cuda_fake import FakeDriver  # noqa: E402


def timed(events: list[str]) -> list[str]:
    return [e.removeprefix("time:") for e in events if e.startswith("time:")]


def rounds_only(events: list[str], n_variants: int, rounds: int) -> list[str]:
    """The variants timed in the rounds: the last `rounds * n_variants` timed launches."""
    return timed(events)[-rounds * n_variants :]


# ---------------------------------------------------------------------------
# the schedule


def test_the_warmup_lasts_at_least_warmup_s_in_whole_turns():
    clock = FakeClock({"a": 10.0, "b": 10.0}, overhead_s=0.0)  # a turn is 20 ms
    measure(clock.launches("ab"), clock, rounds=2, warmup_s=0.3)
    warm = len(timed(clock.events)) - 2 * 2
    assert warm == 30  # 15 turns of 20 ms: the first to reach 300 ms
    assert clock.counts == {"a": 17, "b": 17}


@pytest.mark.parametrize("warmup_s", [0.0, 0.05, 1.0])
def test_the_warmup_ends_once_its_time_has_passed(warmup_s):
    clock = FakeClock({"a": 1.0, "b": 3.0}, overhead_s=0.0)
    ends = []
    measure(
        clock.launches("ab"),
        clock,
        rounds=1,
        warmup_s=warmup_s,
        progress=lambda done, total: ends.append(clock.wall()) if not ends else None,
    )
    warm_end = ends[0] - 0.001  # the wall before the first timed launch (a: 1 ms)
    assert warm_end >= warmup_s
    assert warm_end < warmup_s + 0.004 + 1e-9  # within one turn of it


def test_every_variant_is_warmed_even_with_no_warmup_time():
    clock = FakeClock({"slow": 50.0, "fast": 0.001})
    samples, _ = measure(clock.launches(["slow", "fast"]), clock, rounds=3, warmup_s=0.0)
    assert clock.events[:6] == [
        "flush",
        "launch:slow",
        "time:slow",
        "flush",
        "launch:fast",
        "time:fast",
    ]
    assert clock.counts == {"slow": 4, "fast": 4}
    assert {name: len(s) for name, s in samples.items()} == {"slow": 3, "fast": 3}


def test_each_round_starts_one_variant_further_along():
    clock = FakeClock({"a": 1.0, "b": 1.0, "c": 1.0})
    measure(clock.launches("abc"), clock, rounds=4, warmup_s=0.0)
    order = rounds_only(clock.events, 3, 4)
    assert order == [*"abc", *"bca", *"cab", *"abc"]


def test_each_launch_follows_exactly_one_flush():
    clock = FakeClock({"a": 1.0, "b": 2.0})
    measure(clock.launches("ab"), clock, warmup_s=0.01)
    events = clock.events
    launches = [i for i, e in enumerate(events) if e.startswith("launch:")]
    assert all(events[i - 1] == "flush" for i in launches)
    assert events.count("flush") == len(launches) == len(timed(events))
    # a flush comes between one launch's timing and the next launch, never inside
    assert all(events[i + 1].startswith("time:") for i in launches)


def test_no_flush_when_timing_warm():
    clock = FakeClock({"a": 1.0, "b": 2.0})
    samples, _ = measure(clock.launches("ab"), clock, warmup_s=0.01, flush_l2=False)
    assert "flush" not in clock.events
    assert len(samples["a"]) == 20


def test_twenty_samples_each_in_launch_order():
    clock = FakeClock(lambda name, n: 100.0 * (name == "b") + n, overhead_s=0.0)
    samples, failures = measure(clock.launches("ab"), clock, warmup_s=0.0)
    assert failures == {}
    assert samples == {
        "a": [float(n) for n in range(1, 21)],  # launch 0 was the warm-up's
        "b": [100.0 + n for n in range(1, 21)],
    }


def test_a_failing_variant_is_dropped_and_the_others_finish():
    clock = FakeClock({"a": 1.0, "b": 2.0, "c": 3.0}, failing={"b": 5})
    reports = []
    samples, failures = measure(
        clock.launches("abc"), clock, warmup_s=0.0, progress=lambda *p: reports.append(p)
    )
    assert set(samples) == {"a", "c"} and set(failures) == {"b"}
    assert failures["b"] == "RuntimeError: b: an illegal memory access (fake)"
    assert len(samples["a"]) == len(samples["c"]) == 20
    assert clock.events.count("launch:b") == 6  # the warm-up's, 4 timed, the one that failed
    # the count never goes back and ends at every launch the schedule had
    assert [done for done, _ in reports] == sorted(done for done, _ in reports)
    assert reports[-1] == (60, 60)
    assert {total for _, total in reports} == {60}


def test_a_variant_failing_in_the_warmup_is_never_timed():
    clock = FakeClock({"a": 1.0, "b": 2.0}, failing={"b": 0})
    samples, failures = measure(clock.launches("ab"), clock, rounds=3, warmup_s=0.01)
    assert list(samples) == ["a"] and list(failures) == ["b"]
    assert clock.events.count("launch:b") == 1
    assert "time:b" not in clock.events


def test_all_failing_ends_the_schedule():
    clock = FakeClock({"a": 1.0}, failing={"a": 0})
    reports = []
    samples, failures = measure(
        clock.launches("a"), clock, warmup_s=10.0, progress=lambda *p: reports.append(p)
    )
    assert samples == {} and list(failures) == ["a"]
    assert clock.events == ["flush", "launch:a"]
    assert reports == []


def test_a_driver_error_is_reported_in_the_drivers_words_on_one_line():
    error = cuda.CudaError(
        "cuEventSynchronize", 700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access"
    )
    error.log = "more\nlines"

    def clock_times(name, n):
        raise error

    clock = FakeClock(clock_times)
    _, failures = measure(clock.launches("a"), clock, warmup_s=0.0)
    assert failures == {
        "a": "cuEventSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory access"
    }


def test_progress_counts_each_timed_launch():
    clock = FakeClock({"a": 1.0, "b": 1.0})
    reports = []
    measure(clock.launches("ab"), clock, rounds=3, progress=lambda *p: reports.append(p))
    assert reports == [(n, 6) for n in range(1, 7)]


def test_no_variants_and_no_rounds():
    clock = FakeClock({})
    assert measure({}, clock) == ({}, {})
    with pytest.raises(ValueError, match="rounds must be at least 1"):
        measure(clock.launches("a"), clock, rounds=0)


def test_the_fake_clock_times_only_its_own_launches():
    clock = FakeClock({"a": 1.0})
    with pytest.raises(ValueError, match="only the launches its `launch` made"):
        clock.time_ms(lambda: None)
    ran = []
    assert clock.time_ms(clock.launch("a", run=lambda: ran.append(1))) == 1.0
    assert ran == [1]


# ---------------------------------------------------------------------------
# summary


def test_summary_is_the_fastest_the_median_and_the_spread():
    assert summary([3.0, 1.0, 2.0]) == (1.0, 2.0, 2.0)
    assert summary([0.5]) == (0.5, 0.5, 0.0)
    best, median, spread = summary([0.0125, 0.0123, 0.0130, 0.0124])
    assert (best, median) == (0.0123, 0.01245)
    assert spread == pytest.approx(0.0007 / 0.0123)


def test_summary_of_zero_times_and_of_nothing():
    assert summary([0.0, 0.0]) == (0.0, 0.0, 0.0)
    assert math.isinf(summary([0.0, 1.0])[2])
    with pytest.raises(ValueError, match="no samples"):
        summary([])


# ---------------------------------------------------------------------------
# the card's clock, on the fake driver


@pytest.fixture
def fake():
    driver = FakeDriver()
    previous = cuda.use_library(driver)
    yield driver
    cuda.use_library(previous)


def test_the_flush_buffer_is_twice_the_l2_and_the_events_are_made_once(fake):
    l2 = cuda.device(0).properties.l2_bytes
    with CudaClock(cuda.device(0)) as clock:
        assert clock.flush_bytes == 2 * l2 == 2 * 52428800
        for _ in range(3):
            clock.flush_l2()
            assert clock.time_ms(lambda: fake._record("launch")) == 1.5
    names = fake.names()
    assert names.count("cuEventCreate") == 2
    assert [args for name, args in fake.calls if name == "cuMemAlloc_v2"] == [(2 * l2,)]
    memsets = [args for name, args in fake.calls if name == "cuMemsetD8_v2"]
    assert len(memsets) == 3
    assert all(dst == 0x7000_0000 and size == 2 * l2 for dst, _, size in memsets)
    assert len({value for _, value, _ in memsets}) == 3  # a different byte each time
    assert "cuCtxSynchronize" not in names  # on the legacy stream the flush stays queued
    assert names.count("cuEventDestroy_v2") == 2
    assert [args for name, args in fake.calls if name == "cuMemFree_v2"] == [(0x7000_0000,)]


def test_a_launch_is_timed_between_its_events(fake):
    stream = 0x5000
    clock = CudaClock(cuda.device(0), stream=stream)
    start, end = clock._events
    first = len(fake.calls)
    clock.time_ms(lambda: fake._record("launch"))
    assert fake.calls[first:] == [
        ("cuEventRecord", (start, stream)),
        ("launch", ()),
        ("cuEventRecord", (end, stream)),
        ("cuEventSynchronize", (end,)),
        ("cuEventElapsedTime", (start, end)),
    ]
    clock.flush_l2()  # on a stream of its own, the flush is waited for
    assert fake.names()[-2:] == ["cuMemsetD8_v2", "cuCtxSynchronize"]
    clock.close()
    clock.close()
    assert fake.names().count("cuEventDestroy_v2") == 2
    assert fake.names().count("cuMemFree_v2") == 1


def test_the_events_are_destroyed_when_the_buffer_cannot_be_had(fake):
    fake.fail["cuMemAlloc_v2"] = 2  # CUDA_ERROR_OUT_OF_MEMORY
    with pytest.raises(cuda.CudaError, match="cuMemAlloc"):
        CudaClock(cuda.device(0))
    assert fake.names().count("cuEventCreate") == 2
    assert fake.names().count("cuEventDestroy_v2") == 2
    assert "cuMemFree_v2" not in fake.names()


def test_measure_on_the_cards_clock(fake):
    with CudaClock(cuda.device(0)) as clock:
        samples, failures = measure({"a": lambda: None, "b": lambda: None}, clock, warmup_s=0.0)
    assert failures == {}
    assert samples == {"a": [1.5] * 20, "b": [1.5] * 20}
