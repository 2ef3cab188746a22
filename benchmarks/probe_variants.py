"""Which CTA size and which cache hints suit the row kernels: a measurement, not a benchmark.

Run on a machine with an NVIDIA GPU and torch:

    python benchmarks/probe_variants.py

For softmax, layer norm and RMSNorm at each benchmark size, every CTA size T of the
kernel's @autotune list is compiled, and its PTX is also launched with cache hints
spelled into its global accesses (`ld.global.nc`, `.L1::no_allocate`, the 256-byte L2
prefetch, `st.global.cs`). Each variant's result is checked against float64 before it
is timed (median of CUDA events). What the hints buy decides whether the compiler
should emit them; the numbers go to benchmarks/NOTES.md.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import torch
from triton.testing import do_bench

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import kernels as ph_kernels  # noqa: E402
from phobos.diagnostics import CompileError  # noqa: E402
from phobos.runtime.cache import KernelCache  # noqa: E402
from phobos.runtime.launch_gpu import GpuKernel  # noqa: E402

_LOAD = re.compile(
    r"\bld\.global((?:\.[a-z0-9:]+)*?)(\.v[24])?\.(f32|f16|b16|b32|u32|s32|b64|u16)\b"
)
_STORE = re.compile(
    r"\bst\.global((?:\.[a-z0-9:]+)*?)(\.v[24])?\.(f32|f16|b16|b32|u32|s32|b64|u16)\b"
)


def hinted(ptx: str, load: str = "", store: str = "") -> str:
    """`ptx` with `load` qualifiers added to every global load, `store` to every store."""
    if load:
        ptx = _LOAD.sub(
            lambda m: f"ld.global{load}{m.group(1)}{m.group(2) or ''}.{m.group(3)}", ptx
        )
    if store:
        ptx = _STORE.sub(
            lambda m: f"st.global{store}{m.group(1)}{m.group(2) or ''}.{m.group(3)}", ptx
        )
    return ptx


HINTS = {
    "plain": ("", ""),
    "ld.nc": (".nc", ""),
    "L1::no_allocate": (".L1::no_allocate", ""),
    "L2::256B": (".L2::256B", ""),
    "st.cs": ("", ".cs"),
    "nc+L2::256B+st.cs": (".nc.L2::256B", ".cs"),
}


def rel_error(out, ref) -> float:
    out64 = out.double()
    if torch.isnan(out64).any():
        return float("nan")
    return float((out64 - ref).norm() / ref.norm())


def problems():
    for m, n in ((4096, 1024), (4096, 4096), (4096, 16384)):
        x = torch.randn(m, n, device="cuda")
        y = torch.empty_like(x)
        yield ("softmax", m, n, ph_kernels.softmax_rows, (x, y), y,
               torch.softmax(x.double(), 1), 1e-5)  # fmt: skip
    for m, n in ((4096, 1024), (4096, 4096), (4096, 8192)):
        x = torch.randn(m, n, device="cuda", dtype=torch.float16)
        y = torch.empty_like(x)
        w = torch.rand(1, n, device="cuda", dtype=torch.float16)
        b = torch.rand(1, n, device="cuda", dtype=torch.float16)
        ln = torch.nn.functional.layer_norm(x.double(), (n,), w[0].double(), b[0].double(), 1e-5)
        yield ("layernorm", m, n, ph_kernels.layer_norm, (x, y, w, b, 1e-5), y, ln, 2e-3)
        rms = x.double() / torch.sqrt((x.double() ** 2).mean(1, keepdim=True) + 1e-5) * w.double()
        yield ("rmsnorm", m, n, ph_kernels.rms_norm, (x, y, w, 1e-5), y, rms, 2e-3)


def main() -> int:
    cache = KernelCache()
    print(f"{'kernel':10s} {'size':12s} {'T':>4s} {'hint':20s} {'us':>8s}", flush=True)
    for name, m, n, kernel, args, out, ref, tol in problems():
        block = 1 << (n - 1).bit_length()
        rows = []
        for t in kernel.checked().attrs.autotune["T"]:
            try:
                built = kernel.compile(variant={"BLOCK": block, "T": t})
            except CompileError:
                continue
            for hint, (load, store) in HINTS.items():
                gpu = GpuKernel(built.contract, hinted(built.ptx, load, store), cache)
                out.fill_(float("nan"))
                gpu.launch((m,), args)
                torch.cuda.synchronize()
                err = rel_error(out, ref)
                if not err <= tol:
                    print(f"{name:10s} {m}x{n:<7d} {t:4d} {hint:20s} WRONG rel err {err:.1e}")
                    continue
                us = do_bench(lambda g=gpu, m=m, a=args: g.launch((m,), a), warmup=50, rep=200,
                              return_mode="median") * 1e3  # fmt: skip
                rows.append((us, t, hint))
                print(f"{name:10s} {m}x{n:<7d} {t:4d} {hint:20s} {us:8.1f}", flush=True)
        rows.sort()
        best = rows[0]
        plain = min(r for r in rows if r[2] == "plain")
        print(f"== {name} {m}x{n}: best {best[0]:.1f} us (T={best[1]}, {best[2]}); "
              f"best plain {plain[0]:.1f} us (T={plain[1]})", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
