"""Clusters of two CTAs sharing an operand tile by TMA multicast, against the same GEMM's
CTAs alone, and cuBLAS, in one run on one card: examples/hgemm.py's 128 x 256 x 64 tile
on 256 threads lowered twice, under `PHOBOS_CLUSTER=2` (clusters: the CTAs of two x blocks
share B's boxes, `phobos.lower.cluster`) and `PHOBOS_CLUSTER=1` (the default: CTAs alone),
each result checked against float64 (its output poisoned first), then timed in turns
with `torch.mm`.

    python benchmarks/clusters.py [--only f16|bf16|f16c ...] [--shape MxNxK ...]

FLOPs: `2 M N K`. The bytes a CTA reads a turn drop from 48 KB to 32 KB in clusters;
what that buys shows where L2's bandwidth, not the tensor cores, bounds a turn.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.run import in_turns  # noqa: E402
from benchmarks.tensorcore import MODEL_SHAPES, _shape  # noqa: E402
from examples.hgemm import hgemm, hgemm_bf16, hgemm_h  # noqa: E402
from phobos.runtime.launch_gpu import GpuKernel  # noqa: E402

TILE = dict(TILE_N=256, TILE_K=64, T=256)
KERNELS = {"f16": (hgemm, torch.float16, torch.float32),
           "bf16": (hgemm_bf16, torch.bfloat16, torch.float32),
           "f16c": (hgemm_h, torch.float16, torch.float16)}  # fmt: skip


def lowered(kernel, setting: str) -> GpuKernel:
    """`kernel`'s TILE variant compiled for sm_90a with PHOBOS_CLUSTER at `setting`."""
    saved = os.environ.pop("PHOBOS_CLUSTER", None)
    try:
        os.environ["PHOBOS_CLUSTER"] = setting
        built = kernel.variant(**TILE).compile(chip="sm_90a")
    finally:
        os.environ.pop("PHOBOS_CLUSTER", None)
        if saved is not None:
            os.environ["PHOBOS_CLUSTER"] = saved
    want = int(setting)
    assert built.lir.cluster == want, f"asked {setting}, lowered cluster={built.lir.cluster}"
    return GpuKernel(built.contract, built.ptx)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=sorted(KERNELS), action="append")
    ap.add_argument("--shape", action="append", type=_shape, help="MxNxK")
    args = ap.parse_args()
    shapes = args.shape or [(4096, 4096, 4096), (8192, 8192, 8192), *MODEL_SHAPES]
    print("| GEMM | cuBLAS ms | alone ms | clusters ms | clusters TFLOP/s | alone / cuBLAS "
          "| clusters / cuBLAS | clusters gain |")  # fmt: skip
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name in args.only or ["f16", "bf16", "f16c"]:
        kernel, dtype, out_dtype = KERNELS[name]
        both = {"alone": lowered(kernel, "1"), "clusters": lowered(kernel, "2")}
        for m, n, k in shapes:
            if m % 128 or n % 256 or k % 64:
                continue  # the example is @aligned to its tile
            a = torch.randn(m, k, device="cuda").to(dtype)
            b = torch.randn(k, n, device="cuda").to(dtype)
            ref = (a.double() @ b.double()).float()
            fns = {"cuBLAS": lambda a=a, b=b: torch.mm(a, b)}
            for label, gk in both.items():
                c = torch.full((m, n), float("nan"), device="cuda", dtype=out_dtype)
                grid = (m // 128, n // 256)
                gk.launch(grid, (a, b, c))
                torch.cuda.synchronize()
                err = ((c.float() - ref).abs().max() / ref.abs().max()).item()
                if not err < (1e-4 if out_dtype == torch.float32 else 1e-3):
                    print(f"{name} {m}x{n}x{k} {label}: wrong, relative error {err}")
                    continue
                fns[label] = lambda gk=gk, grid=grid, a=a, b=b, c=c: gk.launch(grid, (a, b, c))
            timed = in_turns(fns)
            if len(timed) < len(both) + 1:
                continue
            cub, alone, clu = (timed[x][0] for x in ("cuBLAS", "alone", "clusters"))
            tflops = 2.0 * m * n * k / clu / 1e9
            print(f"| {name} {m}x{n}x{k} | {cub:.4f} | {alone:.4f} | {clu:.4f} | {tflops:.0f} "
                  f"| {cub / alone:.3f}x | {cub / clu:.3f}x | {alone / clu:.3f}x |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
