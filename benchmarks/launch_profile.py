"""Where a launch's host time goes: the 4-tensor launch of benchmarks/run.py, profiled.

    python benchmarks/launch_profile.py [--after-tuning]

`--after-tuning` first tunes the vector add of run.py (as run.py does before it measures
launches), to see whether what tuning leaves behind slows a launch. Prints host µs per launch for Phobos, Triton and torch (as run.py measures them), then the
parts of a Phobos launch timed alone (reading the arguments, the plan's launch, the driver
call) and a cProfile of 20,000 launches.
"""

from __future__ import annotations

import cProfile
import gc
import pstats
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import kernels as K  # noqa: E402
from benchmarks.run import tr_launch4  # noqa: E402
from phobos.runtime.fastpath import read  # noqa: E402


def per_call_us(fn, n=20000) -> float:
    for _ in range(200):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t0) / n * 1e6)
        torch.cuda.synchronize()
    return best


def tune_first() -> None:
    import numpy as np

    x = torch.randn(1 << 20, device="cuda")
    y = torch.randn(1 << 20, device="cuda")
    o = torch.empty_like(x)

    def reference(x, y, o):
        o[:] = x.astype(np.float64) + y

    print("tuned:", K.vector_add.tune(lambda m: (-(-m["N"] // m["BLOCK"]),), x, y, o,
                                      reference=reference))  # fmt: skip


def main() -> None:
    if "--after-tuning" in sys.argv[1:]:
        tune_first()
    a, b, c, d = (torch.randn(64, device="cuda") for _ in range(4))
    k = K.launch4
    k[(1,)](a, b, c, d)
    args = (a, b, c, d)
    slots = k._tensor_slots
    key, pointers = read(args, slots)
    plan = k._fast.get(key)
    print("fast path plan found:", plan is not None)
    rows = {
        "phobos kernel[grid]": lambda: k[(1,)](a, b, c, d),
        "triton kernel[grid]": lambda: tr_launch4[(1,)](a, b, c, d, 64, BLOCK=64),
        "torch.add(out=)": lambda: torch.add(a, b, out=d),
        "read(args)": lambda: read(args, slots),
        "plan.launch": lambda: plan.launch((1,), args, pointers, None),
        "4 x data_ptr()": lambda: (a.data_ptr(), b.data_ptr(), c.data_ptr(), d.data_ptr()),
        "4 x (dtype, shape, stride(), get_device(), requires_grad)": lambda: [
            (t.dtype, t.shape, t.stride(), t.get_device(), t.requires_grad) for t in args
        ],
    }
    for name, fn in rows.items():
        print(f"{per_call_us(fn):8.2f} us  {name}", flush=True)
    gc.disable()
    print(f"{per_call_us(rows['phobos kernel[grid]']):8.2f} us  phobos, the garbage collector off")
    gc.enable()
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(20000):
        k[(1,)](a, b, c, d)
    profile.disable()
    torch.cuda.synchronize()
    pstats.Stats(profile).sort_stats("tottime").print_stats(12)


if __name__ == "__main__":
    main()
