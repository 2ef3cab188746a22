"""Decode attention (one new token, examples/decode.py's split-KV kernels: on the `attend`
built-in, and `decode_split_mma` on tensor cores) against torch SDPA on the same card, in
one run.

    python benchmarks/decode.py [--b B ...] [--s S ...] [--alone]

Shapes: batch B of 1, 16 and 64; 32 query heads on 8 KV heads (G = 4); a cache of S =
8192, 4096 and 2048 keys; D = 128; f16 Q, K, V. Bytes: the cache is read once, K and
V, `2 B 8 S 128 2` bytes (the query, output and partials are under 1 % of it): the
floor is those bytes at the card's bandwidth, measured here as a device-to-device copy
moving as many bytes (`torch.Tensor.copy_` of half of them: it reads half and writes
half), and also given at the H200's nominal 4.8 TB/s.
SDPA takes q [B, 32, 1, D] and k, v [B, 8, S, D] with `enable_gqa=True`, under its
flash, cuDNN and math backends (the efficient one refuses grouped heads). Phobos's time is both launches (split, then merge); its
splits are chosen to give the card one CTA a place (two an SM), at most one per 256 keys;
the tensor-core form's rows ("phobos mma BC=..", one warp a CTA) fill the CTAs its shared
memory lets an SM hold, at most one split per 128 keys; "phobos merged BC=.." is
`decode_mma`, the same splits with the merge done by each head's last CTA in the same
launch (one launch). Each
result is checked first against SDPA's math backend (its output poisoned with NaN);
times are medians taken in turns (`run.in_turns`).
"""

from __future__ import annotations

import argparse
import functools
import sys
import warnings
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.run import in_turns  # noqa: E402
from examples.decode import decode_merge, decode_mma, decode_split, decode_split_mma  # noqa: E402

HQ, HKV, D = 32, 8, 128
NOMINAL = 4.8e12  # bytes a second: the H200's HBM3e


