"""Phobos against Triton and torch, in one run on one card: memory-bound kernels and launch cost.

Run on a machine with an NVIDIA GPU, torch and Triton:

    python benchmarks/run.py [--out benchmarks/RESULTS.md] [--quick]

Each row times the same computation by each implementation with CUDA events
(`triton.testing.do_bench`), the implementations taking turns (`in_turns`), after the
Phobos result is checked against a float64 reference on fresh random inputs (outputs
poisoned first). Beside them, a copy of as many bytes as the row must move: its floor. Bytes count each input read
once and each output written once: that is the floor the GB/s column is measured against.
The Triton kernels are those of Triton's tutorials, as `shared/bench/peers.py` times them.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch
import triton
import triton.language as tl
from triton.testing import do_bench

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import kernels as ph_kernels  # noqa: E402


def median_ms(fn) -> float:
    return do_bench(fn, warmup=50, rep=300, return_mode="median")


ROUNDS = 5  # a row's implementations are timed this many times each, taking turns


def in_turns(fns: dict) -> dict[str, tuple[float, float]]:
    """Milliseconds a call of each of `fns`, timed in turns: ROUNDS rounds in which each
    takes 60 ms of `do_bench` (the order rotated each round), the median of its rounds
    kept, with their spread ((slowest - fastest) / median). The card's clock and the host
    drift over seconds; taking turns shares that drift among the implementations
    compared, where timing each in one block did not."""
    for fn in fns.values():
        do_bench(fn, warmup=50, rep=10)
    names = list(fns)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for r in range(ROUNDS):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            samples[name].append(do_bench(fns[name], warmup=5, rep=60, return_mode="median"))
    found = {}
    for name, ms in samples.items():
        mid = statistics.median(ms)
        found[name] = (mid, (max(ms) - min(ms)) / mid)
    return found


# ---------------------------------------------------------------------------
# The peers: Triton's tutorial kernels


@triton.jit
def tr_add(x, y, o, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)


@triton.jit
def tr_softmax(out, inp, stride, n_cols, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < n_cols
    x = tl.load(inp + r * stride + offs, mask=m, other=-float("inf"))
    x = x - tl.max(x, 0)
    e = tl.exp(x)
    tl.store(out + r * stride + offs, e / tl.sum(e, 0), mask=m)


# The same kernel under Triton's autotuner, over the warps a CTA: the tuned-against-tuned
# comparison (Phobos tunes its CTA size T the same way).
tr_softmax_tuned = triton.autotune(
    configs=[triton.Config({}, num_warps=w) for w in (1, 2, 4, 8, 16, 32)], key=["n_cols"]
)(triton.jit(tr_softmax.fn))


@triton.jit
def tr_layer_norm(X, Y, W, B, stride, N, eps, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    X += r * stride
    Y += r * stride
    c = tl.arange(0, BLOCK)
    m = c < N
    x = tl.load(X + c, mask=m, other=0.0).to(tl.float32)
    mean = tl.sum(x, 0) / N
    d = tl.where(m, x - mean, 0.0)
    rstd = 1 / tl.sqrt(tl.sum(d * d, 0) / N + eps)
    w = tl.load(W + c, mask=m).to(tl.float32)
    b = tl.load(B + c, mask=m).to(tl.float32)
    tl.store(Y + c, (d * rstd * w + b).to(tl.float16), mask=m)


@triton.jit
def tr_rms_norm(X, Y, W, stride, N, eps, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    X += r * stride
    Y += r * stride
    c = tl.arange(0, BLOCK)
    m = c < N
    x = tl.load(X + c, mask=m, other=0.0).to(tl.float32)
    rstd = 1 / tl.sqrt(tl.sum(x * x, 0) / N + eps)
    w = tl.load(W + c, mask=m).to(tl.float32)
    tl.store(Y + c, (x * rstd * w).to(tl.float16), mask=m)


@triton.jit
def tr_launch4(a, b, c, d, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.store(
        d + offs,
        tl.load(a + offs, mask=m) + tl.load(b + offs, mask=m) + tl.load(c + offs, mask=m),
        mask=m,
    )


# ---------------------------------------------------------------------------
# The table


class Table:
    def __init__(self):
        self.rows: list[dict] = []

    def add(self, kernel, size, impl, ms, *, gbytes, check, spread=None):
        row = dict(kernel=kernel, size=size, impl=impl, us=ms * 1e3, gbs=gbytes / ms / 1e6)
        row["check"] = check
        row["spread"] = spread  # between the rounds of `in_turns`, when timed so
        self.rows.append(row)
        print(f"{kernel:10s} {size:18s} {impl:8s} {row['us']:10.1f} us {row['gbs']:8.0f} GB/s  {check}",
              flush=True)  # fmt: skip

    def groups(self) -> dict[tuple, dict]:
        """(kernel, size) -> implementation -> row, in the order measured."""
        groups: dict[tuple, dict] = {}
        for row in self.rows:
            groups.setdefault((row["kernel"], row["size"]), {})[row["impl"]] = row
        return groups

    def markdown(self) -> str:
        lines = [
            "| kernel | size | Phobos µs | Triton µs | Triton autotuned µs | torch µs | "
            "copy of the bytes µs | Phobos GB/s | Triton GB/s | Phobos / Triton time | check |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
        ]
        for (kernel, size), impls in self.groups().items():
            ph, tr, to = impls.get("phobos"), impls.get("triton"), impls.get("torch")
            tt, cp = impls.get("triton autotuned"), impls.get(COPY)

            def us(r):
                return f"{r['us']:.1f}" if r else "—"

            def gbs(r):
                return f"{r['gbs']:.0f}" if r else "—"

            ratio = f"{ph['us'] / tr['us']:.2f}" if ph and tr else "—"
            check = ph["check"] if ph else "not run"
            lines.append(
                f"| {kernel} | {size} | {us(ph)} | {us(tr)} | {us(tt)} | {us(to)} | {us(cp)} | {gbs(ph)} | "
                f"{gbs(tr)} "
                f"| {ratio} | {check} |"
            )
        return "\n".join(lines)


COPY = "copy"  # a row's floor, not a peer: a copy moving the bytes the kernel must move


def same_bytes_copy(gbytes):
    """A device-to-device copy reading and writing `gbytes` in all, as the row's kernel
    must: timed beside it, the fastest this card moves that many bytes, launch included."""
    x = torch.randint(0, 255, (gbytes // 2,), dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    return lambda: y.copy_(x)


def add_row(table, kernel, size, fns, gbytes, checks):
    """Times `fns` (implementation -> call) in turns and adds one table row each."""
    for impl, (ms, spread) in in_turns(fns).items():
        table.add(kernel, size, impl, ms, gbytes=gbytes, check=checks.get(impl, ""),
                  spread=spread)  # fmt: skip


def rel_error(out, ref) -> float:
    out64, ref64 = out.double(), ref.double()
    if torch.isnan(out64).any():
        return float("nan")
    return float((out64 - ref64).norm() / ref64.norm())


def checked(out, ref, tol) -> str:
    err = rel_error(out, ref)
    if not err <= tol:  # NaN fails too
        raise AssertionError(f"wrong result: relative error {err:.2e} > {tol:.0e}")
    return f"rel err {err:.1e}"


# ---------------------------------------------------------------------------
# Benchmarks


def tuned(kernel, grid, args, reference, check, rtol=None, **fixed) -> tuple[object, str]:
    """`kernel`'s variant the autotuner picks for `args` (among those agreeing with
    `fixed`), checked here once more (`check(k)` poisons the output, runs `k` and returns
    the check text): the variant and "<check>, <constants>"."""
    view = kernel.variant(**fixed) if fixed else kernel
    winner = view.tune(grid, *args, reference=reference, rtol=rtol)
    k = kernel.variant(**winner)
    free = ", ".join(f"{name}={value}" for name, value in winner.items() if name not in fixed)
    return k, f"{check(k)}, {free}"


def add_grid(meta):
    return (-(-meta["N"] // meta["BLOCK"]),)


def bench_add(table, n):
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    ref = x.double() + y.double()
    g = 12 * n
    o = torch.full_like(x, float("nan"))

    def reference(x, y, o):
        o[:] = x.astype(np.float64) + y

    def check(k):
        o.fill_(float("nan"))
        k[add_grid](x, y, o)
        torch.cuda.synchronize()
        return checked(o, ref, 1e-6)

    k, text = tuned(ph_kernels.vector_add, add_grid, (x, y, o), reference, check)
    fns = {
        "phobos": lambda: k[add_grid](x, y, o),
        "triton": lambda: tr_add[(triton.cdiv(n, 1024),)](x, y, o, n, BLOCK=1024),
        "torch": lambda: torch.add(x, y, out=o),
        COPY: same_bytes_copy(g),
    }
    add_row(table, "add", f"{n} f32", fns, g, {"phobos": text})


def bench_softmax(table, m, n):
    x = torch.randn(m, n, device="cuda")
    ref = torch.softmax(x.double(), 1)
    block = triton.next_power_of_2(n)
    o = torch.empty_like(x)

    def check(k):
        o.fill_(float("nan"))
        k[(m,)](x, o)
        torch.cuda.synchronize()
        return checked(o, ref, 1e-5)

    def reference(x, y):
        x64 = x.astype(np.float64)
        e = np.exp(x64 - x64.max(axis=1, keepdims=True))
        y[:] = e / e.sum(axis=1, keepdims=True)

    # ex2.approx is within 2 ulp: a rounding more than an exactly rounded exp
    k, check_text = tuned(ph_kernels.softmax_rows, (m,), (x, o), reference, check, rtol=1e-5,
                          BLOCK=block)  # fmt: skip
    g = 8 * m * n
    w = 4 if block <= 2048 else (8 if block <= 4096 else 16)
    fns = {
        "phobos": lambda: k[(m,)](x, o),
        "triton": lambda: tr_softmax[(m,)](o, x, x.stride(0), n, BLOCK=block, num_warps=w),
        "triton autotuned": lambda: tr_softmax_tuned[(m,)](o, x, x.stride(0), n, BLOCK=block),
        "torch": lambda: torch.softmax(x, 1),
        COPY: same_bytes_copy(g),
    }
    add_row(table, "softmax", f"{m}x{n} f32", fns, g, {"phobos": check_text})


def norm_reference(which):
    """The norm in float64 on numpy copies, written into `y` (rounded to f16 there)."""

    def layer_norm(x, y, w, b, eps):
        x64 = x.astype(np.float64)
        mean = x64.mean(axis=1, keepdims=True)
        y[:] = (x64 - mean) / np.sqrt(x64.var(axis=1, keepdims=True) + eps) * w + b

    def rms_norm(x, y, w, eps):
        x64 = x.astype(np.float64)
        y[:] = x64 / np.sqrt((x64 * x64).mean(axis=1, keepdims=True) + eps) * w

    return layer_norm if which == "layernorm" else rms_norm


def bench_norm(table, m, n, which):
    x = torch.randn(m, n, device="cuda", dtype=torch.float16)
    w = torch.rand(1, n, device="cuda", dtype=torch.float16)
    b = torch.rand(1, n, device="cuda", dtype=torch.float16)
    eps = 1e-5
    block = triton.next_power_of_2(n)
    nw = min(max(block // 256, 1), 8)
    o = torch.full_like(x, float("nan"))
    if which == "layernorm":
        ref = torch.nn.functional.layer_norm(x.double(), (n,), w[0].double(), b[0].double(), eps)
        kernel = ph_kernels.layer_norm
        args = (x, o, w, b, eps)
        g = 4 * m * n  # x read, y written (2 bytes each); w and b are 2n bytes, negligible

        def peer():
            tr_layer_norm[(m,)](x, o, w, b, x.stride(0), n, eps, BLOCK=block, num_warps=nw)

        def torch_fn():
            torch.nn.functional.layer_norm(x, (n,), w[0], b[0], eps)
    else:
        ref = x.double() / torch.sqrt((x.double() ** 2).mean(1, keepdim=True) + eps) * w.double()
        kernel = ph_kernels.rms_norm
        args = (x, o, w, eps)
        g = 4 * m * n

        def peer():
            tr_rms_norm[(m,)](x, o, w, x.stride(0), n, eps, BLOCK=block, num_warps=nw)

        def torch_fn():
            torch.nn.functional.rms_norm(x, (n,), w[0], eps)

    def check(k):
        o.fill_(float("nan"))
        k[(m,)](*args)
        torch.cuda.synchronize()
        return checked(o, ref, 2e-3)

    k, check_text = tuned(kernel, (m,), args, norm_reference(which), check, BLOCK=block)
    fns = {"phobos": lambda: k[(m,)](*args), "triton": peer, "torch": torch_fn,
           COPY: same_bytes_copy(g)}  # fmt: skip
    add_row(table, which, f"{m}x{n} f16", fns, g, {"phobos": check_text})


def launch_overhead(n_launch=2000, rounds=7) -> dict[str, float]:
    """Host microseconds per launch of a 4-tensor kernel on tiny inputs.

    The host's speed drifts over a run (by half, between calls on this machine), so the
    three take turns: each round times `n_launch` launches of each, and each keeps the
    median of its rounds."""
    a, b, c, d = (torch.randn(64, device="cuda") for _ in range(4))
    k = ph_kernels.launch4
    launches = {
        "phobos kernel[grid]": lambda: k[(1,)](a, b, c, d),
        "triton kernel[grid]": lambda: tr_launch4[(1,)](a, b, c, d, 64, BLOCK=64),
        "torch.add(out=)": lambda: torch.add(a, b, out=d),
    }
    for fn in launches.values():
        for _ in range(100):
            fn()
    torch.cuda.synchronize()
    samples: dict[str, list[float]] = {name: [] for name in launches}
    for _ in range(rounds):
        for name, fn in launches.items():
            t0 = time.perf_counter()
            for _ in range(n_launch):
                fn()
            samples[name].append((time.perf_counter() - t0) / n_launch * 1e6)
            torch.cuda.synchronize()
    rows = {name: statistics.median(us) for name, us in samples.items()}
    for name, us in rows.items():
        print(f"launch     {name:24s} {us:8.2f} us/launch (host)", flush=True)
    return rows


def copy_bandwidth() -> float:
    """GB/s of a 1 GiB device-to-device copy (read and write counted): the card's floor."""
    x = torch.empty(1 << 28, device="cuda")
    y = torch.empty_like(x)
    ms = median_ms(lambda: y.copy_(x))
    gbs = 8 * x.numel() / ms / 1e6
    print(
        f"copy       1 GiB d2d                torch  {ms * 1e3:10.1f} us {gbs:8.0f} GB/s",
        flush=True,
    )
    return gbs


