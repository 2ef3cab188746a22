"""A tensor-parallel MLP block on torch.distributed (ours): Phobos kernels inside the engine
the user already has, one process a GPU, NCCL between them.

    out = x + relu(rms_norm(x) W1) W2

W1 [H, F] is split by columns and W2 [F, H] by rows across the ranks: each rank normalises
its copy of x (`rms_norm`), multiplies by its columns of W1 with the ReLU fused after the
loop (`up_relu`, f16 out), multiplies that by its rows of W2 (`down`, f32 partial sums), and
an all-reduce adds the ranks' partials; the residual is torch's. Every kernel is a Phobos
kernel made a torch operator (`phobos.torch.op`), launched on the rank's own device and
current stream; on CPU tensors (`--cpu`, the gloo backend) the operators run the tile
interpreter, so the same script runs on a machine without a GPU.

    torchrun --nproc-per-node 2 examples/tp_mlp.py          # NCCL, a GPU a rank
    torchrun --nproc-per-node 2 examples/tp_mlp.py --tune   # each rank tunes first
    torchrun --nproc-per-node 2 examples/tp_mlp.py --cpu    # gloo, on the CPU

Each rank checks the result against the same block computed on one device (its whole W1
and W2, the same kernels) and against float64, and prints one line.

T, H and F are multiples of 128 and F of 128 times the ranks (the GEMMs are `@aligned` to
their tiles). The ranks may share one kernel cache (`PHOBOS_CACHE_DIR`), tune records
included: its files are written under temporary names and renamed into place, so two
ranks compiling or tuning the same kernel at once each find a whole file, and a later
start finds everything there.
"""

from __future__ import annotations

import phobos.lang as ph


@ph.kernel(key=("M", "N"))
@ph.autotune(BLOCK=[1024, 4096, 8192], T=[128, 256])
@ph.launch("T")
def rms_norm(X: ph.tensor[ph.f16][M, N], W: ph.tensor[ph.f16][1, N], Y: ph.tensor[ph.f16][M, N], eps: ph.f32):
    row: ph.let = ph.ctx.block.x
    x: ph.var[ph.tile[ph.f32][1, BLOCK]] = ph.f32(X[row, 0:+BLOCK])
    ms: ph.var[ph.tile[ph.f32][1, 1]] = ph.rowsum(x * x)
    rstd: ph.var[ph.tile[ph.f32][1, 1]] = ph.rsqrt(ms / ph.f32(N) + eps)
    Y[row, 0:+BLOCK] = ph.f16(x * rstd * ph.f32(W[0, 0:+BLOCK]))


@ph.kernel
@ph.autotune(TILE_N=[128, 256])
@ph.tensorcore
@ph.launch(256)
@ph.pipeline
@ph.dynshared
@ph.aligned(M=128, N="TILE_N", K=64)
def up_relu(A: ph.tensor[ph.f16][M, K], B: ph.tensor[ph.f16][K, N], C: ph.tensor[ph.f16][M, N]):
    pm: ph.let = ph.ctx.block.x
    pn: ph.let = ph.ctx.block.y
    acc: ph.var[ph.tile[ph.f32][128, TILE_N]] = 0.0
    for kt in range(0, K, 64):
        a: ph.var = A[pm * 128:+128, kt:+64]
        b: ph.var = B[kt:+64, pn * TILE_N:+TILE_N]
        acc += ph.dot(a, b)
    C[pm * 128:+128, pn * TILE_N:+TILE_N] = ph.f16(ph.tmax(acc, 0.0))


@ph.kernel
@ph.autotune(TILE_N=[128, 256])
@ph.tensorcore
@ph.launch(256)
@ph.pipeline
@ph.dynshared
@ph.aligned(M=128, N="TILE_N", K=64)
def down(A: ph.tensor[ph.f16][M, K], B: ph.tensor[ph.f16][K, N], C: ph.tensor[ph.f32][M, N]):
    pm: ph.let = ph.ctx.block.x
    pn: ph.let = ph.ctx.block.y
    acc: ph.var[ph.tile[ph.f32][128, TILE_N]] = 0.0
    for kt in range(0, K, 64):
        a: ph.var = A[pm * 128:+128, kt:+64]
        b: ph.var = B[kt:+64, pn * TILE_N:+TILE_N]
        acc += ph.dot(a, b)
    C[pm * 128:+128, pn * TILE_N:+TILE_N] = acc


def norm_grid(m):
    return (m["M"],)  # a row a block


