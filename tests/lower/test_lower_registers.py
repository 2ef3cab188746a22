"""Registers a thread, as `ptxas -v` counts them on sm_90, for the benchmarked kernels.

Registers bound how many CTAs an SM holds (65536 a SM, allocated 8 a thread at a
time), and the row kernels hide their reductions' latency with resident CTAs, so each
case has a ceiling: the largest count that keeps today's CTAs a SM. A change that
costs a CTA fails here. Skipped without ptxas, except under CI.

Also: `phobos.ptx.fuse` turns two f32 -> f16 conversions packed into one word into one
`cvt.rn.f16x2.f32` (sm_90), and leaves anything it cannot prove alone.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from phobos.lower.lir import Block, Kernel, Reg, inst
from phobos.ptx import fuse
from phobos.ptx.emit import emit_kernel

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks import kernels  # noqa: E402

# (kernel, variant, ceiling): measured 53, 32, 51, 28, 61, 29, 32, 20 with ptxas 12.x
CEILINGS = [
    # Registers are allocated 8 at a time a thread: up to 64 keeps 4 CTAs of 256 (67: 3).
    ("layer_norm", {"BLOCK": 8192, "T": 256}, 64),
    ("layer_norm", {"BLOCK": 1024, "T": 128}, 32),  # 16 CTAs of 128: the SM's 2048 threads
    ("rms_norm", {"BLOCK": 8192, "T": 256}, 64),
    ("rms_norm", {"BLOCK": 1024, "T": 128}, 32),
    ("softmax_rows", {"BLOCK": 16384, "T": 512}, 64),  # 2 CTAs of 512
    ("softmax_rows", {"BLOCK": 1024, "T": 128}, 32),
    ("vector_add", {"BLOCK": 4096}, 32),  # 8 CTAs of 256
    ("vector_add", {"BLOCK": 1024}, 32),
]


def ptxas_v(ptx: str, arch: str = "sm_90") -> tuple[int, int]:
    """(registers a thread, spill store bytes) of the one entry in `ptx`."""
    exe = shutil.which("ptxas")
    if exe is None:
        if os.environ.get("CI") == "true":
            pytest.fail("ptxas is not on PATH, and CI=true: CI must count registers")
        pytest.skip("ptxas is not installed")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "k.ptx")
        with open(path, "w") as f:
            f.write(ptx)
        r = subprocess.run([exe, "-v", f"-arch={arch}", path, "-o", os.devnull],
                           capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 0, r.stderr
    regs = re.search(r"Used (\d+) registers", r.stderr)
    spills = re.search(r"(\d+) bytes spill stores", r.stderr)
    assert regs is not None, r.stderr
    return int(regs.group(1)), int(spills.group(1)) if spills else 0


# The example SGEMM's benchmarked tiles (benchmarks/contractions.py), 256 threads: 128
# registers keep two CTAs an SM; one more halves them (run 23: 130 registers, a ring's
# stage address held through the turn, cost 12 %). Measured 128, 128, 128, 128, 96.
SGEMM_CEILINGS = [
    ({"TILE_M": 128, "TILE_N": 128, "TILE_K": 16}, 128),
    ({"TILE_M": 128, "TILE_N": 128, "TILE_K": 8}, 128),
    ({"TILE_M": 64, "TILE_N": 128, "TILE_K": 16}, 128),
    ({"TILE_M": 128, "TILE_N": 64, "TILE_K": 16}, 128),
]


@pytest.mark.parametrize(("variant", "ceiling"), SGEMM_CEILINGS,
                         ids=["x".join(map(str, v.values())) for v, _ in SGEMM_CEILINGS])  # fmt: skip
def test_sgemm_tiles_keep_two_ctas_an_sm(variant, ceiling):
    from examples.sgemm import matmul

    regs, spills = ptxas_v(matmul.variant(**variant).compile(chip="sm_90").ptx)
    assert spills == 0, f"sgemm {variant}: {spills} bytes spilled"
    assert regs <= ceiling, f"sgemm {variant}: {regs} registers, ceiling {ceiling}"


@pytest.mark.parametrize(("name", "variant", "ceiling"), CEILINGS,
                         ids=[f"{n}-{v['BLOCK']}" for n, v, _ in CEILINGS])  # fmt: skip
def test_registers_under_ceiling(name, variant, ceiling):
    ptx = getattr(kernels, name).variant(**variant).compile(chip="sm_90").ptx
    regs, spills = ptxas_v(ptx)
    assert spills == 0, f"{name} {variant}: {spills} bytes spilled"
    assert regs <= ceiling, f"{name} {variant}: {regs} registers, ceiling {ceiling}"


def test_norm_results_convert_two_at_a_time():
    ptx = kernels.layer_norm.variant(BLOCK=8192, T=256).compile(chip="sm_90").ptx
    paired = ptx.count("cvt.rn.f16x2.f32")
    assert paired == 16  # 4 groups x 4 words, in the 16-byte branch
    ptx80 = kernels.layer_norm.variant(BLOCK=8192, T=256).compile(chip="sm_80").ptx
    assert "f16x2" not in ptx80


def _narrow(dest, src, **extra):
    attrs = {"type": dest.type, "from_type": "f32", "rounding": "rn", **extra}
    return inst("cvt", (dest,), (src,), **attrs)


def test_fuse_pairs_only_what_it_can_prove():
    a, b, c = Reg("a", "f32"), Reg("b", "f32"), Reg("c", "f32")
    lo, hi, w = Reg("lo", "f16"), Reg("hi", "f16"), Reg("w", "b32")
    pack = inst("mov", (w,), (lo, hi), type="b32")
    ok = Block((_narrow(lo, a), _narrow(hi, b), pack))
    k = Kernel("k", (), ok, threads=32)
    assert fuse.pairs(k)[id(ok.items[1])] == ("f16", w, b, a)
    text = emit_kernel(k, "sm_90")
    assert re.search(r"cvt\.rn\.f16x2\.f32 %r\d+, %f1, %f0;", text), text  # hi, lo
    assert "cvt.rn.f16.f32" not in text and "mov.b32" not in text
    assert "f16x2" not in emit_kernel(k, "sm_80")
    refused = [
        Block((_narrow(lo, a, sat=True), _narrow(hi, b), pack)),  # saturating
        Block((_narrow(lo, a), _narrow(hi, b), pack, inst("mov", (c,), (lo,), type="b16"))),
        Block((_narrow(lo, a), inst("mov", (a,), (b,), type="f32"), _narrow(hi, b), pack)),
        Block((_narrow(lo, a), _narrow(hi, b, rounding="rz"), pack)),  # not to nearest
    ]
    for blk in refused:
        assert fuse.pairs(Kernel("k", (), blk, threads=32)) == {}, blk
