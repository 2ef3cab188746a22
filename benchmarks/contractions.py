"""The contractions against their peers, in one run on one card: SGEMM in f32 against
cuBLAS (TF32 off), the spec's flash attention in f32 against torch's fastest f32 SDPA
backend, and kda in f32 against torch running the same chunkwise algorithm.

    python benchmarks/contractions.py [--out FILE] [--quick]

FLOPs are counted first: a GEMM is `2 M N K`, attention `4 Nq Nk D` (two products), kda
per chunk of C tokens `2 C C D` (scores) + `2 C C D` (scores by values) + `2 C D D`
(queries by state) + `2 D C D` (the state's update). Every Phobos result is checked
against a float64 reference (attention, GEMM) or torch's f32 result (kda) on fresh
random inputs, its output poisoned with NaN first. Times are medians of
`triton.testing.do_bench` in turns (`run.in_turns`), with the spread of the rounds.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.run import in_turns  # noqa: E402
from examples.flash_attention import flash_attention  # noqa: E402
from examples.kda import kda  # noqa: E402
from examples.sgemm import matmul  # noqa: E402

# The example's tile choices that fit 48 KB with their accumulators in registers and keep
# `@pipeline` true (128x128x32 measured 3.27 ms in run 18, before the ring; its two stages
# need 64 KB, so `@pipeline` now refuses it: E0503).
SGEMM_TILES = [(128, 128, 8), (128, 128, 16), (128, 64, 16), (64, 128, 16), (64, 64, 16)]
FLASH_TILES = [(32, 32), (32, 64)]


def tflops(flops: float, ms: float) -> float:
    return flops / (ms * 1e-3) / 1e12


def poisoned(*shape):
    return torch.full(shape, float("nan"), device="cuda", dtype=torch.float32)


def sgemm_rows(sizes, rows):
    torch.backends.cuda.matmul.allow_tf32 = False
    for n in sizes:
        a = torch.randn(n, n, device="cuda")
        b = torch.randn(n, n, device="cuda")
        c0 = torch.randn(n, n, device="cuda")
        # The example computes alpha * A @ B + beta * C, so C is read: it is checked with
        # beta = 0.5 on random C, then timed with beta = 0 (cuBLAS's `mm`, C written only).
        ref = (a.double() @ b.double() + 0.5 * c0.double()).float()
        fns = {"cuBLAS f32": lambda a=a, b=b: torch.mm(a, b)}
        for tm, tn, tk in SGEMM_TILES:
            kern = matmul.variant(TILE_M=tm, TILE_N=tn, TILE_K=tk)
            c = c0.clone()
            launch = kern[(n // tm, n // tn)]
            launch(a, b, c, 1.0, 0.5)
            torch.cuda.synchronize()
            err = ((c - ref).abs().max() / ref.abs().max()).item()
            if not err < 1e-4:
                print(f"sgemm {n} {tm}x{tn}x{tk}: wrong, relative error {err}")
                continue
            fns[f"phobos {tm}x{tn}x{tk}"] = lambda launch=launch, a=a, b=b, c=c: launch(
                a, b, c, 1.0, 0.0
            )
        rows.append(_row(f"sgemm f32 {n}^3", 2.0 * n**3, in_turns(fns), "cuBLAS f32"))


def flash_rows(sizes, rows):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention as sdpa

    d = 64
    for n in sizes:
        q, k, v = (torch.randn(n, d, device="cuda") for _ in range(3))
        scale = 1.0 / d**0.5
        s = (q.double() @ k.double().T) * scale
        ref = (torch.softmax(s, dim=1) @ v.double()).float()
        fns = {}
        q4, k4, v4 = (t.view(1, 1, n, d) for t in (q, k, v))
        for name, backend in (("torch SDPA efficient", SDPBackend.EFFICIENT_ATTENTION),
                              ("torch SDPA math", SDPBackend.MATH)):  # fmt: skip
            try:
                with sdpa_kernel(backend):
                    sdpa(q4, k4, v4)

                def run(backend=backend, q4=q4, k4=k4, v4=v4):
                    with sdpa_kernel(backend):
                        return sdpa(q4, k4, v4)

                fns[name] = run
            except RuntimeError as exc:
                print(f"{name}: not available ({exc})")
        for br, bc in FLASH_TILES:
            kern = flash_attention.variant(D=d, BR=br, BC=bc)
            o = poisoned(n, d)
            launch = kern[(-(-n // br),)]
            launch(q, k, v, o, scale)
            torch.cuda.synchronize()
            err = (o - ref).abs().max().item()
            if not err < 1e-4:
                print(f"flash {n} {br}x{bc}: wrong, max error {err}")
                continue
            fns[f"phobos BR={br} BC={bc}"] = lambda launch=launch, o=o, q=q, k=k, v=v, s=scale: (
                launch(q, k, v, o, s)
            )
        timed = in_turns(fns)
        best = min((k for k in timed if k.startswith("torch")), key=lambda k: timed[k][0])
        rows.append(_row(f"flash attention f32 N={n} D={d}", 4.0 * n * n * d, timed, best))


def kda_torch(q, k, v, g, scale, c):
    """kda's chunkwise algorithm (the example's statements) in torch, one chunk a turn."""
    n, d = q.shape
    state = torch.zeros(d, d, device=q.device)
    out = torch.empty_like(q)
    mask = torch.tril(torch.ones(c, c, device=q.device))
    for s0 in range(0, n, c):
        qc, kc, vc, gc = q[s0 : s0 + c], k[s0 : s0 + c], v[s0 : s0 + c], g[s0 : s0 + c]
        b = torch.cumsum(gc, 0)
        qd = qc * torch.exp(b) * scale
        kd = kc * torch.exp(-b)
        p = (qd @ kd.T) * mask
        out[s0 : s0 + c] = p @ vc + qd @ state
        total = gc.sum()
        kfin = kc * torch.exp(total - b)
        state = state * torch.exp(total) + kfin.T @ vc
    return out


def kda_rows(sizes, rows):
    d, c = 64, 32
    for n in sizes:
        q, k, v = (torch.randn(n, d, device="cuda") for _ in range(3))
        g = -torch.rand(n, 1, device="cuda") * 0.1
        ref = kda_torch(q, k, v, g, 0.125, c)
        kern = kda.variant(D=d, C=c)
        o = poisoned(n, d)
        launch = kern[(1,)]
        launch(q, k, v, g, o, 0.125)
        torch.cuda.synchronize()
        err = ((o - ref).abs().max() / ref.abs().max()).item()
        fns = {"torch chunkwise": lambda q=q, k=k, v=v, g=g: kda_torch(q, k, v, g, 0.125, c)}
        if err < 1e-3:
            fns[f"phobos C={c}"] = lambda q=q, k=k, v=v, g=g, o=o, launch=launch: launch(
                q, k, v, g, o, 0.125
            )
        else:
            print(f"kda {n}: wrong, relative error {err}")
        flops = (n // c) * (2 * c * c * d * 2 + 2 * c * d * d * 2)
        rows.append(_row(f"kda f32 N={n} D={d}", float(flops), in_turns(fns), "torch chunkwise"))


def _row(name, flops, timed, peer):
    ours = {k: v for k, v in timed.items() if k.startswith("phobos")}
    best = min(ours, key=lambda k: ours[k][0]) if ours else None
    return {"name": name, "flops": flops, "timed": timed, "peer": peer, "ours": best}


def render(rows) -> str:
    props = torch.cuda.get_device_properties(0)
    lines = [
        f"Card: {props.name}; torch {torch.__version__}; {platform.python_version()}; "
        f"{datetime.date.today()}",
        "",
        "| row | implementation | ms (median) | spread | TFLOP/s | Phobos best / peer |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        peer_ms = r["timed"][r["peer"]][0] if r["peer"] in r["timed"] else None
        for name, (ms, spread) in sorted(r["timed"].items(), key=lambda kv: kv[1][0]):
            ratio = ""
            if name == r["ours"] and peer_ms:
                ratio = f"{peer_ms / ms:.3f}x"
            lines.append(f"| {r['name']} | {name} | {ms:.4f} | {spread:.1%} | "
                         f"{tflops(r['flops'], ms):.2f} | {ratio} |")  # fmt: skip
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", choices=["sgemm", "flash", "kda"], action="append")
    args = ap.parse_args()
    only = set(args.only or ["sgemm", "flash", "kda"])
    rows: list = []
    if "sgemm" in only:
        sgemm_rows([4096] if args.quick else [4096, 8192], rows)
    if "flash" in only:
        flash_rows([4096] if args.quick else [4096, 16384], rows)
    if "kda" in only:
        kda_rows([4096] if args.quick else [4096, 16384], rows)
    text = render(rows)
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
