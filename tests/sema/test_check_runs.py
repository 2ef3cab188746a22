"""A thread's runs: `sum(e)` with no group, `elem`, `store`, `word`, and the bit helpers."""

from __future__ import annotations

import pytest
from sema_check_helpers import assert_clean, assert_refused, dump

from phobos.sema import hir

HEAD_PH = (
    "kernel k(W: tensor<i8>[N, K], X: tensor<i8>[K], O: tensor<i32>[N], F: tensor<f32>[N, K]) {\n"
)
HEAD_PY = (
    "@ph.kernel\ndef k(W: ph.tensor[ph.i8][N, K], X: ph.tensor[ph.i8][K], "
    "O: ph.tensor[ph.i32][N], F: ph.tensor[ph.f32][N, K]):\n"
)


def kernel(lines_ph, lines_py, spelling):
    if spelling == "ph":
        return HEAD_PH + "".join(f"  {x}\n" for x in lines_ph) + "}\n", "k.ph"
    return HEAD_PY + "".join(f"    {x}\n" for x in lines_py), "k.py"


REFUSED = [
    (
        "let_slice",
        ["let v = W[0, 0 :+ 16]", "let s = sum(v) // <-"],
        ["v: ph.let = W[0, 0:+16]", "s: ph.let = ph.sum(v)  # <-"],
        "not the `let` slice `v`",
    ),
    (
        "lengths_differ",
        ["let s = sum(i32(W[0, 0 :+ 16]) * i32(X[0 :+ 8])) // <-"],
        ["s: ph.let = ph.sum(ph.i32(W[0, 0:+16]) * ph.i32(X[0:+8]))  # <-"],
        "have one length: this one is 8, the first 16",
    ),
    (
        "two_spans",
        ["let s = sum(W[0 :+ 2, 0 :+ 16]) // <-"],
        ["s: ph.let = ph.sum(W[0:+2, 0:+16])  # <-"],
        "exactly one `:+` span",
    ),
    (
        "range_not_span",
        ["let s = sum(W[0, 0 : 16]) // <-"],
        ["s: ph.let = ph.sum(W[0, 0:16])  # <-"],
        "exactly one `:+` span",
    ),
    (
        "whole_tile",
        ["var t: tile<f32>[4, 16] = 0.0", "let s = sum(t) // <-"],
        ["t: ph.var[ph.tile[ph.f32][4, 16]] = 0.0", "s: ph.let = ph.sum(t)  # <-"],
        "over runs and scalars, not `tile<f32>[4, 16]`",
    ),
    (
        "no_run",
        ["let x = ctx.thread", "let s = sum(x) // <-"],
        ["x: ph.let = ph.ctx.thread", "s: ph.let = ph.sum(x)  # <-"],
        "sums a thread's runs, and this has none",
    ),
    (
        "elem_position",
        ["let e = elem(W[0, 0 :+ 16], 16) // <-"],
        ["e: ph.let = ph.elem(W[0, 0:+16], 16)  # <-"],
        "a constant element below 16",
    ),
    (
        "elem_not_constant",
        ["let i = ctx.thread", "let e = elem(W[0, 0 :+ 16], i) // <-"],
        ["i: ph.let = ph.ctx.thread", "e: ph.let = ph.elem(W[0, 0:+16], i)  # <-"],
        "a constant element below 16",
    ),
    (
        "store_count",
        ["store(O[0 :+ 4], 1, 2, 3) // <-"],
        ["ph.store(O[0:+4], 1, 2, 3)  # <-"],
        "writes a run of 4, so it takes 4 values, not 3",
    ),
    (
        "store_not_run",
        ["let s = ctx.thread", "store(O[s], 1) // <-"],
        ["s: ph.let = ph.ctx.thread", "ph.store(O[s], 1)  # <-"],
        "takes a thread's run",
    ),
    (
        "word_not_i8",
        ["let w = word(F[0, 0 :+ 4]) // <-"],
        ["w: ph.let = ph.word(F[0, 0:+4])  # <-"],
        "a run of `i8`, not `f32`",
    ),
    (
        "word_whole_words",
        ["let w = word(W[0, 0 :+ 6]) // <-"],
        ["w: ph.let = ph.word(W[0, 0:+6])  # <-"],
        "a whole number of words, but the run has 6 bytes",
    ),
    (
        "word_position",
        ["let w = word(W[0, 0 :+ 8], 2) // <-"],
        ["w: ph.let = ph.word(W[0, 0:+8], 2)  # <-"],
        "a constant word below 2",
    ),
]


