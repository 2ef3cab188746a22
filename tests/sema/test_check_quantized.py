"""The quantized built-ins: signatures, element types, shapes over M, N and K, tables, @launch."""

from __future__ import annotations

import pytest
from sema_check_helpers import assert_clean, assert_refused

from phobos.sema import hir
from phobos.sema.quantized import FORMAT_BYTES, QGEMM_TABLES, STAGED_TABLES, family

PARAMS_PH = (
    "A: tensor<i8>[M, K], SA: tensor<f32>[M, KB], W: tensor<i8>[N, K], SW: tensor<f32>[N, KB], "
    "G: tensor<i8>[1, 512], S: tensor<i8>[1, 64], GF: tensor<f32>[1, 512], O: tensor<f32>[M, N]"
)
PARAMS_PY = (
    "A: ph.tensor[ph.i8][M, K], SA: ph.tensor[ph.f32][M, KB], W: ph.tensor[ph.i8][N, K], "
    "SW: ph.tensor[ph.f32][N, KB], G: ph.tensor[ph.i8][1, 512], S: ph.tensor[ph.i8][1, 64], "
    "GF: ph.tensor[ph.f32][1, 512], O: ph.tensor[ph.f32][M, N]"
)
# name: (elem, dims) of the tiles every case declares
TILES = {
    "a": ("i8", (128, 512)),
    "sa": ("f32", (128, 16)),
    "w": ("i8", (64, 512)),
    "sw": ("f32", (64, 16)),
    "swt": ("f32", (16, 64)),
    "w50": ("i8", (64, 320)),
    "d": ("f16", (64, 2)),
    "qb": ("i8", (64, 148)),
    "qs": ("i8", (64, 164)),
    "sa8": ("f32", (128, 8)),
    "w60": ("i8", (60, 512)),
    "a96": ("i8", (128, 96)),
}


def kernel(stmt_ph, stmt_py, spelling, threads=256):
    if spelling == "ph":
        decls = "".join(
            f"  var {n}: tile<{e}>[{', '.join(map(str, d))}] = 0\n"
            if e == "i8"
            else f"  var {n}: tile<{e}>[{', '.join(map(str, d))}] = 0.0\n"
            for n, (e, d) in TILES.items()
        )
        text = f"@launch({threads})\nkernel k({PARAMS_PH}) {{\n{decls}  {stmt_ph}\n}}\n"
        return text, "k.ph"
    decls = "".join(
        f"    {n}: ph.var[ph.tile[ph.{e}][{', '.join(map(str, d))}]] = "
        + ("0\n" if e == "i8" else "0.0\n")
        for n, (e, d) in TILES.items()
    )
    text = f"@ph.launch({threads})\n@ph.kernel\ndef k({PARAMS_PY}):\n{decls}    {stmt_py}\n"
    return text, "k.py"


WELL_FORMED = [
    ("qdot_t(a, sa, w, sw)", (128, 64)),
    ("qmma_t(a, sa, w, swt)", (128, 64)),
    ("q50_qdot_t(a, sa, w50, sw)", (128, 64)),
    ("q50_qmma_t(a, sa, w50, swt)", (128, 64)),
    ("iq2xs_qgemm_t(a, sa, qb, d, G, S)", (128, 64)),
    ("iq2s_qmma_staged_t(a, sa, qs, d, G, S)", (128, 64)),
    ("q4k_qgemm_t(a, sa, A[0 :+ 64, 0 :+ 288], d)", (128, 64)),
    ("iq1s_qmma_t(a, sa, A[0 :+ 64, 0 :+ 100], d, G)", (128, 64)),
    ("qdot_t(A, SA, W, SW)", ("M", "N")),
    ("qdot_t(a96, sa[:, 0 :+ 3], a96[0 :+ 8, :], sa[0 :+ 8, 0 :+ 3])", (128, 8)),
]


def _py(call: str) -> str:
    return "ph." + call.replace(" :+ ", ":+")


@pytest.mark.parametrize("spelling", ["ph", "py"])
@pytest.mark.parametrize(("call", "shape"), WELL_FORMED, ids=[c for c, _ in WELL_FORMED])
def test_well_formed_calls_are_builtins_of_their_result(call, shape, spelling):
    source, name = kernel(f"var q = {call}", f"q: ph.var = {_py(call)}", spelling)
    (k,) = assert_clean(source, name)
    decl = k.body.stmts[-1]
    assert isinstance(decl.value, hir.Builtin) and decl.value.name == call.split("(")[0]
    dims = tuple(d if isinstance(d, int) else d.name for d in decl.value.type.dims)
    assert str(decl.value.type.elem) == "f32" and dims == shape


