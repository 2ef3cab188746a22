"""Row reductions of a tensor-core accumulator in its own layout: `rowmax(s)` and
`rowsum(s)` of a product kept where mma.sync wrote it (`MmaAcc`, each warp whole rows),
folded by each thread over its registers of a row and by two shuffles over the quad of
lanes that holds the row's other columns. Flash attention's scores are the case: both
of its products stay on tensor cores. Each kernel's instruction mix is pinned by the
CHECK lines in its source; its results agree with the tile interpreter at ragged sizes,
race-free, and with float64."""

import logging

import numpy as np
import pytest
from filecheck import filecheck
from lowerkit import lowered, ops, ptxas, text
from mmakit import agree, inputs, nan, run

from phobos.ptx.emit import emit_module

# The scores of a 64 x 128 key block (ragged N: the masked columns read zeros), their row
# maxima and sums. Four warps of 16 x 128 hold whole rows: a thread folds its 32 registers
# of each of its two rows, two shuffles (xor 2, then 1) fold the quad, and the quad's first
# lane stores the row. Nothing of `s` goes to shared memory.
ROWS = """
@tensorcore
@launch(128)
kernel k(A: tensor<ELEM>[M, 64], B: tensor<ELEM>[N, 64], R: tensor<f32>[M, 1], S: tensor<f32>[M, 1]) {
  let pm = ctx.block.x
  var a = A[pm * 64 :+ 64, :]
  var b = B[0 :+ 128, :]
  var s: tile<f32>[64, 128] = dot_t(a, b)
  var r: tile<f32>[64, 1] = rowmax(s)
  var t: tile<f32>[64, 1] = rowsum(s * 0.5)
  R[pm * 64 :+ 64, :] = r
  S[pm * 64 :+ 64, :] = t
}
// CHECK-NOT: shared tile_s
// CHECK-COUNT-64: mma.f32.ELEM
// CHECK-NOT: st.shared
// CHECK: max.f32
// CHECK: = shfl.bfly.b32 %acc
// CHECK: , 1:u32, 31:u32
// CHECK: st.shared.f32
// PTX: shfl.sync.bfly.b32
"""

# Flash attention's online softmax on tensor cores (the spec's example with f16 or bf16
# Q, K, V): `s = dot_t(q, k)` and `acc += dot(p, v)` both on mma.sync, the scores' row
# maxima folded in the accumulator's layout.
ATTENTION = """
@tensorcore
@launch(128)
kernel k(Q: tensor<ELEM>[Nq, 64], K: tensor<ELEM>[Nk, 64], V: tensor<ELEM>[Nk, 64], O: tensor<f32>[Nq, 64], scale: f32) {
  let row = ctx.block.x * 64
  let q = Q[row :+ 64, :]
  var acc: tile<f32>[64, 64] = 0.0
  var m: tile<f32>[64, 1] = -1.0e30
  var l: tile<f32>[64, 1] = 0.0
  for kt in range(0, Nk, 64) {
    let k = K[kt :+ 64, :]
    let v = V[kt :+ 64, :]
    var s: tile<f32>[64, 64] = dot_t(q, k)
    s = s * scale
    s = where(iota(1) < Nk - kt, s, -1.0e30)
    var mnew: tile<f32>[64, 1] = rowmax(s)
    mnew = tmax(m, mnew)
    var p: tile<ELEM>[64, 64] = ELEM(exp(s - mnew))
    var corr: tile<f32>[64, 1] = exp(m - mnew)
    l = l * corr
    l += rowsum(f32(p))
    acc = acc * corr
    acc += dot(p, v)
    m = mnew
  }
  acc = acc / l
  O[row :+ 64, :] = acc
}
// CHECK-NOT: shared tile_s
// CHECK-NOT: shared tile_p
// CHECK: for %kt
// CHECK-COUNT-32: mma.f32.ELEM
// CHECK: = shfl.bfly.b32 %acc
// CHECK: , 1:u32, 31:u32
// CHECK-COUNT-32: mma.f32.ELEM
// CHECK: {{loop end}}
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.ELEM.ELEM.f32
// PTX: shfl.sync.bfly.b32
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.ELEM.ELEM.f32
"""


def path(logged) -> str:
    """What the log says of the kernel's one `dot_t`: `dot_t #n: <path>: <why>`."""
    (line,) = {m for m in logged if m.startswith("dot_t #")}
    return line.split(": ", 1)[1]


def source(text_: str, elem: str) -> str:
    return text_.replace("ELEM", elem)


def check(src: str, k) -> None:
    filecheck(src, text(k))
    filecheck(src, emit_module([k], "sm_80"), prefix="PTX")


