"""f16 accumulation (ours, beyond SPEC.md): under `@tensorcore`, `acc += dot(a, b)` (or
`dot_t`) of f16 tiles into an f16 tile sums in f16 where SPEC's product is f32. On sm_90a
the product runs on wgmma with an f16 accumulator (N / 4 b32 registers a thread, two
elements each), packed from the tile's elements once before a TMA ring's loop and
unpacked after its last wait, so a group stays in flight from turn to turn as with f32.
Pinned by CHECK lines against the lir and the PTX; agrees with the tile interpreter at
ragged sizes in the threads interpreter (within f16's roundings: the tensor cores round
each k step of 16, the tile interpreter each turn's product), race-free, and with
float64 within f16's precision; elsewhere it runs on FMA in f16, and the log says why."""

import logging

import numpy as np
import pytest
from filecheck import filecheck
from lowerkit import checked, lowered, ops, ptxas_clean, text
from mmakit import inputs, run

from phobos.ptx.emit import emit_module

GEMM = """
@tensorcore
@launch(256)
@dynshared
kernel k(A: tensor<f16>[M, K], B: tensor<f16>[K, N], C: tensor<f16>[M, N]) {
  let pm = ctx.block.x
  let pn = ctx.block.y
  var acc: tile<f16>[128, 128] = 0.0
  for kt in range(0, K, 64) {
    var a = A[pm * 128 :+ 128, kt :+ 64]
    var b = B[kt :+ 64, pn * 128 :+ 128]
    acc += dot(a, b)
  }
  C[pm * 128 :+ 128, pn * 128 :+ 128] = acc
}
// CHECK: for %kt
// CHECK: = wgmma_mma.f16.f16
// CHECK: wgmma_wait  [pending=1]
// CHECK: {{loop end}}
// CHECK: wgmma_wait  [pending=0]
// PTX: wgmma.mma_async.sync.aligned.m64n128k16.f16.f16.f16
"""

GEMM_T = (
    GEMM.replace("B: tensor<f16>[K, N]", "B: tensor<f16>[N, K]")
    .replace("B[kt :+ 64, pn * 128 :+ 128]", "B[pn * 128 :+ 128, kt :+ 64]")
    .replace("dot(a, b)", "dot_t(a, b)")
)
FORMS = {"dot": (GEMM, False), "dot_t": (GEMM_T, True)}


def tolerance(ref, k: int) -> float:
    """f16 roundings of the partial sums: a few units in the last place of the largest."""
    return 4 * 2.0**-10 * float(np.abs(ref).max()) * max(1.0, np.sqrt(k / 64))