def splits_for(b: int, s: int, sms: int, per_sm: int = 2, least: int = 256) -> int:
    """Splits a KV head: about one CTA for each of the card's places for them (`per_sm`
    an SM: two for `decode_split`, which takes 128 registers a thread), at least `least`
    keys each."""
    return max(1, min(round(per_sm * sms / (b * HKV)), s // least))


SHARED_PER_SM = 228 * 1024  # an H200 SM's shared memory, its CTAs' windows together
CTAS_PER_SM = 32  # the most CTAs an SM of sm_90 holds


def mma_rows(b: int, s: int, sms: int, qf, kf, vf, scale: float, check, alone=False) -> dict:
    """`decode_split_mma` at BC 32, 64 and 128 (its `@autotune` space is 32 and 128),
    then the merge from its 16-row slots: a timed function a row, each checked by
    `check(o)` first; with `alone`, also each split launch without its merge."""
    heads = b * HKV
    rows = {}
    for bc in (32, 64, 128):
        split = decode_split_mma.variant(D=D, BC=bc)
        smem = split.compile(chip="sm_90a").lir.smem + 1024  # and the driver's reserve
        ns = splits_for(b, s, sms, min(CTAS_PER_SM, SHARED_PER_SM // smem), least=128)
        ch = -(-s // ns)
        po = torch.full((heads * ns * 16, D), float("nan"), device="cuda")
        pl = torch.full((heads * ns * 16, 1), float("nan"), device="cuda")
        o = torch.full((b * HQ, D), float("nan"), device="cuda")
        launch, merge = split[(ns, heads)], decode_merge.variant(D=D)[(heads,)]

        def run(launch=launch, merge=merge, po=po, pl=pl, o=o, ch=ch, ns=ns):
            launch(qf, kf, vf, po, pl, s, ch, scale)
            merge(po, pl, o, ns)

        run()
        torch.cuda.synchronize()
        if check(o, f"mma BC={bc}"):
            rows[f"phobos mma BC={bc} ({ns} splits)"] = run
            if alone:
                rows[f"phobos mma BC={bc} ({ns} splits), the split alone"] = functools.partial(
                    launch, qf, kf, vf, po, pl, s, ch, scale
                )
        # the same splits merged by the last of each head's CTAs, in the one launch
        cnt = torch.zeros(heads, dtype=torch.int32, device="cuda")
        o = torch.full((b * HQ, D), float("nan"), device="cuda")
        merged = functools.partial(decode_mma.variant(D=D, BC=bc)[(ns, heads)],
                                   qf, kf, vf, po, pl, o, cnt, s, ch, scale)  # fmt: skip
        merged()
        torch.cuda.synchronize()
        if check(o, f"merged BC={bc}") and cnt.count_nonzero().item() == 0:
            rows[f"phobos merged BC={bc} ({ns} splits)"] = merged
    return rows


def one(b: int, s: int, sms: int, alone: bool = False) -> None:
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention as sdpa

    scale = D**-0.5
    q = torch.randn(b, HQ, 1, D, device="cuda").half()
    k, v = (torch.randn(b, HKV, s, D, device="cuda").half() for _ in range(2))
    with sdpa_kernel(SDPBackend.MATH):
        ref = sdpa(q.float(), k.float(), v.float(), scale=scale, enable_gqa=True)
    fns = {}
    for name, backend in (("SDPA flash", SDPBackend.FLASH_ATTENTION),
                          ("SDPA cuDNN", SDPBackend.CUDNN_ATTENTION),
                          ("SDPA math", SDPBackend.MATH)):  # fmt: skip

        def run(backend=backend):
            with sdpa_kernel(backend):
                return sdpa(q, k, v, scale=scale, enable_gqa=True)

        try:
            run()
        except RuntimeError as exc:  # a backend that does not take these shapes here
            print(f"{name}: {str(exc).splitlines()[0][:100]}")
            continue
        fns[name] = run
    ns = splits_for(b, s, sms)
    ch = -(-s // ns)
    heads = b * HKV
    split, merge = decode_split.variant(D=D)[(ns, heads)], decode_merge.variant(D=D)[(heads,)]
    qf, kf, vf = q.view(-1, D), k.view(-1, D), v.view(-1, D)
    po = torch.full((heads * ns * 4, D), float("nan"), device="cuda")
    pl = torch.full((heads * ns * 4, 1), float("nan"), device="cuda")
    o = torch.full((b * HQ, D), float("nan"), device="cuda")

    def phobos():
        split(qf, kf, vf, po, pl, s, ch, scale)
        merge(po, pl, o, ns)

    phobos()
    torch.cuda.synchronize()

    def check(out, what: str) -> bool:
        err = (out.view(b, HQ, 1, D) - ref).abs().max().item()
        ok = err < 5e-3  # False for NaN too: an element never written
        if not ok:
            print(f"phobos {what} B{b} S{s}: wrong, max error {err}")
        return ok

    if check(o, "attend"):
        fns[f"phobos ({ns} splits)"] = phobos
        if alone:
            fns[f"phobos ({ns} splits), the split alone"] = functools.partial(
                split, qf, kf, vf, po, pl, s, ch, scale
            )
    fns.update(mma_rows(b, s, sms, qf, kf, vf, scale, check, alone))
    nbytes = 2 * b * HKV * s * D * 2
    # a copy of half the bytes moves as many (it reads half and writes half)
    src = torch.empty(nbytes // 4, dtype=torch.float16, device="cuda")
    dst = torch.empty_like(src)
    fns["copy of the bytes"] = lambda: dst.copy_(src)
    timed = in_turns(fns)
    copy = timed["copy of the bytes"][0]
    peers = [ms for n, (ms, _) in timed.items() if n.startswith("SDPA")]
    for name, (ms, spread) in sorted(timed.items(), key=lambda kv: kv[1][0]):
        whole = name.startswith("phobos") and not name.endswith("alone")  # a part: no ratio
        ratio = f"{min(peers) / ms:.3f}x" if whole and peers else ""
        floor = f"{copy / ms:.0%} / {nbytes / NOMINAL * 1e3 / ms:.0%}"
        print(f"| B{b} S{s} | {name} | {ms * 1e3:.1f} | {spread:.1%} | "
              f"{nbytes / ms / 1e9:.2f} | {floor} | {ratio} |", flush=True)  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--b", type=int, action="append")
    ap.add_argument("--s", type=int, action="append")
    ap.add_argument("--alone", action="store_true", help="time each split launch alone too")
    args = ap.parse_args()
    warnings.filterwarnings("ignore", category=UserWarning)  # SDPA's notes on its backends
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(
        "| shape | implementation | µs (median) | spread | TB/s of the cache | "
        "copy's time / this, floor at 4.8 TB/s / this | Phobos / best SDPA |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for b in args.b or [1, 16, 64]:
        for s in args.s or [8192, 4096, 2048]:
            one(b, s, sms, args.alone)


if __name__ == "__main__":
    main()
