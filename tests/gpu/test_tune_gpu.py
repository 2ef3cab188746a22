"""The tuner on the card: seeded bad variants left out for their reasons, the winner right,
kept, and taken by a launch in another process without tuning again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from phobos.runtime import cuda

try:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device for torch", allow_module_level=True)
    cuda.device(0)
except cuda.DriverUnavailable as exc:  # pragma: no cover - machines without a GPU
    pytest.skip(str(exc), allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "tune"))

from tune_kernels import doubled, seeded  # noqa: E402

N = 8192 + 1024  # V=3 writes past `y` from 4096 elements on; not a multiple of BLOCK


def grid(meta):
    return (-(-meta["N"] // meta["BLOCK"]),)


def test_seeded_variants_are_left_out_and_the_winner_is_right(tmp_path):
    x = torch.randn(N, device="cuda")
    y = torch.full((N,), float("nan"), device="cuda")
    winner = seeded.tune(grid, x, y, reference=doubled)
    assert winner["V"] == 1
    assert torch.isnan(y).all()  # the tuner ran on copies
    [path] = (tmp_path / "phobos-cache").glob("sm_*/autotune/seeded-*.json")
    record = json.loads(path.read_text())
    stages = {}
    for v in record["variants"]:
        stages.setdefault(v["variant"]["V"], set()).add(v["status"] + ":" + v.get("stage", ""))
    assert stages[1] == {"timed:"}
    assert stages[2] == {"left out:mismatch"}
    assert stages[3] == {"left out:canary"}  # its store past `y` hit the canary
    assert stages[4] == {"left out:race"}
    reasons = {v["variant"]["V"]: v.get("reason", "") for v in record["variants"]}
    assert "past the end of `y`" in reasons[3]
    assert all(len(v["samples_ms"]) == 20 for v in record["variants"] if v["status"] == "timed")
    seeded[grid](x, y)  # the launch takes the winner
    torch.cuda.synchronize()
    assert torch.equal(y, 2 * x)


CHILD = """
import sys
import torch
sys.path.insert(0, {tune_dir!r})
import phobos.lang as ph
from phobos.tune import tuner
from tune_kernels import doubled, seeded

def refuse(*args, **kwargs):
    raise AssertionError("tuned again")

tuner._run = refuse  # a launch that tunes fails loudly
auto = ph.kernel(key=("N",), reference=doubled)(seeded.__wrapped__)
x = torch.randn({n}, device="cuda")
y = torch.full(({n},), float("nan"), device="cuda")
auto[lambda m: (-(-m["N"] // m["BLOCK"]),)](x, y)
torch.cuda.synchronize()
assert torch.equal(y, 2 * x), "wrong result"
print("winner", sorted(next(iter(auto._winners.values())).items()))
"""


def test_a_second_process_launches_the_kept_winner_without_tuning(tmp_path):
    x = torch.randn(N, device="cuda")
    y = torch.empty(N, device="cuda")
    winner = seeded.tune(grid, x, y, reference=doubled)
    script = tmp_path / "child.py"
    script.write_text(CHILD.format(tune_dir=str(ROOT / "tests" / "tune"), n=N))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # PHOBOS_CACHE_DIR: this test's cache
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == f"winner {sorted(winner.items())}"
    assert "tuning" not in done.stderr  # no progress bar: nothing was tuned


def test_tuning_during_graph_capture_is_refused():
    x = torch.randn(4096, device="cuda")
    y = torch.empty(4096, device="cuda")
    stream = torch.cuda.Stream()
    graph = torch.cuda.CUDAGraph()
    from phobos.tune.device import TuneError

    with torch.cuda.stream(stream):
        with pytest.raises(TuneError, match="while a CUDA graph is being captured"):
            with torch.cuda.graph(graph, stream=stream):
                seeded.tune(grid, x, y, reference=doubled, stream=stream)


def test_host_side_numbers_are_consistent(tmp_path):
    x = torch.randn(N, device="cuda")
    y = torch.empty(N, device="cuda")
    view = seeded.variant(V=1)
    view.tune(grid, x, y, reference=doubled, flush_l2=False)
    [path] = (tmp_path / "phobos-cache").glob("sm_*/autotune/seeded-*.json")
    record = json.loads(path.read_text())
    assert record["flush_l2"] is False and record["card"] == torch.cuda.get_device_name()
    for v in record["variants"]:
        assert v["best_ms"] == min(v["samples_ms"]) > 0
        assert np.isclose(v["median_ms"], np.median(v["samples_ms"]))


def test_a_launch_with_a_reference_on_the_decorator_tunes_first(tmp_path):
    import phobos.lang as ph

    auto = ph.kernel(key=("N",), reference=doubled)(seeded.__wrapped__)
    x = torch.randn(N, device="cuda")
    y = torch.full((N,), float("nan"), device="cuda")
    auto[grid](x, y)
    torch.cuda.synchronize()
    assert torch.equal(y, 2 * x)
    [path] = (tmp_path / "phobos-cache").glob("sm_*/autotune/seeded-*-N9216.json")
    written = path.stat().st_mtime_ns
    auto[grid](x, y)  # the same key values: no tuning
    x2 = torch.randn(4096, device="cuda")
    auto[grid](x2, torch.empty_like(x2))  # new key values: tuned first
    assert path.stat().st_mtime_ns == written
    assert len(list((tmp_path / "phobos-cache").glob("sm_*/autotune/seeded-*.json"))) == 2
