"""Random valid kernels (tests/kernelgen.py) on the card agree with the tile interpreter:
each compiled for the card's chip, launched on random inputs (ragged extents too) with
its outputs poisoned with NaN in both runs, so an element the card leaves unwritten
shows. The card contracts products and sums into `fma` where the interpreter rounds
twice, so each element may differ by what nudging the inputs by four ulps moves it in the
interpreter, the most of three nudges (tests/conditioning.py).
`PHOBOS_FUZZ_KERNELS_GPU=N` runs N kernels (default 200).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest
from gpukit import torch_on_a_gpu

torch = torch_on_a_gpu()
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from conditioning import mismatches, nudges  # noqa: E402
from kernelgen import kernel  # noqa: E402

from phobos import races  # noqa: E402
from phobos.build import build_kernel  # noqa: E402
from phobos.interp.tiles import run_kernel  # noqa: E402
from phobos.runtime import cuda  # noqa: E402
from phobos.runtime.launch_gpu import GpuKernel  # noqa: E402
from phobos.source import SourceFile  # noqa: E402
from phobos.syntax.parser import parse  # noqa: E402

COUNT = int(os.environ.get("PHOBOS_FUZZ_KERNELS_GPU", "200"))
OUTPUTS = ("out", "Y", "R")  # what the generator's kernels write


@pytest.mark.parametrize("part", range(4))
def test_random_kernels_on_the_card_agree_with_the_tile_interpreter(part):
    chip = cuda.device(0).target
    for seed in range(part, COUNT, 4):
        source = kernel(seed)
        program, diagnostics = parse(SourceFile(f"k{seed}.ph", source))
        assert not diagnostics, source
        built = build_kernel(program, "k", chip=chip)
        gpu = GpuKernel(built.contract, built.ptx)
        for ragged in (False, True):
            inputs = races.make_inputs(built.hir, built.lir, seed=seed, ragged=ragged)
            for name in OUTPUTS:
                if name in inputs.arrays:
                    inputs.arrays[name][...] = np.nan
            want = {n: a.copy() for n, a in inputs.arrays.items()}
            run_kernel(built.hir, inputs.grid, {**want, **inputs.scalars}, inputs.dims)
            # a few nudges, each its own draw: one alone can miss how far an element moves
            moved = nudges(inputs.arrays, OUTPUTS, seed)
            for m in moved:
                run_kernel(built.hir, inputs.grid, {**m, **inputs.scalars}, inputs.dims)
            dev = {n: torch.from_numpy(a.copy()).cuda() for n, a in inputs.arrays.items()}
            args = [dev[p.name] if p.name in dev else inputs.scalars[p.name]
                    for p in built.hir.params]  # fmt: skip
            gpu.launch(inputs.grid, args)
            torch.cuda.synchronize()
            for name, expected in want.items():
                got = dev[name].cpu().numpy()
                finite = np.abs(expected[np.isfinite(expected)])
                scale = max(1.0, float(finite.max())) if finite.size else 1.0
                runs = [m[name] for m in moved]
                wrong = mismatches(got, expected, runs, rtol=2e-5, atol=4e-6 * scale)
                where = [tuple(int(i) for i in ix) for ix in np.argwhere(wrong)[:4]]
                assert not wrong.any(), (
                    f"seed {seed} on {chip}, `{name}` ({inputs.describe()}): "
                    f"{int(wrong.sum())} of {wrong.size} elements differ, first at {where}: "
                    f"card {[float(got[i]) for i in where]}, interpreter "
                    f"{[float(expected[i]) for i in where]}, nudged "
                    f"{[[float(r[i]) for i in where] for r in runs]}"
                    f"\n{source}"
                )
