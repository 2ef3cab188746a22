"""examples/kda_f16.py (kda, chunkwise gated linear attention, f16 in, f32 state and
output, one head) against torch running the same chunkwise algorithm, in one run on one
card.

    python benchmarks/kda_f16.py [--n N ...] [--d D]

The peers compute the kernel's statements a chunk a turn, each product on cuBLAS with
f16 operands, the state and the output in f32: the loop in Python (`torch f16 loop`), the
same loop captured once in a CUDA graph and replayed (`torch f16 graph`: no launch gap
between its kernels), and the loop calling the chunk's step compiled by `torch.compile`
(`torch.compile step`, where it compiles). Each peer runs at the chunk sizes of the
kernel's space. The Phobos rows are every variant of that space at this D (chunk C, CTA
size T), with the products on wgmma where it takes them (the default; all four are at
D = 64, C = 64, T = 128 and at D = 128, C = 128, T = 256) and on mma.sync
(`PHOBOS_WGMMA=0`; the other variants are on mma.sync already, and timed once).

FLOPs: a chunk of C tokens is `2 C C D` (scores) + `2 C C D` (scores by values) +
`2 C D D` (queries by state) + `2 D C D` (the state's update), so N tokens are
`N (4 C D + 4 D^2)`; each row counts its own C, so rows of another C differ in work.
Each Phobos result is checked first against the float64 chunkwise result (torch, on the
card; the chunk size does not change it), its output poisoned with NaN; the f16 loop's
error is printed beside.
Times are medians taken in turns (`run.in_turns`). One CTA walks the whole sequence (the
chunks are sequential through the state), so one head fills one SM.
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
from examples.kda_f16 import kda_f16  # noqa: E402
from phobos.runtime import cuda  # noqa: E402
from phobos.runtime.launch_gpu import GpuKernel  # noqa: E402

SCALE = 0.125
# The lowering switches of the Phobos forms timed: the default, and every product on
# mma.sync (the path sm_80 takes).
FORMS = {"phobos": {}, "phobos mma.sync": {"PHOBOS_WGMMA": "0"}}


def step(q, k, v, g, state, scale: float, dtype):
    """One chunk of kda: its output rows and the next state. The products' operands in
    `dtype`; the state, the gates and the output in the state's type."""
    acc = state.dtype
    b = torch.cumsum(g.to(acc), 0)
    qd = (q.to(acc) * torch.exp(b) * scale).to(dtype)
    kd = (k.to(acc) * torch.exp(-b)).to(dtype)
    p = torch.tril(qd @ kd.T)
    v = v.to(dtype)
    o = (p @ v).to(acc) + (qd @ state.to(dtype)).to(acc)
    total = g.to(acc).sum()
    kfin = (k.to(acc) * torch.exp(total - b)).to(dtype)
    state = state * torch.exp(total) + (kfin.T @ v).to(acc)
    return o, state


def chunkwise(q, k, v, g, c: int, dtype=torch.half, fn=step, out=None):
    """kda over the whole sequence, a chunk of `c` tokens a turn, into `out` (made when
    None): f32 state and output for f16 products, float64 throughout for float64."""
    n, d = q.shape
    acc = torch.float64 if dtype == torch.float64 else torch.float32
    state = torch.zeros(d, d, device=q.device, dtype=acc)
    out = torch.empty(n, d, device=q.device, dtype=acc) if out is None else out
    for t in range(0, n, c):
        out[t : t + c], state = fn(q[t : t + c], k[t : t + c], v[t : t + c], g[t : t + c],
                                   state, SCALE, dtype)  # fmt: skip
    return out


def graphed(fn):
    """`fn` captured once in a CUDA graph: its replay."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()  # the allocator's blocks, and cuBLAS's workspace, before the capture
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph.replay


def under(env: dict, build):
    """`build()` with the lowering switches `env` set (they are read as it compiles)."""
    saved = {n: os.environ.get(n) for n in env}
    os.environ.update(env)
    try:
        return build()
    finally:
        for n, v in saved.items():
            if v is None:
                os.environ.pop(n, None)
            else:
                os.environ[n] = v


def error(o, ref) -> float:
    """The largest difference from `ref`, relative to `ref`'s largest magnitude."""
    return ((o.double() - ref).abs().max() / ref.abs().max()).item()


