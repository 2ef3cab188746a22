"""examples/flash_attention_f16.py (one head, D = 64, f16 in, f32 out, 64 query rows a CTA
of four warps) with `p` kept in the registers the first product's fragments became (the
default) and read from shared memory (`PHOBOS_REGISTER_A=0`), against torch SDPA's flash
and efficient backends on the same head, in one run on one card.

    python benchmarks/attention_f16.py [--n N ...]

FLOPs: `4 Nq Nk D` (two products). Each Phobos result is checked first against a float64
reference (its output poisoned with NaN); times are medians taken in turns
(`run.in_turns`). One head on one card fills it only from N = 8448 (132 CTAs of 64 rows),
so the sizes are long sequences.
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
from examples.flash_attention_f16 import flash_attention_f16  # noqa: E402
from phobos.runtime.launch_gpu import GpuKernel  # noqa: E402


def lowered(bc: int, register_a: bool) -> GpuKernel:
    saved = os.environ.pop("PHOBOS_REGISTER_A", None)
    try:
        if not register_a:
            os.environ["PHOBOS_REGISTER_A"] = "0"
        built = flash_attention_f16.variant(BC=bc).compile(chip="sm_90a")
    finally:
        os.environ.pop("PHOBOS_REGISTER_A", None)
        if saved is not None:
            os.environ["PHOBOS_REGISTER_A"] = saved
    shared_p = any(b.name.startswith("tile_p") for b in built.lir.shared)
    assert shared_p != register_a, "the switch did not take"
    return GpuKernel(built.contract, built.ptx)


def main() -> None:
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention as sdpa

    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, action="append")
    args = ap.parse_args()
    print("| N | variant | ms | TFLOP/s |")
    print("| ---: | --- | ---: | ---: |")
    scale = 0.125
    for n in args.n or [16384, 32768]:
        q, k, v = (torch.randn(n, 64, device="cuda").half() for _ in range(3))
        ref = torch.softmax((q.double() @ k.double().T) * scale, dim=1) @ v.double()
        fns = {}
        for name, backend in (("SDPA flash", SDPBackend.FLASH_ATTENTION),
                              ("SDPA efficient", SDPBackend.EFFICIENT_ATTENTION)):  # fmt: skip

            def run(backend=backend, q=q, k=k, v=v):
                with sdpa_kernel(backend):
                    return sdpa(q[None, None], k[None, None], v[None, None], scale=scale)

            fns[name] = run
        for bc in (64, 128):
            for register_a in (True, False):
                gk = lowered(bc, register_a)
                o = torch.full((n, 64), float("nan"), device="cuda")
                gk.launch((n // 64,), (q, k, v, o, scale))
                torch.cuda.synchronize()
                err = (o.double() - ref).abs().max().item()
                label = f"phobos BC={bc} p in {'registers' if register_a else 'shared'}"
                if not err < 5e-3:
                    print(f"{label}: wrong, max error {err}")
                    continue
                grid = (n // 64,)
                fns[label] = lambda gk=gk, g=grid, args=(q, k, v, o, scale): gk.launch(g, args)
        timed = in_turns(fns)
        for name, (ms, _) in sorted(timed.items(), key=lambda kv: kv[1][0]):
            print(f"| {n} | {name} | {ms:.4f} | {4.0 * n * n * 64 / ms / 1e9:.1f} |", flush=True)


if __name__ == "__main__":
    main()