@pytest.mark.parametrize("form", sorted(FORMS))
def test_an_f16_accumulator_runs_on_wgmma_in_f16(form):
    src = FORMS[form][0]
    _, k = lowered(src, chip="sm_90a")
    filecheck(GEMM, text(k))
    ptx = emit_module([k], "sm_90a")
    filecheck(GEMM, ptx, prefix="PTX")
    (mma, *_) = ops(k, "wgmma_mma")
    assert mma.attr("type") == "f16" and len(mma.dests) == 128 // 4
    assert all(d.type == "b32" for d in mma.dests)
    # The words are packed once before the loop and unpacked once after its last wait.
    lines = [line.strip() for line in text(k).splitlines()]
    words = {f"%{d.name}" for d in mma.dests}
    packs = [i for i, ln in enumerate(lines) if ln.split(" = mov.b32 ")[0] in words]
    unpacks = [i for i, ln in enumerate(lines)
               if " = mov.b32 " in ln and ln.split(" = mov.b32 ")[1] in words]  # fmt: skip
    loop = next(i for i, ln in enumerate(lines) if ln.startswith("for %kt"))
    drained = max(i for i, ln in enumerate(lines) if ln == "wgmma_wait  [pending=0]")
    assert len(packs) == len(unpacks) == len(words)
    assert max(packs) < loop and min(unpacks) > drained
    assert ".local" not in ptx
    # The f16 tile leaves by stmatrix and TMA stores, its pairs the words as they are.
    assert ops(k, "tma_store") and ops(k, "stmatrix") and not ops(k, "cvt_x2")
    ptxas_clean(k, "sm_90a")


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("m, n, kk", [(200, 136, 200), (128, 128, 64), (72, 40, 320)])
def test_an_f16_accumulator_agrees_with_the_tile_interpreter(form, m, n, kk):
    src, transposed = FORMS[form]
    hk, k = lowered(src, chip="sm_90a")
    A = inputs("f16", (m, kk))
    B = inputs("f16", (n, kk) if transposed else (kk, n))
    C = np.full((m, n), np.nan, np.float16)
    want, got = run(hk, k, (-(-m // 128), -(-n // 128)), {"A": A, "B": B, "C": (C, C.copy())})
    assert not np.isnan(got["C"]).any(), "elements never written"
    b = B[0].astype(np.float64)
    ref = A[0].astype(np.float64) @ (b.T if transposed else b)
    tol = tolerance(ref, kk)
    np.testing.assert_allclose(got["C"].astype(np.float64), want["C"], rtol=0, atol=tol)
    np.testing.assert_allclose(got["C"].astype(np.float64), ref, rtol=0, atol=tol)
    # Not the f32 sum rounded once: the roundings of f16 partial sums show somewhere.
    assert (got["C"] != ref.astype(np.float16)).any()


def test_on_sm_90_an_f16_accumulator_runs_on_fma_and_the_log_says_why(caplog):
    with caplog.at_level(logging.DEBUG, logger="phobos.lower"):
        _, k = lowered(GEMM, chip="sm_90")
    assert not ops(k, "mma") and not ops(k, "wgmma_mma") and ops(k, "fma")
    assert "an f16 accumulator runs on wgmma only, and here wgmma needs sm_90a" in caplog.text


def test_an_f16_accumulator_types_its_product_f16_and_only_under_tensorcore():
    hk = checked(GEMM)
    (loop,) = [s for s in hk.body.stmts if type(s).__name__ == "For"]
    product = loop.body.stmts[-1].value
    assert product.name == "dot" and product.type.elem.name == "f16"
    # Without @tensorcore a product of f16 tiles is f16 already (SPEC.md's table).
    plain = checked(GEMM.replace("@tensorcore\n", ""))
    (loop,) = [s for s in plain.body.stmts if type(s).__name__ == "For"]
    assert loop.body.stmts[-1].value.type.elem.name == "f16"


@pytest.mark.parametrize(
    "change",
    [
        ("acc += dot(a, b)", "acc = dot(a, b)"),  # only `+=` asks for f16 sums
        ("acc += dot(a, b)", "acc = acc + dot(a, b)"),
        ("tile<f16>[128, 128] = 0.0", "tile<bf16>[128, 128] = 0.0"),  # no bf16 sums
    ],
    ids=["assign", "spelled-out", "bf16"],
)
def test_other_spellings_keep_the_f32_product_and_are_refused(change):
    from phobos.sema.check import check_kernel
    from phobos.source import SourceFile
    from phobos.syntax.parser import parse

    program, _ = parse(SourceFile("k.ph", GEMM.replace(*change)))
    kernel, diags = check_kernel(program, "k", None, 32)
    assert kernel is None and diags[0].code == "E0309", [d.message for d in diags]
    assert "found `f32`" in diags[0].message  # the product stayed f32


def test_without_a_tma_ring_each_product_packs_and_unpacks_its_accumulator(monkeypatch):
    # PHOBOS_TMA=0: the cp.async ring; each statement packs, sums, waits and unpacks.
    monkeypatch.setenv("PHOBOS_TMA", "0")
    hk, k = lowered(GEMM, chip="sm_90a")
    assert not k.maps and ops(k, "cp_async") and ops(k, "wgmma_mma")
    assert {i.attr("pending") for i in ops(k, "wgmma_wait")} == {0}
    m, n, kk = 136, 200, 136
    A, B = inputs("f16", (m, kk)), inputs("f16", (kk, n))
    C = np.full((m, n), np.nan, np.float16)
    want, got = run(hk, k, (-(-m // 128), -(-n // 128)), {"A": A, "B": B, "C": (C, C.copy())})
    ref = A[0].astype(np.float64) @ B[0].astype(np.float64)
    tol = tolerance(ref, kk)
    np.testing.assert_allclose(got["C"].astype(np.float64), want["C"], rtol=0, atol=tol)
    np.testing.assert_allclose(got["C"].astype(np.float64), ref, rtol=0, atol=tol)


def test_an_f16_accumulator_summed_twice_a_turn_is_packed_once():
    # The compile fuzzer's `mutant('edit-line', ROOT / 'examples/hgemm.py', 941)`: a second
    # `acc += dot(a, b)` in the loop packed the accumulator twice and unpacked it twice,
    # an internal error; each turn now adds both products to the one packed accumulator.
    src = GEMM.replace("    acc += dot(a, b)\n", "    acc += dot(a, b)\n    acc += dot(a, b)\n")
    hk, k = lowered(src, chip="sm_90a")
    assert len(ops(k, "wgmma_mma")) == 2 * 4  # two products of four k steps a turn
    ptxas_clean(k, "sm_90a")
    m, n, kk = 128, 128, 128
    # its own generator: the shared one's draws stay the other tests' (mmakit.rng)
    rng = np.random.default_rng(941)
    a, b = (rng.standard_normal(s).astype(np.float16) for s in ((m, kk), (kk, n)))
    A, B = (a, a), (b, b)
    C = np.full((m, n), np.nan, np.float16)
    want, got = run(hk, k, (1, 1), {"A": A, "B": B, "C": (C, C.copy())})
    ref = 2 * A[0].astype(np.float64) @ B[0].astype(np.float64)
    tol = 2 * tolerance(ref, 2 * kk)
    np.testing.assert_allclose(got["C"].astype(np.float64), want["C"], rtol=0, atol=tol)
    np.testing.assert_allclose(got["C"].astype(np.float64), ref, rtol=0, atol=tol)
