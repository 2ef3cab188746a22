"""examples/tp_mlp.py, the tensor-parallel MLP block, on two CPU ranks (torchrun, gloo,
its Phobos operators in the tile interpreter): each rank's result equals the block on one
device within the GEMM's rounding and float64's within f16's. Its GEMMs and norm compile
for the card's chips, and the PTX assembles with no spill. On two GPUs (NCCL, a shared
cache, both ranks tuning at once) it is tests/gpu/test_distributed_gpu.py's."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from examples import tp_mlp  # noqa: E402


def torchrun(*args, cache: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PHOBOS_CACHE_DIR": str(cache), "OMP_NUM_THREADS": "1"}
    # --standalone: a rendezvous of this machine's own, on a free port
    argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
            "2", str(ROOT / "examples" / "tp_mlp.py"), *args]  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)


@pytest.mark.skipif(not dist.is_available(), reason="this torch has no torch.distributed")
def test_the_block_on_two_cpu_ranks_equals_one_device(tmp_path):
    ran = torchrun("--cpu", "--tokens", "128", "--hidden", "256", "--ffn", "512",
                   cache=tmp_path / "cache")  # fmt: skip
    lines = re.findall(r"rank (\d)/2 on cpu: max \|tp - one device\| (\S+), "
                       r"max \|tp - float64\| (\S+): (ok|WRONG)", ran.stdout)  # fmt: skip
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert sorted(r for r, *_ in lines) == ["0", "1"], ran.stdout
    for _, one, ref, verdict in lines:
        assert verdict == "ok" and float(one) <= 4e-3 and float(ref) <= 1e-2


def test_the_blocks_shapes_are_checked_before_anything_runs(tmp_path):
    ran = torchrun("--cpu", "--tokens", "100", cache=tmp_path / "cache")
    assert ran.returncode != 0
    assert "tokens and hidden must be multiples of 128" in ran.stderr + ran.stdout


@pytest.mark.parametrize("chip", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name", ["rms_norm", "up_relu", "down"])
def test_its_kernels_assemble_for_the_card_without_a_spill(name, chip, tmp_path):
    kernel = getattr(tp_mlp, name)
    variant = {"BLOCK": 1024, "T": 256} if name == "rms_norm" else {"TILE_N": 128}
    built = kernel.compile(chip=chip, variant=variant)
    if name != "rms_norm" and chip == "sm_90a":
        ops = {i.op for i in _insts(built.lir.body)}
        assert {"wgmma_mma", "tma_load"} <= ops  # the Hopper GEMM, ReLU fused after it
    assert ".local" not in built.ptx
    ptxas = shutil.which("ptxas")
    if ptxas is None:
        assert not os.environ.get("CI"), "CI assembles what Phobos emits"
        return
    path = tmp_path / f"{name}.ptx"
    path.write_text(built.ptx)
    done = subprocess.run([ptxas, f"-arch={chip}", "-v", str(path), "-o", str(tmp_path / "k.o")],
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "0 bytes spill stores" in done.stderr and "warning" not in done.stderr, done.stderr


def _insts(block):
    for item in block.items:
        if hasattr(item, "op"):
            yield item
        for sub in ("then", "orelse", "body"):
            inner = getattr(item, sub, None)
            if inner is not None:
                yield from _insts(inner)