def gemm_grid(m):
    return (m["M"] // 128, m["N"] // m["TILE_N"])  # a 128 x TILE_N tile a block


def operators():
    """The three kernels as torch operators, made once a process; each launch takes the
    tuner's variant for its shapes where `tune` ran (on this card, in the shared cache),
    else each constant's first choice."""
    import phobos.torch

    norm = phobos.torch.op(rms_norm, norm_grid, outputs=["Y"], name="phobos_tp::rms_norm")
    up = phobos.torch.op(up_relu, gemm_grid, outputs=["C"], name="phobos_tp::up_relu")
    dn = phobos.torch.op(down, gemm_grid, outputs=["C"], name="phobos_tp::down")
    return norm, up, dn


def tune(x, w, w1, w2) -> None:
    """Tune the three kernels for this rank's shapes (GPU tensors): every variant checked
    against torch and timed, the winners kept in the kernel cache, where the other
    ranks, tuning at the same time, and later starts find them."""
    import torch

    t, f = x.shape[0], w1.shape[1]
    h = torch.empty_like(x)
    u = torch.empty(t, f, device=x.device, dtype=x.dtype)
    p = torch.empty(t, w2.shape[1], device=x.device)

    def norm_ref(x, w, y, eps):
        xf = x.float()
        y.copy_((xf * torch.rsqrt((xf * xf).mean(dim=1, keepdim=True) + eps) * w.float()).half())

    rms_norm.tune(norm_grid, x, w, h, 1e-5, reference=norm_ref, rtol=1e-2, atol=1e-2)
    up_relu.tune(gemm_grid, h, w1, u, reference=lambda a, b, c: c.copy_(torch.relu(a @ b)),
                 rtol=1e-2, atol=1e-2)  # fmt: skip
    down.tune(gemm_grid, u, w2, p, reference=lambda a, b, c: c.copy_((a.float() @ b.float())),
              rtol=1e-3, atol=1e-3)  # fmt: skip


def block(ops, x, w, w1, w2, all_reduce=None):
    """The MLP block on this rank's shards `w1` (columns of W1) and `w2` (rows of W2); the
    partial sums added across the ranks by `all_reduce` (None: one device, whole W1, W2)."""
    norm, up, dn = ops
    h = norm(x, w, 1e-5)
    partial = dn(up(h, w1), w2)
    if all_reduce is not None:
        all_reduce(partial)
    return x + partial.to(x.dtype)


def reference(x, w, w1, w2):
    """The block in float64 (rounding `h` and the ReLU's output to f16 as the kernels do)."""
    import torch

    x64 = x.double()
    h = (x64 * torch.rsqrt((x64 * x64).mean(dim=1, keepdim=True) + 1e-5) * w.double()).half()
    u = torch.relu(h.double() @ w1.double()).half()
    return x64 + u.double() @ w2.double()


def main(argv=None) -> int:
    import argparse
    import os
    import sys

    import torch
    import torch.distributed as dist

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cpu", action="store_true", help="CPU tensors, gloo, the interpreter")
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--ffn", type=int, default=1024)
    ap.add_argument("--tune", action="store_true", help="tune the kernels first (GPU)")
    args = ap.parse_args(argv)
    dist.init_process_group("gloo" if args.cpu else "nccl")
    rank, ranks = dist.get_rank(), dist.get_world_size()
    local = int(os.environ.get("LOCAL_RANK", rank))
    if args.cpu:
        device = torch.device("cpu")
    else:
        torch.cuda.set_device(local)
        device = torch.device("cuda", local)
    t, hdim, f = args.tokens, args.hidden, args.ffn
    if t % 128 or hdim % 128 or f % (128 * ranks):
        raise SystemExit(f"tokens and hidden must be multiples of 128, ffn of {128 * ranks}")
    g = torch.Generator().manual_seed(0)  # every rank makes the same whole weights
    x = torch.randn(t, hdim, generator=g).half()
    w = (1.0 + 0.1 * torch.randn(1, hdim, generator=g)).half()
    w1 = (torch.randn(hdim, f, generator=g) / hdim**0.5).half()
    w2 = (torch.randn(f, hdim, generator=g) / f**0.5).half()
    part = slice(rank * f // ranks, (rank + 1) * f // ranks)
    on = lambda a: a.contiguous().to(device)  # noqa: E731
    ops = operators()
    if args.tune and not args.cpu:
        tune(on(x), on(w), on(w1[:, part]), on(w2[part, :]))
    out = block(ops, on(x), on(w), on(w1[:, part]), on(w2[part, :]), dist.all_reduce)
    one = block(ops, on(x), on(w), on(w1), on(w2))
    ref = reference(x, w, w1, w2)
    got = out.cpu().double()
    vs_one = (got - one.cpu().double()).abs().max().item()
    vs_ref = (got - ref).abs().max().item()
    # The partial sums added in another order than one device's K loop: f32 rounding,
    # then the f16 of the residual's sum.
    ok = vs_one <= 4e-3 and vs_ref <= 1e-2
    where = "cpu" if args.cpu else f"cuda:{local}"
    # One write of the whole line: the ranks share the output, and `print` writes the
    # newline apart, so another rank's line could land between the two.
    sys.stdout.write(f"rank {rank}/{ranks} on {where}: max |tp - one device| {vs_one:.2e}, "
                     f"max |tp - float64| {vs_ref:.2e}: {'ok' if ok else 'WRONG'}\n")  # fmt: skip
    sys.stdout.flush()
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
