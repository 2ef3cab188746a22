"""The tuner's space: every variant compiled (in worker processes or here, alike), one
that needs too much shared memory or races left out with its reason, a crash of the
compiler reported as a left-out variant, never a traceback."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from phobos.runtime.contract import Contract
from phobos.tune import variants
from phobos.tune.variants import Compiled, LeftOut, compile_variants, report

ROOT = Path(__file__).resolve().parents[2]

# 256 threads write `t[0, thread % W]`: W=128 has two threads write each element (a
# race), W=16384 needs 64 KB of shared memory, more than the static 48 KB.
SPILL = (Path(__file__).resolve().parents[1] / "kernels" / "spill.py").read_text()


@pytest.fixture(autouse=True)
def quiet(monkeypatch):
    for name in ("PHOBOS_DUMP", "PHOBOS_LOG", "PHOBOS_BACKTRACE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def spill(tmp_path_factory):
    path = tmp_path_factory.mktemp("spill") / "spill_kernels.py"
    path.write_text(SPILL)
    spec = importlib.util.spec_from_file_location("spill_kernels", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.spill


@pytest.fixture(scope="module")
def here(spill):
    return compile_variants(spill, jobs=1)


def test_every_variant_comes_back_in_the_spaces_order(here):
    assert [r.key for r in here] == ["W=256", "W=1024", "W=128", "W=16384"]
    assert [r.variant for r in here] == [{"W": 256}, {"W": 1024}, {"W": 128}, {"W": 16384}]
    assert [type(r) for r in here] == [Compiled, Compiled, LeftOut, LeftOut]


def test_a_compiled_variant_carries_its_ptx_and_contract(here):
    ptx, contract = here[0].ptx, Contract.from_json(here[0].contract_json)
    assert ".entry spill(" in ptx and ".target sm_90" in ptx
    assert [k.entry for k in contract.kernels] == ["spill"]
    assert contract.kernels[0].variant == {"W": 256}
    assert here[0].ptx != here[1].ptx  # each variant its own module


def test_a_racing_variant_is_left_out_at_the_race_check(here):
    race = here[2]
    assert race.stage == "race"
    assert race.reason.startswith("error[E0909]: data race (write/write) on shared `tile_t_0`")
    assert "\n" not in race.reason
    assert "spill_kernels.py:11:5" in race.detail and "help: put a `barrier()`" in race.detail


def test_a_variant_over_shared_memory_is_left_out_with_the_bytes_it_needs(here):
    big = here[3]
    assert big.stage == "shared memory"
    assert big.reason == (
        "error[E0501]: the kernel's tiles need 65536 bytes of shared memory, "
        "more than the static 49152"
    )
    assert big.detail.startswith("error[E0501]: ")


def test_worker_processes_give_what_this_process_gives(spill, here):
    seen = []
    pooled = compile_variants(
        spill, jobs=2, progress=lambda done, total: seen.append((done, total))
    )
    assert pooled == here
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]


def test_without_the_race_check_the_racing_variant_compiles(spill):
    (result,) = compile_variants(spill, check_races=False, variants=[{"W": 128}])
    assert isinstance(result, Compiled) and result.key == "W=128"


def test_the_variants_asked_for_come_back_in_their_order(spill):
    results = compile_variants(spill, variants=[{"W": 16384}, {"W": 256}], jobs=1)
    assert [r.key for r in results] == ["W=16384", "W=256"]
    with pytest.raises(ValueError, match="`W` is 512, not one of its choices"):
        compile_variants(spill, variants=[{"W": 512}])
    with pytest.raises(ValueError, match="unknown chip `sm_70`"):
        compile_variants(spill, chip="sm_70")


def test_report_is_one_line_a_variant(here):
    lines = report(here).splitlines()
    assert lines[0] == "W=256    compiled"
    assert lines[1] == "W=1024   compiled"
    assert lines[2].startswith("W=128    left out: race: error[E0909]: data race")
    assert lines[3].startswith("W=16384  left out: shared memory: error[E0501]: ")
    assert len(lines) == 4


def test_a_compiler_crash_is_a_left_out_variant(spill, monkeypatch):
    real = variants.compile_variant

    def crashing(program, name, variant, chip, check_races):
        if variant == {"W": 1024}:
            raise AssertionError("a broken invariant")
        return real(program, name, variant, chip, check_races)

    monkeypatch.setattr(variants, "compile_variant", crashing)
    results = compile_variants(spill, jobs=1)
    crash = results[1]
    assert isinstance(crash, LeftOut) and crash.stage == "compile"
    assert crash.reason == "internal compiler error: AssertionError: a broken invariant"
    assert "this is a bug in Phobos" in crash.detail and "Traceback" not in crash.detail
    assert "variant W=1024 of `spill`" in crash.detail
    assert isinstance(results[0], Compiled) and results[2].stage == "race"


def test_a_script_that_compiles_at_its_top_level_is_not_run_again_by_the_workers(tmp_path):
    script = tmp_path / "tune_here.py"
    script.write_text(
        SPILL
        + "from phobos.tune.variants import compile_variants, report\n"
        + "print('started', flush=True)\n"
        + "print(report(compile_variants(spill, jobs=2)))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    ran = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.count("started") == 1
    assert "W=128    left out: race" in ran.stdout, ran.stdout
