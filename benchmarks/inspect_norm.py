"""Side by side on the card: Phobos's and Triton's layer norm at 4096×1024 f16.

Writes each kernel's SASS (cuobjdump) and a profile (ncu, clocks left alone) under OUTDIR:

    python benchmarks/inspect_norm.py OUTDIR          # SASS of both
    ncu --clock-control none --set basic -k regex:'layer_norm|tr_layer' \
        python benchmarks/inspect_norm.py OUTDIR run  # one launch of each, profiled
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import torch
import triton

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import kernels as K  # noqa: E402
from benchmarks.run import tr_layer_norm  # noqa: E402


def main(out: Path, mode: str) -> None:
    m, n, eps = 4096, 1024, 1e-5
    x = torch.randn(m, n, device="cuda", dtype=torch.float16)
    w = torch.rand(1, n, device="cuda", dtype=torch.float16)
    b = torch.rand(1, n, device="cuda", dtype=torch.float16)
    y = torch.empty_like(x)
    ph = K.layer_norm.variant(BLOCK=1024, T=128)
    ph[(m,)](x, y, w, b, eps)
    compiled = tr_layer_norm[(m,)](x, y, w, b, x.stride(0), n, eps, BLOCK=1024, num_warps=4)
    torch.cuda.synchronize()
    if mode == "run":
        return
    out.mkdir(parents=True, exist_ok=True)
    built = ph.compile(chip="sm_90")
    (out / "phobos.ptx").write_text(built.ptx)
    subprocess.run(["ptxas", "-arch=sm_90", "-v", str(out / "phobos.ptx"), "-o", str(out / "phobos.cubin")], check=True)  # fmt: skip
    (out / "triton.cubin").write_bytes(compiled.asm["cubin"])
    (out / "triton.ptx").write_text(compiled.asm["ptx"])
    for name in ("phobos", "triton"):
        sass = subprocess.run(["cuobjdump", "-sass", str(out / f"{name}.cubin")],
                              capture_output=True, text=True).stdout  # fmt: skip
        (out / f"{name}.sass").write_text(sass)
        lines = [line for line in sass.splitlines() if "/*" in line and ";" in line]
        print(f"{name}: {len(lines)} SASS instructions")
    print(
        "triton",
        triton.__version__,
        "num_regs",
        compiled.n_regs,
        "shared",
        compiled.metadata.shared,
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "sass")
