"""The tuner's host side, on the CPU: variants run by the interpreter on host copies with
canaries (`tune_fakes.HostBackend`), times from a fake clock, records in a temporary cache."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from tune_fakes import HostBackend
from tune_kernels import doubled, seeded

from phobos.tune import records, tuner
from phobos.tune.device import TuneError

N = 4096  # variant V=3 writes past `y` from 4096 elements on


def grid(meta):
    return (-(-meta["N"] // meta["BLOCK"]),)


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PHOBOS_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("PHOBOS_CACHE", raising=False)
    monkeypatch.delenv("PHOBOS_TUNE", raising=False)
    monkeypatch.setenv("PHOBOS_PROGRESS", "0")
    return tmp_path


@pytest.fixture
def arrays():
    rng = np.random.default_rng()
    x = rng.standard_normal(N).astype(np.float32)
    y = np.full(N, np.nan, dtype=np.float32)
    return x, y


def fastest(times: dict[str, float]):
    """A fake card on which variant `key` takes `times[key]` ms (others 1 ms)."""
    return lambda name, n: times.get(name, 1.0)


def run(kernel, args, backend, **kw):
    out = io.StringIO()
    record = tuner.tune(kernel, grid, args, reference=doubled, backend=backend, out=out, jobs=1,
                        **kw)  # fmt: skip
    return record, out.getvalue()


def test_every_bad_variant_is_left_out_with_its_reason(arrays):
    backend = HostBackend(seeded, arrays, times=fastest({"V=1,BLOCK=512": 0.5}),
                          overrun={"V=1,BLOCK=256"})  # fmt: skip
    record, table = run(seeded, arrays, backend)
    stages = {seeded.checked().attrs.space.variant_key(r.variant): (r.status, r.stage)
              for r in record.variants}  # fmt: skip
    assert stages == {
        "V=1,BLOCK=256": ("left out", "canary"),  # its launch wrote past `x`
        "V=1,BLOCK=512": ("timed", None),
        "V=1,BLOCK=1024": ("timed", None),
        "V=2,BLOCK=256": ("left out", "mismatch"),
        "V=2,BLOCK=512": ("left out", "mismatch"),
        "V=2,BLOCK=1024": ("left out", "mismatch"),
        "V=3,BLOCK=256": ("left out", "launch"),  # the interpreter refuses the store
        "V=3,BLOCK=512": ("left out", "launch"),
        "V=3,BLOCK=1024": ("left out", "launch"),
        "V=4,BLOCK=256": ("left out", "race"),
        "V=4,BLOCK=512": ("left out", "race"),
        "V=4,BLOCK=1024": ("left out", "race"),
    }
    assert record.winner == {"V": 1, "BLOCK": 512}
    reasons = {r.stage: r.reason for r in record.variants if r.status == "left out"}
    assert reasons["canary"].startswith("the variant wrote past the end of `x`")
    assert reasons["mismatch"].startswith("`y` differs from the reference at [0]")
    assert "outside the [4096] tensor" in reasons["launch"]
    assert "data race (write/write)" in reasons["race"]
    assert "V=1,BLOCK=512" in table and "race" in table  # the table at the end
    # racing variants never load; the caller's arrays are never written
    assert not any(key.startswith("V=4") for key in backend.loaded)
    assert np.isnan(arrays[1]).all()


def test_timing_takes_the_fastest_of_twenty_rounds_and_keeps_every_sample(arrays):
    times = {"V=1,BLOCK=256": 3.0, "V=1,BLOCK=512": 2.0, "V=1,BLOCK=1024": 4.0}

    def noisy(name, n):  # the first launches slower; every seventh fast
        return times.get(name, 1.0) * (1.5 if n < 3 else 1.0) - (0.5 if n % 7 == 6 else 0.0)

    view = seeded.variant(V=1)
    record, _ = run(view, arrays, HostBackend(view, arrays, times=noisy))
    result = record.result_for({"V": 1, "BLOCK": 512})
    assert len(result.samples_ms) == tuner.ROUNDS
    assert result.best_ms == 1.5 and result.spread > 0
    assert record.winner == {"V": 1, "BLOCK": 512}
    assert [r.variant["V"] for r in record.variants] == [1, 1, 1]  # the view's variants only


def test_the_record_is_kept_and_a_second_tuning_runs_nothing(arrays, cache):
    view = seeded.variant(V=1)
    first, _ = run(view, arrays, HostBackend(view, arrays))
    files = list(cache.glob("sm_90/autotune/seeded-*-Fake_GPU-N4096.json"))
    assert len(files) == 1
    data = json.loads(files[0].read_text())
    assert data["key"] == {"N": 4096} and data["card"] == "Fake GPU"
    backend = HostBackend(view, arrays)
    second, table = run(view, arrays, backend)
    assert backend.loaded == [] and table == ""  # nothing compiled, loaded or timed
    assert second.winner == first.winner


def test_a_new_choice_runs_only_the_new_variants(arrays, cache):
    view = seeded.variant(V=1, BLOCK=256)
    run(view, arrays, HostBackend(view, arrays))
    wider = seeded.variant(V=1)
    backend = HostBackend(wider, arrays)
    record, _ = run(wider, arrays, backend)
    assert backend.loaded == ["V=1,BLOCK=512", "V=1,BLOCK=1024"]
    assert len([r for r in record.variants if r.status == "timed"]) == 3
    forced = HostBackend(wider, arrays)
    run(wider, arrays, forced, force=True)
    assert len(forced.loaded) == 3


def test_a_record_timed_warm_is_not_reused_for_a_cold_tuning(arrays):
    view = seeded.variant(V=1)
    run(view, arrays, HostBackend(view, arrays), flush_l2=False)
    backend = HostBackend(view, arrays)
    record, _ = run(view, arrays, backend)
    assert len(backend.loaded) == 3 and record.flush_l2
    assert "flush" in backend.clock_.events


def test_a_variant_the_card_cannot_load_is_left_out(arrays):
    view = seeded.variant(V=1)
    refuse = {"V=1,BLOCK=1024": ("registers", "255 registers a thread leave room for 128")}
    record, _ = run(view, arrays, HostBackend(view, arrays, refuse=refuse))
    result = record.result_for({"V": 1, "BLOCK": 1024})
    assert (result.status, result.stage) == ("left out", "registers")


def test_floats_within_their_rounding_pass_and_rtol_widens_it(arrays):
    def close(x, y):
        y[:] = 2.0 * x * (1 + 2e-6)  # 17 units of f32's epsilon: outside the default

    view = seeded.variant(V=1, BLOCK=256)
    out = io.StringIO()
    record = tuner.tune(view, grid, arrays, reference=close, backend=HostBackend(view, arrays),
                        out=out, jobs=1)  # fmt: skip
    assert record.winner is None and record.variants[0].stage == "mismatch"
    record = tuner.tune(view, grid, arrays, reference=close, backend=HostBackend(view, arrays),
                        out=out, jobs=1, rtol=1e-5)  # fmt: skip
    assert record.winner == {"V": 1, "BLOCK": 256}


def test_the_key_must_name_a_dynamic_extent():
    class Keyed:
        name, key = "k", ("M",)

    with pytest.raises(TuneError, match="the key names `M`, which is not a dynamic extent"):
        tuner.key_values(Keyed(), {"N": 64})


def test_tuning_needs_a_reference(arrays):
    with pytest.raises(TuneError, match="tuning needs `reference=`"):
        tuner.tune(seeded, grid, arrays, reference=None, backend=object())


@pytest.mark.parametrize("env", ["PHOBOS_TUNE=0", "PHOBOS_INTERPRET=1"])
def test_phobos_tune_0_takes_the_first_choices(arrays, monkeypatch, env):
    monkeypatch.setenv(*env.split("="))
    assert seeded.tune(grid, *arrays, reference=doubled) == {"V": 1, "BLOCK": 256}
    assert seeded.variant(BLOCK=1024).tune(grid, *arrays) == {"V": 1, "BLOCK": 1024}


def test_tuning_host_arrays_is_refused_by_name(arrays):
    with pytest.raises(TuneError, match="argument `x` is a host array"):
        seeded.tune(grid, *arrays, reference=doubled)


def test_a_launch_takes_the_stored_winner_for_its_key(arrays):
    view = seeded.variant(V=1)
    run(view, arrays, HostBackend(view, arrays, times=fastest({"V=1,BLOCK=1024": 0.1})))

    class Card:  # what a launch compiles for: the chip the host backend tuned for
        chip = target = "sm_90"
        name = "Fake GPU"

    assert seeded._stored_winner(Card(), {"N": N}, {}) == {"V": 1, "BLOCK": 1024}
    assert seeded._stored_winner(Card(), {"N": N}, {"BLOCK": 256}) == {"V": 1, "BLOCK": 256}
    assert seeded._stored_winner(Card(), {"N": 8192}, {}) is None


def test_the_source_key_ignores_the_choices_but_not_the_body():
    view = seeded.variant(V=1)
    assert records.source_key(view) == records.source_key(seeded) == seeded.source_key


def test_variants_reports_what_each_variant_became():
    report = seeded.variants()
    assert len(report.compiled) == 9 and len(report.left_out) == 3
    assert {r.stage for r in report.left_out} == {"race"}
    text = str(report)
    assert "V=1,BLOCK=256" in text and "V=4,BLOCK=1024  left out: race: error[E0909]" in text


def test_a_reference_that_raises_or_returns_stops_tuning_with_what_to_do(arrays):
    view = seeded.variant(V=1, BLOCK=256)

    def broken(x, y):
        raise ValueError("shapes do not match")

    def returning(x, y):
        return 2.0 * x

    for reference, message in ((broken, "the reference `broken` raised ValueError: shapes"),
                               (returning, "`returning` returned a value; it must write")):  # fmt: skip
        with pytest.raises(TuneError, match=message):
            tuner.tune(view, grid, arrays, reference=reference, out=io.StringIO(), jobs=1,
                       backend=HostBackend(view, arrays))  # fmt: skip