@pytest.mark.parametrize("spelling", ["ph", "py"])
@pytest.mark.parametrize("case", REFUSED, ids=[c[0] for c in REFUSED])
def test_refused(case, spelling):
    _, ph, py, fragment = case
    source, name = kernel(ph, py, spelling)
    assert_refused(source, "E0321", fragment, name)


@pytest.mark.parametrize(
    ("ph", "py", "fragment"),
    [
        ("let d = dp4a(1.0, 2, 3) // <-", "d: ph.let = ph.dp4a(1.0, 2, 3)  # <-", "takes integers"),
        (
            "let d = popcount(W[0, 0 :+ 4]) // <-",
            "d: ph.let = ph.popcount(W[0, 0:+4])  # <-",
            "takes integer scalars, not a tile",
        ),
        ("let h = f16bits(true) // <-", "h: ph.let = ph.f16bits(True)  # <-", "not `bool`"),
    ],
)
@pytest.mark.parametrize("spelling", ["ph", "py"])
def test_bit_helpers_take_integer_scalars(ph, py, fragment, spelling):
    source, name = kernel([ph], [py], spelling)
    assert_refused(source, "E0311", fragment, name)


@pytest.mark.parametrize("spelling", ["ph", "py"])
def test_well_formed_runs_type(spelling):
    ph = [
        "let col = ctx.thread",
        "var lut: tile<f32>[4, 16] = 1.0",
        "let s = sum(i32(W[col, 0 :+ 16]) * i32(X[0 :+ 16]))",
        "let f = sum(F[col, 0 :+ 8] * lut[1, 0 :+ 8] * 2.0)",
        "let g = sum(flat(lut)[0, 8 :+ 8])",
        "let e = elem(W[col, 0 :+ 16], 3)",
        "let w = word(W[col, 0 :+ 16], 3)",
        "store(O[col * 2 :+ 2], 1, s)",
        "let d = dp4a(w, w, 0)",
        "let h = f16bits(popcount(byteperm(w, d, 12816)))",
    ]
    py = [
        "col: ph.let = ph.ctx.thread",
        "lut: ph.var[ph.tile[ph.f32][4, 16]] = 1.0",
        "s: ph.let = ph.sum(ph.i32(W[col, 0:+16]) * ph.i32(X[0:+16]))",
        "f: ph.let = ph.sum(F[col, 0:+8] * lut[1, 0:+8] * 2.0)",
        "g: ph.let = ph.sum(ph.flat(lut)[0, 8:+8])",
        "e: ph.let = ph.elem(W[col, 0:+16], 3)",
        "w: ph.let = ph.word(W[col, 0:+16], 3)",
        "ph.store(O[col * 2:+2], 1, s)",
        "d: ph.let = ph.dp4a(w, w, 0)",
        "h: ph.let = ph.f16bits(ph.popcount(ph.byteperm(w, d, 12816)))",
    ]
    source, name = kernel(ph, py, spelling)
    (k,) = assert_clean(source, name)
    lets = {s.sym.name: s for s in k.body.stmts if isinstance(s, hir.Let)}
    types = {n: str(s.sym.type) for n, s in lets.items()}
    assert types["s"] == "i32" and types["f"] == "f32" and types["g"] == "f32"
    assert types["e"] == "i32" and types["w"] == "i32" and types["d"] == "i32"
    assert types["h"] == "f16"
    # a run is typed as its n elements, whatever the rank of what it slices
    run = lets["s"].value.args[0]
    assert str(run.type) == "tile<i32>[16]"
    assert lets["s"].sym.uni == hir.VARYING and lets["g"].sym.uni == hir.UNIFORM
    assert "store(O[(col * 2: i32) :+ 2], 1, s): i32" in dump([k])


def test_integer_run_sum_is_an_index_at_64_bits():
    source, _ = kernel(["let s = sum(i32(W[0, 0 :+ 16]))"], [], "ph")
    (k,) = assert_clean(source, index_width=64)
    assert str(k.body.stmts[0].sym.type) == "i64"


@pytest.mark.parametrize("spelling", ["ph", "py"])
def test_sum_of_unsigned_run_needs_a_conversion(spelling):
    head_ph = "kernel k(U: tensor<u8>[N]) {\n  let s = sum(U[0 :+ 4]) // <-\n}\n"
    head_py = "@ph.kernel\ndef k(U: ph.tensor[ph.u8][N]):\n    s: ph.let = ph.sum(U[0:+4])  # <-\n"
    source, name = (head_ph, "k.ph") if spelling == "ph" else (head_py, "k.py")
    diags = assert_refused(source, "E0321", "`sum` adds numbers, not `u8`", name)
    assert "convert it first" in diags[0].help[0]
