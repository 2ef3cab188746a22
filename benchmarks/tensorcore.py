"""The tensor-core GEMMs against their peers, in one run on one card: Phobos's `hgemm`
(examples/hgemm.py: f16 or bf16 operands, f32 accumulation and result; on an sm_90 card
the tiles of 256 threads run on wgmma fed by a TMA ring, those of 128 on mma.sync
m16n8k16; `PHOBOS_TMA=0` stages by cp.async instead, `PHOBOS_WGMMA=0` keeps every tile on
mma.sync) against cuBLAS (torch.mm, f32 accumulation) and Triton (a plain tiled
`tl.dot` kernel written here, its usual tile shapes autotuned), 4096^3 and 8192^3; and
`igemm` (examples/igemm.py: i8 `dot_t` into i32 on mma.sync m16n8k32) against
`torch._int_mm` (cuBLASLt), 4096^3.

    python benchmarks/tensorcore.py [--out FILE] [--quick] [--only f16|bf16|i8|f16c ...]
                                    [--tile 128x256x64/256 ...] [--models] [--producer]

`--producer` times each tile of two warpgroups a second way, with a producer warpgroup
walking the blocks beside the consumers and setmaxnreg moving registers to them
(`PHOBOS_SPECIALIZE=1`; the rows "... producer"). `--models` adds the model shapes (`MODEL_SHAPES`, M x N x K). `f16c` is `hgemm_h`, the
f16 GEMM writing an f16 C as cuBLAS and Triton do (the rows marked "(f16 C)"); `f16acc`
is `hgemm_hh`, which also sums in f16 (ours; "(f16 sums)", not in the default set: its
peers still sum in f32).

FLOPs: `2 M N K`. Every Phobos result is checked first against a float64 product of
the same rounded operands, its output poisoned with NaN. Times are medians of
`triton.testing.do_bench` taken in turns (`run.in_turns`). cuBLAS and Triton write C
in the operands' type (what `torch.mm` does; 2 bytes an element against `hgemm`'s 4,
the same as `hgemm_h`'s). On an sm_90 card the CTAs of a TMA-ring GEMM walk the grid's
blocks (`PHOBOS_WALK=0`: a CTA a block).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.contractions import _row, render  # noqa: E402
from benchmarks.run import in_turns  # noqa: E402
from examples.hgemm import hgemm, hgemm_bf16, hgemm_h, hgemm_hh  # noqa: E402
from examples.igemm import igemm  # noqa: E402

# (128, TILE_N, TILE_K, threads): hgemm's space but 128 x 256 on 4 warps (256 accumulator
# registers a thread: it runs on FMA). 4 warps of 64 x 64 or 8 of 32 x 64 on 128 x 128, 8
# of 64 x 64 on 128 x 256.
TILES = [(128, 128, 64, 128), (128, 128, 32, 128), (128, 256, 64, 256), (128, 256, 32, 256),
         (128, 128, 64, 256), (128, 128, 32, 256)]  # fmt: skip


@triton.autotune(
    configs=[
        triton.Config({"BM": 128, "BN": 128, "BK": 32}, num_warps=8, num_stages=3),
        triton.Config({"BM": 128, "BN": 256, "BK": 64}, num_warps=8, num_stages=3),
        triton.Config({"BM": 128, "BN": 128, "BK": 64}, num_warps=4, num_stages=4),
        triton.Config({"BM": 64, "BN": 128, "BK": 32}, num_warps=4, num_stages=4),
    ],
    key=["M", "N", "K"],
)
@triton.jit
def tr_matmul(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        x = tl.load(a + rm[:, None] * K + (k0 + rk)[None, :])
        y = tl.load(b + (k0 + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(x, y)
    tl.store(c + rm[:, None] * N + rn[None, :], acc.to(c.dtype.element_ty))


# The model shapes (M x N x K) of the GEMM issue: a 4096-wide model's projections at 8192
# tokens, its 14336-wide MLP both ways, and one decode-sized batch of 128 rows.
MODEL_SHAPES = [(8192, 4096, 4096), (8192, 14336, 4096), (8192, 4096, 14336), (128, 14336, 4096)]


def _label(name: str, shape) -> str:
    m, n, k = shape
    return f"gemm {name} {m}^3" if m == n == k else f"gemm {name} {m}x{n}x{k}"


def with_producer(kernel, constants: dict):
    """`kernel`'s variant compiled with a producer warpgroup (`PHOBOS_SPECIALIZE=1`: its
    walk beside the consumers', setmaxnreg moving registers to them), as a launch taking
    (grid, args)."""
    from benchmarks.attention_f16 import under
    from phobos.runtime.launch_gpu import GpuKernel

    built = under({"PHOBOS_SPECIALIZE": "1"},
                  lambda: kernel.variant(**constants).compile(chip="sm_90a"))  # fmt: skip
    assert built.lir.threads == constants["T"] + 128, "the switch did not take"
    gpu = GpuKernel(built.contract, built.ptx)
    return lambda grid: lambda *args: gpu.launch(grid, args)


def rows_for(
    dtype, kernel, shapes, rows, tiles=TILES, out_dtype=torch.float32, sums="f32", producer=False
):
    """One row a shape: cuBLAS, Triton and `kernel` at each of `tiles`, its result
    `out_dtype` (f32, or f16 as `hgemm_h` writes it: the bytes cuBLAS writes); `sums`
    "f16" for `hgemm_hh`, which sums in f16 (its tiles TILE_N alone); `producer`: each
    tile of two warpgroups also with a producer warpgroup (`with_producer`)."""
    name = {torch.float16: "f16", torch.bfloat16: "bf16"}[dtype]
    if out_dtype != torch.float32:
        name += " (f16 C)" if sums == "f32" else " (f16 sums)"
    for m, n, k in shapes:
        a = torch.randn(m, k, device="cuda").to(dtype)
        b = torch.randn(k, n, device="cuda").to(dtype)
        ref = (a.double() @ b.double()).float()
        out = torch.empty(m, n, device="cuda", dtype=dtype)
        grid = lambda meta, m=m, n=n: (triton.cdiv(m, meta["BM"]), triton.cdiv(n, meta["BN"]))  # noqa: E731
        fns = {
            "cuBLAS": lambda a=a, b=b: torch.mm(a, b),
            "Triton": lambda a=a, b=b, out=out, grid=grid, m=m, n=n, k=k: tr_matmul[grid](
                a, b, out, m, n, k
            ),
        }
        for tm, tn, tk, t in tiles:
            if m % tm or n % tn or k % tk:
                continue  # hgemm is @aligned to its tiles
            if sums == "f16" and (tk, t) != (64, 256):
                continue  # hgemm_hh: 64-deep k slices on two warpgroups
            constants = dict(TILE_N=tn) if sums == "f16" else dict(TILE_N=tn, TILE_K=tk, T=t)
            forms = {"": kernel.variant(**constants)[(m // tm, n // tn)]}
            if producer and t == 256 and sums == "f32":
                forms[" producer"] = with_producer(kernel, constants)((m // tm, n // tn))
            for form, launch in forms.items():
                c = torch.full((m, n), float("nan"), device="cuda", dtype=out_dtype)
                launch(a, b, c)
                torch.cuda.synchronize()
                err = ((c.float() - ref).abs().max() / ref.abs().max()).item()
                # f32 sums of exact products: only the order differs (then f16's rounding);
                # f16 sums round each k step's partial sum (K / 16 roundings of f16's 2^-11)
                bound = 1e-4 if out_dtype == torch.float32 else 1e-3 if sums == "f32" else 2e-2
                label = f"phobos {tm}x{tn}x{tk}/{t}{form}"
                if not err < bound:
                    print(f"hgemm {name} {m}x{n}x{k} {label}: wrong, relative error {err}")
                    continue
                fns[label] = lambda launch=launch, a=a, b=b, c=c: launch(a, b, c)
        rows.append(_row(_label(name, (m, n, k)), 2.0 * m * n * k, in_turns(fns), "cuBLAS"))
        timed = rows[-1]["timed"]
        ours = rows[-1]["ours"]
        if ours and "Triton" in timed:
            ratio = timed["Triton"][0] / timed[ours][0]
            print(f"{name} {m}x{n}x{k}: Phobos {ours} / Triton = {ratio:.3f}x")


I8_TILES = [(128, 128, 64), (128, 128, 128)]  # igemm's space


def int8_rows(sizes, rows):
    for n in sizes:
        a = torch.randint(-128, 128, (n, n), device="cuda", dtype=torch.int8)
        bt = torch.randint(-128, 128, (n, n), device="cuda", dtype=torch.int8)  # B's rows
        ref = torch._int_mm(a, bt.t())  # exact: i32 sums of i8 products (no overflow here)
        fns = {"torch._int_mm": lambda a=a, bt=bt: torch._int_mm(a, bt.t())}
        for tm, tn, tk in I8_TILES:
            launch = igemm.variant(TILE_K=tk)[(n // tm, n // tn)]
            c = torch.full((n, n), -(2**31), device="cuda", dtype=torch.int32)  # poison
            launch(a, bt, c)
            torch.cuda.synchronize()
            if not torch.equal(c, ref):
                print(f"igemm {n} {tm}x{tn}x{tk}: wrong, {(c != ref).sum().item()} elements")
                continue
            fns[f"phobos {tm}x{tn}x{tk}"] = lambda launch=launch, a=a, bt=bt, c=c: launch(a, bt, c)
        rows.append(_row(f"gemm i8 {n}^3", 2.0 * n**3, in_turns(fns), "torch._int_mm"))


def _tile(text: str) -> tuple[int, int, int, int]:
    """`128x256x64/256` as (128, 256, 64, 256), one of `TILES`."""
    try:
        mnk, t = text.split("/")
        got = (*(int(x) for x in mnk.split("x")), int(t))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not MxNxK/T") from None
    if got not in TILES:
        raise argparse.ArgumentTypeError(f"{text!r} is not one of {TILES}")
    return got


def _shape(text: str) -> tuple[int, int, int]:
    """`128x14336x4096` as (128, 14336, 4096)."""
    try:
        m, n, k = (int(x) for x in text.split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not MxNxK") from None
    return m, n, k


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", choices=["f16", "bf16", "i8", "f16c", "f16acc"], action="append")
    ap.add_argument("--tile", action="append", type=_tile, help="MxNxK/T, one of TILES")
    ap.add_argument("--models", action="store_true", help="also the model shapes, f16 and bf16")
    ap.add_argument("--shape", action="append", type=_shape, help="MxNxK, instead of the squares")
    ap.add_argument("--producer", action="store_true",
                    help="also each two-warpgroup tile with a producer warpgroup")  # fmt: skip
    args = ap.parse_args()
    tiles = args.tile or TILES
    only = set(args.only or ["f16", "bf16", "i8", "f16c"])  # f16acc when asked
    shapes = [(n, n, n) for n in ([4096] if args.quick else [4096, 8192])]
    if args.shape:
        shapes = args.shape
    if args.models:
        shapes += MODEL_SHAPES
    rows: list = []
    if "f16" in only:
        rows_for(torch.float16, hgemm, shapes, rows, tiles, producer=args.producer)
    if "bf16" in only:
        rows_for(torch.bfloat16, hgemm_bf16, shapes, rows, tiles, producer=args.producer)
    if "f16c" in only:
        rows_for(torch.float16, hgemm_h, shapes, rows, tiles, torch.float16, producer=args.producer)
    if "f16acc" in only:
        rows_for(torch.float16, hgemm_hh, shapes, rows, tiles, torch.float16, sums="f16")
    if "i8" in only:
        int8_rows([4096], rows)
    text = render(rows)
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