@pytest.mark.parametrize("elem", ["f16", "bf16"])
@pytest.mark.parametrize("m, n", [(64, 128), (100, 90), (130, 17)])
def test_row_reductions_of_an_accumulator(elem, m, n, caplog):
    src = source(ROWS, elem)
    with caplog.at_level(logging.DEBUG, logger="phobos.lower"):
        hk, k = lowered(src)
    check(src, k)
    logged = [r.getMessage() for r in caplog.records]
    assert (
        path(logged) == f"mma.sync m16n8k16 {elem} -> f32: 4 warps of 16x128, 16 fragments a warp"
    )
    for name in ("rowmax", "rowsum"):
        assert (f"`{name}` over [64, 128] in the accumulator's layout: 2 rows a thread folded, "
                "shfl.bfly over each quad") in logged  # fmt: skip
    A, B = inputs(elem, (m, 64)), inputs(elem, (n, 64))
    grid = (-(-m // 64),)
    want, got = run(hk, k, grid, {"A": A, "B": B, "R": nan(m, 1), "S": nan(m, 1)})
    agree(got, want, outputs=("R",))
    # A row's 128 products summed in another order by each interpreter: a cancelling row
    # differs by more than f32's last bit.
    agree(got, want, rtol=1e-4, atol=1e-4, outputs=("S",))
    s = A[0].astype(np.float64) @ B[0].astype(np.float64).T
    s = np.concatenate([s, np.zeros((m, max(0, 128 - n)))], axis=1)  # zeros read past N
    np.testing.assert_allclose(got["R"][:, 0], s.max(axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got["S"][:, 0], 0.5 * s.sum(axis=1), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("elem", ["f16", "bf16"])
@pytest.mark.parametrize("nq, nk", [(64, 64), (100, 150), (70, 200)])
def test_flash_attention_on_tensor_cores(elem, nq, nk, caplog):
    src = source(ATTENTION, elem)
    with caplog.at_level(logging.DEBUG, logger="phobos.lower"):
        hk, k = lowered(src)
    check(src, k)
    # `p` stays in the registers `s`'s fragments became: the second product's A is its
    # words, no trip through shared memory (`placement.register_a_refusal`).
    assert "A from the registers of `p`, B by ldmatrix" in caplog.text
    assert not any(b.name.startswith("tile_p") for b in k.shared)
    # 32 mma a product, in the loop's whole tiles and again in its masked remainder
    assert [i.attr("shape") for i in ops(k, "mma")] == ["m16n8k16"] * 128
    Q, K, V = inputs(elem, (nq, 64)), inputs(elem, (nk, 64)), inputs(elem, (nk, 64))
    grid = (-(-nq // 64),)
    want, got = run(hk, k, grid, {"Q": Q, "K": K, "V": V, "O": nan(nq, 64)}, {"scale": 0.125})
    # p is rounded to ELEM in both; the order of the sums differs
    agree(got, want, rtol=2e-3, atol=2e-3, outputs=("O",))
    q, kk, v = (x[0].astype(np.float64) for x in (Q, K, V))
    s = q @ kk.T * 0.125
    p = np.exp(s - s.max(axis=1, keepdims=True))
    ref = p / p.sum(axis=1, keepdims=True) @ v
    tol = 2e-2 if elem == "bf16" else 3e-3  # p rounded to 8 or 11 bits of mantissa
    np.testing.assert_allclose(got["O"], ref, rtol=tol, atol=tol)


# A 16-row accumulator on four warps: no grid gives each warp whole rows, so the product
# its row reduction reads runs on FMA, and the log says why.
NARROW = """
@tensorcore
@launch(128)
kernel k(A: tensor<f16>[16, 64], B: tensor<f16>[64, 64], R: tensor<f32>[16, 1]) {
  var a = A[0 :+ 16, :]
  var b = B[0 :+ 64, :]
  var s: tile<f32>[16, 64] = dot_t(a, b)
  R[0 :+ 16, :] = rowmax(s)
}
"""


def test_no_whole_rows_a_warp_keeps_the_product_on_fma(caplog):
    with caplog.at_level(logging.DEBUG, logger="phobos.lower"):
        hk, k = lowered(NARROW)
    logged = [r.getMessage() for r in caplog.records]
    why = ("FMA: its target is shared (a row reduction reads it, and on tensor cores the CTA's "
           "4 warps do not tile [16, 64] with 16x8 fragments, each warp whole rows)")  # fmt: skip
    assert path(logged) == why
    assert not ops(k, "mma")


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_the_ptx_assembles(arch):
    for elem in ("f16", "bf16"):
        for src in (ROWS, ATTENTION):
            _, k = lowered(source(src, elem))
            ptxas(k, arch)


def test_phobos_register_a_0_reads_p_from_shared_memory(monkeypatch):
    monkeypatch.setenv("PHOBOS_REGISTER_A", "0")
    _, k = lowered(source(ATTENTION, "f16"))
    assert any(b.name.startswith("tile_p") for b in k.shared)