def peers(q, k, v, g, chunks, fns: dict, ref) -> None:
    """The torch rows, by chunk size, into `fns` (name -> (call, C))."""
    for c in chunks:
        out = torch.empty(q.shape, device="cuda")

        def loop(c=c, out=out, fn=step):
            return chunkwise(q, k, v, g, c, fn=fn, out=out)

        print(f"torch f16 loop C={c}: relative error {error(loop(), ref):.2e}")
        fns[f"torch f16 loop C={c}"] = (loop, c)
        try:
            fns[f"torch f16 graph C={c}"] = (graphed(loop), c)
        except RuntimeError as exc:  # a capture this torch refuses
            print(f"torch f16 graph C={c}: {str(exc).splitlines()[0]}")
        try:
            compiled = torch.compile(step, dynamic=False, fullgraph=True)
            loop(fn=compiled)
            torch.cuda.synchronize()
            fns[f"torch.compile step C={c}"] = (lambda loop=loop, f=compiled: loop(fn=f), c)
        except Exception as exc:  # no Triton, or a compile this torch cannot make
            print(f"torch.compile step C={c}: {str(exc).splitlines()[0]}")


def phobos_kernels(d: int) -> list[tuple[str, GpuKernel, int]]:
    """Every variant of the kernel's space at this D, in each form, compiled for this
    card: (label, kernel, C)."""
    chip = cuda.device(0).target
    made = []
    for variant in kda_f16.checked().attrs.space.variants():
        if variant["D"] != d:
            continue
        seen = set()  # a variant already all on mma.sync is the same kernel in both forms
        for form, env in FORMS.items():
            built = under(env, lambda variant=variant: kda_f16.compile(chip=chip, variant=variant))
            if built.ptx in seen:
                continue
            seen.add(built.ptx)
            label = f"{form} C={variant['C']} T={variant['T']}"
            made.append((label, GpuKernel(built.contract, built.ptx), variant["C"]))
    return made


def phobos_rows(q, k, v, g, kernels, fns: dict, ref) -> None:
    """The Phobos rows that compute `ref`, into `fns` (name -> (call, C))."""
    for label, gk, c in kernels:
        o = torch.full(q.shape, float("nan"), device="cuda")
        args = (q, k, v, g, o, SCALE)
        gk.launch((1,), args)
        torch.cuda.synchronize()
        err = error(o, ref)
        if not err < 4e-3:
            print(f"{label}: wrong, relative error {err:.2e}")
            continue
        fns[label] = (lambda gk=gk, args=args: gk.launch((1,), args), c)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, action="append")
    ap.add_argument("--d", type=int, default=64, choices=[64, 128])
    args = ap.parse_args()
    d = args.d
    kernels = phobos_kernels(d)
    chunks = sorted({c for _, _, c in kernels})
    print("| N | D | implementation | ms | TFLOP/s | best torch / this |")
    print("| ---: | ---: | --- | ---: | ---: | ---: |")
    for n in args.n or [4096, 16384, 65536]:
        q, k, v = (torch.randn(n, d, device="cuda").half() for _ in range(3))
        g = -0.1 * torch.rand(n, 1, device="cuda") - 0.001
        ref = chunkwise(*(x.double() for x in (q, k, v, g)), 64, dtype=torch.float64)
        fns: dict = {}
        phobos_rows(q, k, v, g, kernels, fns, ref)
        peers(q, k, v, g, chunks, fns, ref)
        timed = in_turns({name: fn for name, (fn, _) in fns.items()})
        best = min(ms for name, (ms, _) in timed.items() if name.startswith("torch"))
        for name, (ms, _) in sorted(timed.items(), key=lambda kv: kv[1][0]):
            c = fns[name][1]
            flops = n * (4.0 * c * d + 4.0 * d * d)
            ratio = f"{best / ms:.2f}x" if name.startswith("phobos") else ""
            print(f"| {n} | {d} | {name} | {ms:.4f} | {flops / ms / 1e9:.3f} | {ratio} |",
                  flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
