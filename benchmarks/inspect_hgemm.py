"""Where the tensor-core GEMM's warps wait: Phobos's `hgemm` at 4096^3 f16 on the card.

Writes each tile's PTX, its ptxas report and its SASS (cuobjdump) under OUTDIR, and in
`run` mode launches each tile once, for a profiler:

    python benchmarks/inspect_hgemm.py OUTDIR          # PTX, ptxas -v and SASS
    ncu --clock-control none --set full --import-source no --page source \
        --print-source sass --csv -k regex:hgemm \
        python benchmarks/inspect_hgemm.py OUTDIR run  # each launch's stalls, a SASS line each
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from examples.hgemm import hgemm  # noqa: E402

TILES = [(128, 64, 128), (256, 64, 256)]  # (TILE_N, TILE_K, threads), 128-row tiles


def main(out: Path, mode: str) -> None:
    n = 4096
    a = torch.randn(n, n, device="cuda").half()
    b = torch.randn(n, n, device="cuda").half()
    c = torch.empty(n, n, device="cuda")
    for tn, tk, t in TILES:
        view = hgemm.variant(TILE_N=tn, TILE_K=tk, T=t)
        view[(n // 128, n // tn)](a, b, c)
        torch.cuda.synchronize()
        if mode == "run":
            continue
        out.mkdir(parents=True, exist_ok=True)
        name = f"hgemm_{tn}x{tk}_{t}"
        ptx = out / f"{name}.ptx"
        ptx.write_text(view.compile(chip="sm_90").ptx)
        cubin = out / f"{name}.cubin"
        report = subprocess.run(["ptxas", "-arch=sm_90", "-v", str(ptx), "-o", str(cubin)],
                                capture_output=True, text=True, check=True)  # fmt: skip
        print(name, report.stderr.strip().splitlines()[-1])
        sass = subprocess.run(["cuobjdump", "-sass", str(cubin)], capture_output=True,
                              text=True).stdout  # fmt: skip
        (out / f"{name}.sass").write_text(sass)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "sass")
