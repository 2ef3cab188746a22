"""examples/flash_attention_f16.py (one head, D = 64, f16 in, f32 out, 64 query rows a CTA
of four warps) with `p` kept in the registers the first product's fragments became (the
default) and read from shared memory (`PHOBOS_REGISTER_A=0`), against torch SDPA's flash
and efficient backends on the same head, in one run on one card.

    python benchmarks/attention_f16.py [--n N ...] [--heads]

`--heads` times examples/attention.py instead, B 4, H 32, S 4096, D 64 (`--d` for others), causal and not,
against torch SDPA's flash, cuDNN and efficient backends (causal FLOPs counted as half),
each Phobos form at both key tiles of the example's space (BC 64 and 128), and
(not causal) `attention_ahead` in the forms of `AHEAD_FORMS`.

FLOPs: `4 Nq Nk D` (two products). Each Phobos result is checked first against a float64
reference (its output poisoned with NaN); times are medians taken in turns
(`run.in_turns`). One head on one card fills it only from N = 8448 (132 CTAs of 64 rows),
so the sizes are long sequences.
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.run import in_turns  # noqa: E402
from examples.attention import ROWS, attention, attention_ahead, attention_causal  # noqa: E402
from examples.flash_attention_f16 import flash_attention_f16  # noqa: E402
from phobos.runtime.launch_gpu import GpuKernel  # noqa: E402


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


# The forms of examples/attention.py timed by `--heads`: the default (both products on
# wgmma, `p` the second's A from registers, K and V by a 2-stage TMA ring), a producer
# warpgroup at one CTA an SM (non-causal; its consumers taking turns at the tensor cores,
# or free, or with a 3-stage ring), a 3-stage ring, and `dot(p, v)` on mma.sync with K
# and V by cp.async.
PRODUCER = {"PHOBOS_SPECIALIZE": "1"}  # `with_producer`'s form, at one CTA an SM
HEAD_FORMS = {
    "phobos": {},
    "phobos producer": PRODUCER,
    "phobos producer free": {**PRODUCER, "PHOBOS_PINGPONG": "0"},
    "phobos producer 3 stages": {**PRODUCER, "PHOBOS_STAGES": "3"},
    "phobos rows in shared": {"PHOBOS_ACC_ROWS": "0"},
    "phobos 3 stages": {"PHOBOS_STAGES": "3"},
    "phobos mma.sync PV": {"PHOBOS_WGMMA_REGISTER_A": "0"},
}


def relaunched(kern, launch: str, d: int, bc: int, env: dict):
    """`kern` (examples/attention.py's) with its `@launch` replaced by `launch`, built for
    sm_90a at G 1, D `d`, BC `bc` under the lowering switches `env`."""
    from phobos.build import build_kernel
    from phobos.source import SourceFile
    from phobos.syntax.parser import parse

    src = re.sub(r"@launch\([^)]*\)", launch, kern.source, count=1)
    program, _ = parse(SourceFile(f"{kern.name}_relaunched.ph", src))
    return under(env, lambda: build_kernel(
        program, kern.name, {"G": 1, "D": d, "BC": bc}, chip="sm_90a"))  # fmt: skip


def with_producer(kern, d: int, bc: int, env: dict = PRODUCER):
    """`kern` at one CTA an SM with a producer warpgroup (`PHOBOS_SPECIALIZE=1`, with the
    rest of `env`: 384 threads, setmaxnreg 40/232), or None where the lowering gives it
    none (the causal kernel's two rings)."""
    built = relaunched(kern, "@launch(256)", d, bc, env)
    return built if built.lir.threads == 384 else None


# examples/attention.py's `attention_ahead` (the next tile's scores before this tile's
# softmax, one CTA an SM), timed beside the forms above where they are not causal: as
# compiled, with the scores' wait where it is issued (PHOBOS_OVERLAP=0: what putting it
# off gains), at two CTAs an SM where its registers allow (D 64, BC 64), and with a
# producer warpgroup (its consumers taking turns: FA3's two overlaps together).
AHEAD_FORMS = {
    "phobos ahead": {},
    "phobos ahead, waits in place": {"PHOBOS_OVERLAP": "0"},
    "phobos ahead 2 CTAs": {},
    "phobos ahead producer": PRODUCER,
}


def ahead(form: str, d: int, bc: int):
    """`attention_ahead` in `form` (of AHEAD_FORMS), or None where the form does not
    apply (two CTAs an SM only at D 64, BC 64)."""
    if form.endswith("2 CTAs"):
        return relaunched(attention_ahead, "@launch(256, 2)", d, bc, {}) if (d, bc) == (
            64, 64) else None  # fmt: skip
    return under(AHEAD_FORMS[form], lambda: attention_ahead.variant(G=1, D=d, BC=bc)
                 .compile(chip="sm_90a"))  # fmt: skip


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


def heads(b: int = 4, h: int = 32, s: int = 4096, d: int = 64, forms=None) -> None:
    """examples/attention.py against torch SDPA, one row a backend, causal and not; the
    Phobos forms of `HEAD_FORMS` named in `forms` (all where None)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention as sdpa

    scale = d**-0.5
    q, k, v = (torch.randn(b, h, s, d, device="cuda").half() for _ in range(3))
    print("| attention | variant | ms | TFLOP/s | / best peer |")
    print("| --- | --- | ---: | ---: | ---: |")
    for causal, kern in ((False, attention), (True, attention_causal)):
        flops = 4.0 * b * h * s * s * d / (2 if causal else 1)
        ref = sdpa(q, k, v, is_causal=causal, scale=scale).float()
        fns = {}
        for name, backend in (("SDPA flash", SDPBackend.FLASH_ATTENTION),
                              ("SDPA cuDNN", SDPBackend.CUDNN_ATTENTION),
                              ("SDPA efficient", SDPBackend.EFFICIENT_ATTENTION)):  # fmt: skip

            def run(backend=backend, causal=causal):
                with sdpa_kernel(backend):
                    return sdpa(q, k, v, is_causal=causal, scale=scale)

            try:
                run()
            except RuntimeError as exc:  # a backend this torch or card lacks
                print(f"{name}: {str(exc).splitlines()[0]}")
                continue
            fns[name] = run
        grid = (s // ROWS, b * h)
        chosen = {f: env for f, env in HEAD_FORMS.items() if forms is None or f in forms}
        builds = []
        for (form, env), bc in itertools.product(chosen.items(), (64, 128)):
            if "PHOBOS_SPECIALIZE" in env:
                built = with_producer(kern, d, bc, env)
            else:
                built = under(env, lambda kern=kern, bc=bc: kern.variant(G=1, D=d, BC=bc)
                              .compile(chip="sm_90a"))  # fmt: skip
            builds.append((f"{form} BC={bc}", built))
        if not causal:
            for form, bc in itertools.product(AHEAD_FORMS, (64, 128)):
                if forms is None or form in forms:
                    builds.append((f"{form} BC={bc}", ahead(form, d, bc)))
        for form, built in builds:
            if built is None:
                continue
            gk = GpuKernel(built.contract, built.ptx)
            o = torch.full((b * h * s, d), float("nan"), device="cuda")
            args = (q.view(-1, d), k.view(-1, d), v.view(-1, d), o, s, scale)
            gk.launch(grid, args)
            torch.cuda.synchronize()
            err = (o.view(b, h, s, d) - ref).abs().max().item()
            if err < 5e-3:
                fns[form] = lambda gk=gk, g=grid, args=args: gk.launch(g, args)
            else:
                print(f"{form} causal={causal}: wrong, max error {err}")
        timed = in_turns(fns)
        peers = [ms for name, (ms, _) in timed.items() if not name.startswith("phobos")]
        for name, (ms, _) in sorted(timed.items(), key=lambda kv: kv[1][0]):
            ratio = f"{min(peers) / ms:.3f}x" if name.startswith("phobos") and peers else ""
            label = f"B{b} H{h} S{s} D{d}{' causal' if causal else ''}"
            print(f"| {label} | {name} | {ms:.4f} | {flops / ms / 1e9:.1f} | {ratio} |", flush=True)


def main() -> None:
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention as sdpa

    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, action="append")
    ap.add_argument("--heads", action="store_true")
    ap.add_argument("--d", type=int, action="append", help="--heads: the head dims (64, 128)")
    ap.add_argument(
        "--form",
        action="append",
        choices=sorted([*HEAD_FORMS, *AHEAD_FORMS]),
        help="--heads: the Phobos forms timed (all where none is named)",
    )
    args = ap.parse_args()
    if args.heads:
        for d in args.d or [64]:
            heads(d=d, forms=args.form)
        return
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