def targets(table: Table, launch: dict, copy_gbs: float | None) -> list[str]:
    """The issue's targets, each met or missed, from this run's numbers."""
    lines = ["| target | measured | met |", "| --- | --- | :---: |"]

    def verdict(ok: bool) -> str:
        return "yes" if ok else "**no**"

    for (kernel, size), impls in table.groups().items():
        ph = impls.get("phobos")
        peers = [r for name, r in impls.items() if name not in ("phobos", COPY)]
        if not ph or not peers:
            continue
        best = min(peers, key=lambda r: r["us"])
        speed = best["us"] / ph["us"]
        spreads = ""
        if ph.get("spread") is not None and best.get("spread") is not None:
            spreads = f"; spread between rounds {ph['spread']:.1%} and {best['spread']:.1%}"
        lines.append(f"| {kernel} {size}: Phobos at least as fast as the best peer | "
                     f"{speed:.3f}x {best['impl']} ({ph['us']:.2f} vs {best['us']:.2f} µs"
                     f"{spreads}) | {verdict(speed >= 1.0)} |")  # fmt: skip
    groups = table.groups()
    add = groups.get(("add", f"{1 << 28} f32"), {}).get("phobos")
    if add and copy_gbs:
        share = add["gbs"] / copy_gbs
        lines.append(f"| add 2^28 f32 at 95% of the copy bandwidth ({copy_gbs:.0f} GB/s) | "
                     f"{share:.1%} | {verdict(share >= 0.95)} |")  # fmt: skip
    for key in (("softmax", "4096x16384 f32"), ("layernorm", "4096x8192 f16")):
        row, floor = groups.get(key, {}).get("phobos"), groups.get(key, {}).get(COPY)
        if row:
            beside = f" (a copy of the same bytes: {floor['gbs'] / 1e3:.2f})" if floor else ""
            lines.append(f"| {key[0]} {key[1]} at 3.8 TB/s | {row['gbs'] / 1e3:.2f} TB/s{beside} | "
                         f"{verdict(row['gbs'] >= 3800)} |")  # fmt: skip
    ph, tr = launch.get("phobos kernel[grid]"), launch.get("triton kernel[grid]")
    if ph and tr:
        lines.append(f"| a launch's host cost below Triton's | {ph:.1f} vs {tr:.1f} µs | "
                     f"{verdict(ph < tr)} |")  # fmt: skip
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "RESULTS.md"))
    parser.add_argument("--quick", action="store_true", help="the small sizes only")
    opts = parser.parse_args(argv)
    table = Table()
    failures = []

    def attempt(name, fn, *args):
        try:
            fn(table, *args)
        except Exception as exc:  # a failing row is reported, the others still run
            failures.append(f"{name} {args}: {type(exc).__name__}: {exc}")
            print(f"FAILED {name} {args}: {type(exc).__name__}: {exc}", flush=True)

    for n in (1 << 20,) if opts.quick else (1 << 20, 1 << 28):
        attempt("add", bench_add, n)
    for n in (1024,) if opts.quick else (1024, 4096, 16384):
        attempt("softmax", bench_softmax, 4096, n)
    for which in ("layernorm", "rmsnorm"):
        for n in (1024,) if opts.quick else (1024, 4096, 8192):
            attempt(which, bench_norm, 4096, n, which)
    launch: dict[str, float] = {}
    try:
        launch = launch_overhead()
        launch_lines = [
            "| launch (4 tensors, 64 elements) | host µs per launch |",
            "| --- | ---: |",
        ]
        launch_lines += [f"| {name} | {us:.2f} |" for name, us in launch.items()]
    except Exception as exc:
        failures.append(f"launch: {type(exc).__name__}: {exc}")
        launch_lines = [f"launch overhead not measured: {type(exc).__name__}: {exc}"]
    copy_gbs = None if opts.quick else copy_bandwidth()
    gaps = ROOT / "benchmarks" / "GAPS.md"

    props = torch.cuda.get_device_properties(0)
    text = [
        "# Benchmarks",
        "",
        f"Measured {datetime.date.today()} on {props.name} by `python benchmarks/run.py`: "
        f"torch {torch.__version__}, Triton {triton.__version__}, Python {platform.python_version()}.",
        "Median of CUDA-event timings (`triton.testing.do_bench`): the implementations of a row "
        f"take turns, {ROUNDS} rounds of 60 ms each, and each keeps the median of its rounds. "
        "Each Phobos result is checked against a float64 reference on fresh random inputs first. "
        "GB/s counts each input read once and each output written once. The Phobos constants "
        "are the autotuner's (`kernel.tune`, named in the check column): for the row kernels "
        "BLOCK is the next power of two of the row (one tile a row) and the CTA size T is "
        "tuned; vector add tunes BLOCK. Every variant is checked against a float64 reference "
        "and timed with the L2 flushed before its time counts. Triton autotuned: the same "
        "softmax under `triton.autotune` over 1 to 32 warps. Copy of the bytes: a "
        "device-to-device copy (torch) reading and writing as many bytes as the row's kernel "
        "must, timed the same way: the floor of that row, launch included.",
        "",
        table.markdown(),
        "",
        *launch_lines,
        "",
        "## Targets",
        "",
        *targets(table, launch, copy_gbs),
    ]
    if gaps.exists():  # the measured causes of the misses, kept by hand beside this script
        text += ["", gaps.read_text().strip()]
    if failures:
        text += ["", "Rows that failed:", "", *(f"- {f}" for f in failures)]
    Path(opts.out).write_text("\n".join(text) + "\n")
    print(f"\nwrote {opts.out}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
