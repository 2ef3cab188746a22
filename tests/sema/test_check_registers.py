"""@registers: the tiles kept in registers, their sizes, and where they may be updated."""

from __future__ import annotations

import pytest
from sema_check_helpers import assert_clean, assert_refused, check

from phobos.sema import hir

REFUSED = [
    (
        "too_many_per_thread",
        "@registers(acc)\n@launch(128)\nkernel k(n: i32) {\n"
        "  var acc: tile<f32>[64, 256] = 0.0 // <-\n}\n",
        '@ph.registers("acc")\n@ph.launch(128)\n@ph.kernel\ndef k(n: ph.i32):\n'
        "    acc: ph.var[ph.tile[ph.f32][64, 256]] = 0.0  # <-\n",
        "E0324",
        "`acc` keeps 128 elements per thread in registers, more than 64",
    ),
    (
        "threads_do_not_divide",
        "@registers(b)\n@launch(128)\nkernel k(n: i32) {\n  var b: tile<f32>[1, 96] = 0.0 // <-\n}\n",
        '@ph.registers("b")\n@ph.launch(128)\n@ph.kernel\ndef k(n: ph.i32):\n'
        "    b: ph.var[ph.tile[ph.f32][1, 96]] = 0.0  # <-\n",
        "E0324",
        "the CTA's 128 threads do not divide the 96 elements of `b`",
    ),
    (
        "untyped",
        "@registers(c)\nkernel k(A: tensor<f32>[N]) {\n  var c = A[0 :+ 256] // <-\n}\n",
        '@ph.registers("c")\n@ph.kernel\ndef k(A: ph.tensor[ph.f32][N]):\n'
        "    c: ph.var = A[0:+256]  # <-\n",
        "E0324",
        "`c` is declared without a tile type",
    ),
    (
        "uninitialised",
        "@registers(d)\nkernel k(n: i32) {\n  var d: tile<f32>[1, 256] // <-\n}\n",
        '@ph.registers("d")\n@ph.kernel\ndef k(n: ph.i32):\n'
        "    d: ph.var[ph.tile[ph.f32][1, 256]]  # <-\n",
        "E0324",
        "`d` starts uninitialised",
    ),
    (
        "update_in_if",
        "@registers(e)\nkernel k(n: i32) {\n  var e: tile<f32>[1, 256] = 0.0\n"
        "  if n > 0 {\n    e += 1.0 // <-\n  }\n}\n",
        '@ph.registers("e")\n@ph.kernel\ndef k(n: ph.i32):\n'
        "    e: ph.var[ph.tile[ph.f32][1, 256]] = 0.0\n    if n > 0:\n        e += 1.0  # <-\n",
        "E0325",
        "`e` is kept in registers, so it cannot be updated inside an `if` or `while`",
    ),
    (
        "slice_update_in_while",
        "@registers(e)\nkernel k(n: i32) {\n  var e: tile<f32>[1, 256] = 0.0\n"
        "  var i = 0\n  while i < n {\n    e[0, 0 :+ 4] = 2.0 // <-\n    i += 1\n  }\n}\n",
        '@ph.registers("e")\n@ph.kernel\ndef k(n: ph.i32):\n'
        "    e: ph.var[ph.tile[ph.f32][1, 256]] = 0.0\n    i: ph.var = 0\n    while i < n:\n"
        "        e[0, 0:+4] = 2.0  # <-\n        i += 1\n",
        "E0325",
        "cannot be updated inside an `if` or `while`",
    ),
    (
        "update_through_a_fn_in_an_if",
        "fn bump(t) {\n  t += 1.0 // <-\n}\n@registers(e)\nkernel k(n: i32) {\n"
        "  var e: tile<f32>[1, 256] = 0.0\n  if n > 0 {\n    bump(e)\n  }\n}\n",
        '@ph.fn\ndef bump(t):\n    t += 1.0  # <-\n\n@ph.registers("e")\n@ph.kernel\n'
        "def k(n: ph.i32):\n    e: ph.var[ph.tile[ph.f32][1, 256]] = 0.0\n    if n > 0:\n"
        "        bump(e)\n",
        "E0325",
        "`e` is kept in registers",
    ),
]


@pytest.mark.parametrize("spelling", ["ph", "py"])
@pytest.mark.parametrize("case", REFUSED, ids=[c[0] for c in REFUSED])
def test_refused(case, spelling):
    _, ph, py, code, fragment = case
    source, name = (ph, "k.ph") if spelling == "ph" else (py, "k.py")
    assert_refused(source, code, fragment, name)


@pytest.mark.parametrize("spelling", ["ph", "py"])
def test_register_tiles_are_recorded_and_a_for_carries_them(spelling):
    ph = (
        "@registers(acc, b)\n@launch(128)\nkernel k(A: tensor<f32>[1, N], n: i32) {\n"
        "  var acc: tile<f32>[16, 64] = 0.0\n  var b: tile<f32>[1, 128] = 0.0\n"
        "  var other: tile<f32>[1, 128] = 0.0\n"
        "  for i in range(0, n) {\n    acc += 1.0\n    b = b * 2.0\n  }\n"
        "  if n > 2 {\n    other += 1.0\n  }\n"
        "  A[0, 0 :+ 128] = b\n}\n"
    )
    py = (
        '@ph.registers("acc", "b")\n@ph.launch(128)\n@ph.kernel\n'
        "def k(A: ph.tensor[ph.f32][1, N], n: ph.i32):\n"
        "    acc: ph.var[ph.tile[ph.f32][16, 64]] = 0.0\n"
        "    b: ph.var[ph.tile[ph.f32][1, 128]] = 0.0\n"
        "    other: ph.var[ph.tile[ph.f32][1, 128]] = 0.0\n"
        "    for i in range(0, n):\n        acc += 1.0\n        b = b * 2.0\n"
        "    if n > 2:\n        other += 1.0\n"
        "    A[0, 0:+128] = b\n"
    )
    source, name = (ph, "k.ph") if spelling == "ph" else (py, "k.py")
    (k,) = assert_clean(source, name)
    assert [s.name for s in k.registers] == ["acc", "b"]
    assert k.registers[0] is k.body.stmts[0].sym
    assert "// registers acc, b" in hir.dump(k)


def test_a_tile_declared_inside_the_if_may_be_updated_there():
    source = (
        "@registers(t)\nkernel k(n: i32) {\n  if n > 0 {\n"
        "    var t: tile<f32>[1, 256] = 0.0\n    t += 1.0\n  }\n}\n"
    )
    (k,) = assert_clean(source)
    assert [s.name for s in k.registers] == ["t"]


def test_no_registers_attribute_records_nothing():
    kernels, diags = check("kernel k(n: i32) {\n  var t: tile<f32>[1, 256] = 0.0\n}\n")
    assert not diags and kernels[0].registers == ()
