"""The examples/ kernels check cleanly, in both spellings, and give the hir expected."""

from __future__ import annotations

from pathlib import Path

import pytest

from phobos import driver
from phobos.sema import hir
from phobos.sema.check import check_kernel, check_program
from phobos.source import SourceFile
from phobos.syntax.parser import parse

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SOURCES = sorted(EXAMPLES.glob("*.ph")) + sorted(EXAMPLES.glob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_example_checks_cleanly(path):
    result = driver.compile_path(str(path), "hir")
    assert result.ok, [d.message for d in result.diagnostics]
    assert result.text and result.text.startswith("kernel ")


@pytest.mark.parametrize("stem", ["saxpy", "sgemm", "flash_attention", "kda"])
def test_both_spellings_give_the_same_hir(stem):
    ph = driver.compile_path(str(EXAMPLES / f"{stem}.ph"), "hir").text
    py = driver.compile_path(str(EXAMPLES / f"{stem}.py"), "hir").text
    assert ph == py


def _program(stem):
    path = EXAMPLES / f"{stem}.ph"
    program, diags = parse(SourceFile(str(path), path.read_text()))
    assert not diags
    return program


def test_sgemm_first_variant():
    (kernel,), diags = check_program(_program("sgemm"))
    assert not diags
    assert dict(kernel.variant) == {"TILE_M": 32, "TILE_N": 32, "TILE_K": 4}
    text = hir.dump(kernel)
    assert "var acc: tile<f32>[32, 32] = 0.0" in text
    assert "var a: tile<f32>[32, 4] = A[(pm * 32: i32) :+ 32, kt :+ 4]" in text
    assert "acc += dot(a, b): tile<f32>[32, 32]" in text
    assert "for kt in range(0, K, 4)" in text
    assert kernel.dyn_dims == ("M", "K", "N")


def test_sgemm_other_variant():
    kernel, diags = check_kernel(_program("sgemm"), "matmul", {"TILE_M": 64, "TILE_K": 8})
    assert not diags
    assert dict(kernel.variant) == {"TILE_M": 64, "TILE_N": 32, "TILE_K": 8}
    assert "var acc: tile<f32>[64, 32] = 0.0" in hir.dump(kernel)


def test_unknown_kernel_and_variant_names():
    kernel, diags = check_kernel(_program("sgemm"), "nope")
    assert kernel is None and "no kernel named `nope`" in diags[0].message
    kernel, diags = check_kernel(_program("sgemm"), "matmul", {"TILE_Q": 8})
    assert kernel is None and "`TILE_Q` is not an `@autotune` constant" in diags[0].message


def test_flash_attention_hir():
    (kernel,), diags = check_program(_program("flash_attention"))
    assert not diags
    text = hir.dump(kernel)
    assert "let q: tensor<f32>[32, 64] = Q[row :+ 32, 0 :+ 64]" in text
    assert "var s: tile<f32>[32, 32] = dot_t(q, k): tile<f32>[32, 32]" in text
    assert "var mnew: tile<f32>[32, 1] = rowmax(s): tile<f32>[32, 1]" in text
    assert "iota(1): tile<i32>[32, 32] < (Nk - kt: i32)" in text


def test_kda_hir():
    (kernel,), diags = check_program(_program("kda"))
    assert not diags
    text = hir.dump(kernel)
    assert "var gt: tile<f32>[1, 32] = transpose(g)" in text
    assert "var kt: tile<f32>[64, 32] = transpose(kfin)" in text
    assert "var kv: tile<f32>[64, 64] = dot(kt, v)" in text
