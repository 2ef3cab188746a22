"""examples/tp_mlp.py on two GPUs (issue 16's machine): `torchrun --nproc-per-node 2`,
NCCL between the ranks, each rank's Phobos kernels launched on its own device. Both ranks
compile and tune into one shared kernel cache at the same time; each result equals the
block on one device within the GEMM's rounding; a second start finds every kernel and
every tuning result there, and writes nothing.

Skipped, saying so, where fewer than two GPUs answer."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from gpukit import torch_on_a_gpu

torch = torch_on_a_gpu()
if torch.cuda.device_count() < 2:
    pytest.skip("one GPU here: the distributed block needs two", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
LINE = re.compile(r"rank (\d)/2 on cuda:(\d): max \|tp - one device\| (\S+), "
                  r"max \|tp - float64\| (\S+): (ok|WRONG)")  # fmt: skip


def torchrun(cache: Path, *args) -> subprocess.CompletedProcess:
    env = {**os.environ, "PHOBOS_CACHE_DIR": str(cache)}
    argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
            "2", str(ROOT / "examples" / "tp_mlp.py"), *args]  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)


def files(cache: Path) -> dict[str, int]:
    return {
        str(p.relative_to(cache)): p.stat().st_mtime_ns for p in cache.rglob("*") if p.is_file()
    }


def test_two_ranks_tune_into_one_cache_and_a_second_start_finds_everything(tmp_path):
    cache = tmp_path / "shared-cache"
    first = torchrun(cache, "--tune", "--tokens", "1024", "--hidden", "1024", "--ffn", "4096")
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    lines = LINE.findall(first.stdout)
    assert sorted((r, d) for r, d, *_ in lines) == [("0", "0"), ("1", "1")], first.stdout
    assert all(v == "ok" for *_, v in lines)
    written = files(cache)
    assert any("autotune" in name for name in written), written  # the tuning results
    second = torchrun(cache, "--tune", "--tokens", "1024", "--hidden", "1024", "--ffn", "4096")
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert all(v == "ok" for *_, v in LINE.findall(second.stdout))
    assert files(cache) == written  # every kernel and record found; nothing compiled again