@pytest.mark.parametrize("spelling", ["ph", "py"])
def test_statement_form_writes_a_tensor(spelling):
    ph = "O[0 :+ 128, 0 :+ 64] = qmma_t(a, sa, w, swt)"
    py = "O[0:+128, 0:+64] = ph.qmma_t(a, sa, w, swt)"
    source, name = kernel(ph, py, spelling)
    (k,) = assert_clean(source, name)
    assert isinstance(k.body.stmts[-1], hir.Assign)


REFUSED = [
    ("qdot_t(a, sa8, w, sw)", "E0322", "takes `a_scales` of shape [M, K/32], here [128, 16]"),
    ("qdot_t(a, sa, w60[:, 0 :+ 500], sw)", "E0322", "takes `w` of shape [N, K], here [60, 512]"),
    ("qmma_t(a, sa, w, sw)", "E0322", "takes `w_scales` of shape [K/32, N], here [16, 64]"),
    ("qmma_t(a, sa, w60, sw[:, 0 :+ 16])", "E0322", "takes `w_scales` of shape [K/32, N]"),
    ("qdot_t(a, sa, w, 1.0)", "E0322", "takes `w_scales` as a [N, K/32]"),
    ("qdot_t(a, sa, sw, sw)", "E0322", "takes `w` of `i8`"),
    (
        "qdot_t(a[:, 0 :+ 48], sa, w, sw)",
        "E0322",
        "contracts K = 48, which is not a multiple of 32",
    ),
    ("q50_qdot_t(a, sa, w, sw)", "E0322", "takes `w` of shape [N, K/32*20], here [64, 320]"),
    ("iq2xs_qgemm_t(a, sa, qb, d, G, GF)", "E0322", "takes its table `masks` as a [1, n] `i8`"),
    ("iq2xs_qgemm_t(a, sa, qb, d, G)", "E0310", "takes 6 arguments but 5 were given"),
    ("q4k_qgemm_t(a, sa, qb, d)", "E0322", "takes `qb` of shape [64, K/256*144], here [64, 288]"),
    ("q4k_qgemm_t(a[0 :+ 64, :], sa, qb, d)", "E0322", "takes `a` of shape [128, K]"),
    ("iq2s_qmma_staged_t(a, sa, qs, d, G, a)", "E0322", "as a [1, n] `i8` tensor"),
]


@pytest.mark.parametrize("spelling", ["ph", "py"])
@pytest.mark.parametrize(("call", "code", "fragment"), REFUSED, ids=[c for c, _, _ in REFUSED])
def test_refused(call, code, fragment, spelling):
    source, name = kernel(f"var q = {call} // <-", f"q: ph.var = {_py(call)}  # <-", spelling)
    assert_refused(source, code, fragment, name)


@pytest.mark.parametrize("spelling", ["ph", "py"])
def test_mma_needs_multiples_of_eight(spelling):
    call = "qmma_t(a[0 :+ 12, :], sa[0 :+ 12, :], w, swt)"
    source, name = kernel(f"var q = {call} // <-", f"q: ph.var = {_py(call)}  # <-", spelling)
    assert_refused(source, "E0322", "so M is a multiple of 8, not 12", name)


@pytest.mark.parametrize("spelling", ["ph", "py"])
def test_qgemm_needs_launch_256(spelling):
    call = "q6k_qgemm_t(a, sa, A[0 :+ 64, 0 :+ 416], d)"
    source, name = kernel(
        f"var q = {call} // <-", f"q: ph.var = {_py(call)}  # <-", spelling, threads=128
    )
    diags = assert_refused(source, "E0323", "needs `@launch(256)`, but the CTA has 128", name)
    assert ("@ph.launch(256)" in diags[0].help[0]) == (spelling == "py")


def test_quantized_op_runs_once_per_cta():
    source, _ = kernel("if ctx.thread < 4 {\n    var q = qdot_t(a, sa, w, sw) // <-\n  }", "", "ph")
    assert_refused(source, "E0400", "`qdot_t` runs once per CTA")


def test_every_listed_format_has_a_row():
    from phobos.names import QGEMM_FORMATS, QMMA_STAGED_FORMATS

    for fmt in QGEMM_FORMATS:
        row = family(f"{fmt}_qgemm_t")
        assert row is not None and row.tables == QGEMM_TABLES[fmt] and row.threads == 256
        assert row.operands[2][2] == (64, f"K/256*{FORMAT_BYTES[fmt]}")
    for fmt in QMMA_STAGED_FORMATS:
        row = family(f"{fmt}_qmma_staged_t")
        assert row is not None and row.tables == STAGED_TABLES[fmt] and row.mma
    assert family("q2k_qgemm_t") is None


def test_every_builtin_has_a_rule():
    from sema_check_helpers import check

    from phobos.names import BUILTINS

    for name in BUILTINS:
        _, diags = check(f"kernel k(x: f32) {{\n  let y = {name}(x)\n}}\n")
        assert all(d.code != "E0313" for d in diags), name  # and no AssertionError
