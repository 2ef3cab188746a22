"""`phobos.lang` is found through the module's own imports, however they spell it."""

from __future__ import annotations

import pytest
from pyfront_helpers import ph_ok, py, py_ok

EXPECTED = (
    "kernel k(A: tensor<f32>[N], x: f32) {\n  let y: f32 = exp(x) + f32(ctx.lane)\n  A[0] = y\n}"
)


@pytest.mark.parametrize(
    "header, p",
    [
        ("import phobos.lang as ph\n", "ph."),
        ("import phobos.lang as lang\n", "lang."),
        ("import phobos.lang\n", "phobos.lang."),
        ("import phobos\nimport phobos.lang\n", "phobos.lang."),
        ("import phobos as P\n", "P.lang."),
        ("from phobos import lang as ph\n", "ph."),
        ("from phobos import lang\n", "lang."),
        (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import phobos.lang as ph\n",
            "ph.",
        ),
    ],
)
def test_module_spellings(header, p):
    text = f"""
@{p}kernel
def k(A: {p}tensor[{p}f32][N], x: {p}f32):
    y: {p}let[{p}f32] = {p}exp(x) + {p}f32({p}ctx.lane)
    A[0] = y
"""
    assert py_ok(text, header=header) == ph_ok(EXPECTED)


def test_from_imports_with_aliases():
    header = (
        "from phobos.lang import kernel, tensor, f32, let, exp, ctx\n"
        "from phobos.lang import f32 as F, let as L\n"
    )
    text = """
@kernel
def k(A: tensor[f32][N], x: F):
    y: L[F] = exp(x) + f32(ctx.lane)
    A[0] = y
"""
    assert py_ok(text, header=header) == ph_ok(EXPECTED)


def test_star_import():
    header = "from phobos.lang import *\n"
    text = """
@kernel
def k(A: tensor[f32][N], x: f32):
    y: let[f32] = exp(x) + f32(ctx.lane)
    A[0] = y
"""
    assert py_ok(text, header=header) == ph_ok(EXPECTED)


def test_imports_inside_the_enclosing_function():
    text = """
def make():
    import phobos.lang as q

    @q.kernel
    def k(A: q.tensor[q.f32][N], x: q.f32):
        y: q.let[q.f32] = q.exp(x) + q.f32(q.ctx.lane)
        A[0] = y

    return k
"""
    assert py_ok(text, header="") == ph_ok(EXPECTED)


def test_without_an_import_nothing_is_a_kernel():
    program = py_ok("@ph.kernel\ndef k():\n    pass\n", header="import numpy as ph\n")
    assert program.items == ()


def test_another_module_named_lang_is_not_phobos():
    program = py_ok("@lang.kernel\ndef k():\n    pass\n", header="from mylib import lang\n")
    assert program.items == ()


def test_unknown_name_through_a_from_import():
    _, diags = py(
        "@kernel\ndef k(x: f32):\n    y: let = softmax(x)\n",
        header="from phobos.lang import kernel, f32, let, softmax\n",
    )
    assert [d.message for d in diags] == ["`phobos.lang` has no `softmax`"]


def test_bare_names_stay_names():
    """A name the module does not import from phobos.lang is an ordinary name:
    `min` below is Phobos's own `min`, as it is in `.ph`."""
    program = py_ok("@ph.kernel\ndef k(x: ph.f32):\n    y: ph.let = min(x, 1.0)\n")
    assert program == ph_ok("kernel k(x: f32) {\n  let y = min(x, 1.0)\n}")
