"""A launch's host time against the driver's floor, for 4 tensors and for 12.

    python benchmarks/launch_floor.py [--rounds 9] [--launches 5000]

The floor is `cuLaunchKernel` called through ctypes on Phobos's own compiled function,
its arguments packed once: what any Python launcher pays whatever it checks. Beside it,
in turns within each round (the host's speed drifts over a run): Phobos `kernel[grid]`,
Triton's launch of the same sum, and `torch.add(out=)` (one op of two inputs, the same
for both rows: torch's own dispatch cost, not a 12-input kernel). Each keeps the median of
its rounds, in host µs per launch. Then graph replay: 100 Phobos launches captured in a
`torch.cuda.graph` on torch's stream, replayed, µs per launch (the card's time for a
launch in a graph, host out of the way), with torch.add's beside it.

Every launch is checked once first: each kernel's output against a float64 sum.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
import triton
import triton.language as tl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import kernels as K  # noqa: E402
from phobos.runtime import cuda  # noqa: E402


@triton.jit
def tr_sum4(a, b, c, d, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    s = tl.load(a + offs, mask=m) + tl.load(b + offs, mask=m) + tl.load(c + offs, mask=m)
    tl.store(d + offs, s, mask=m)


@triton.jit
def tr_sum12(a, b, c, d, e, f, g, h, i, j, k, out, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    s = tl.load(a + offs, mask=m) + tl.load(b + offs, mask=m) + tl.load(c + offs, mask=m)
    s += tl.load(d + offs, mask=m) + tl.load(e + offs, mask=m) + tl.load(f + offs, mask=m)
    s += tl.load(g + offs, mask=m) + tl.load(h + offs, mask=m) + tl.load(i + offs, mask=m)
    s += tl.load(j + offs, mask=m) + tl.load(k + offs, mask=m)
    tl.store(out + offs, s, mask=m)


def floor_launch(kernel, args):
    """The raw driver call on the plan Phobos made for `args`: packed once, no checks."""
    plan = kernel._fast[next(iter(kernel._fast))]
    raw = cuda._RAW_LAUNCH or cuda.raw_launch_kernel()
    h, params, threads, shared = plan.handle, plan.params, plan.threads, plan.shared

    def launch():
        raw(h, 1, 1, 1, threads, 1, 1, shared, None, params, None)

    return launch


def check(out, inputs) -> None:
    torch.cuda.synchronize()
    want = sum(x.double() for x in inputs)
    err = (out.double() - want).abs().max().item()
    if not err < 1e-5:
        raise SystemExit(f"wrong sum: max error {err}")


def rows_for(n_tensors: int):
    xs = [torch.randn(64, device="cuda") for _ in range(n_tensors - 1)]
    out = torch.full((64,), float("nan"), device="cuda")
    args = (*xs, out)
    ph = K.launch4 if n_tensors == 4 else K.launch12
    tr = tr_sum4 if n_tensors == 4 else tr_sum12
    grid = (1,)
    for launch in (
        lambda: ph[grid](*args),
        lambda: tr[grid](*args, 64, BLOCK=64),
    ):
        out.fill_(float("nan"))
        launch()
        check(out, xs)
    a, b = xs[0], xs[1]
    return {
        "floor (raw cuLaunchKernel)": floor_launch(ph, args),
        "phobos kernel[grid]": lambda: ph[grid](*args),
        "triton kernel[grid]": lambda: tr[grid](*args, 64, BLOCK=64),
        "torch.add(out=)": lambda: torch.add(a, b, out=out),
    }, (ph, args)


def host_us(rows, n_launch: int, rounds: int) -> dict[str, tuple[float, float]]:
    for fn in rows.values():
        for _ in range(200):
            fn()
    torch.cuda.synchronize()
    samples: dict[str, list[float]] = {name: [] for name in rows}
    for _ in range(rounds):
        for name, fn in rows.items():
            t0 = time.perf_counter()
            for _ in range(n_launch):
                fn()
            samples[name].append((time.perf_counter() - t0) / n_launch * 1e6)
            torch.cuda.synchronize()
    return {
        name: (statistics.median(us), (max(us) - min(us)) / statistics.median(us))
        for name, us in samples.items()
    }


def graph_us(kernel, args, per_graph: int = 100, replays: int = 50) -> tuple[float, float]:
    """µs per launch replaying `per_graph` captured Phobos launches, and torch.add's."""
    out = args[-1]
    results = []
    for launch, inputs in (
        (lambda s: kernel[(1,)](*args, stream=s), args[:-1]),
        (lambda s: torch.add(args[0], args[1], out=out), args[:2]),
    ):
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            launch(stream)  # a plan for this stream's launches before capture
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            for _ in range(per_graph):
                launch(stream)
        out.fill_(float("nan"))
        graph.replay()
        check(out, inputs)  # the replay, not the capture, wrote it
        best = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(replays):
                graph.replay()
            torch.cuda.synchronize()
            best = min(best, (time.perf_counter() - t0) / (replays * per_graph) * 1e6)
        results.append(best)
    return results[0], results[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--launches", type=int, default=5000)
    opts = parser.parse_args()
    print(torch.cuda.get_device_name(), "torch", torch.__version__, "triton", triton.__version__)
    for n in (4, 12):
        rows, (kernel, args) = rows_for(n)
        measured = host_us(rows, opts.launches, opts.rounds)
        floor = measured["floor (raw cuLaunchKernel)"][0]
        for name, (us, spread) in measured.items():
            print(f"launch {n:2d} tensors  {name:28s} {us:7.2f} us  {us / floor:5.2f}x floor"
                  f"  (spread {spread:.0%})")  # fmt: skip
        ph_graph, add_graph = graph_us(kernel, args)
        print(f"graph  {n:2d} tensors  phobos launches replayed      {ph_graph:7.2f} us/launch")
        print(f"graph  {n:2d} tensors  torch.add replayed            {add_graph:7.2f} us/launch")


if __name__ == "__main__":
    main()
