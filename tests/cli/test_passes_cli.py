"""The lowering's passes on the command line and through the one pipeline: `--emit PASS`,
`--list-passes`, `PHOBOS_DUMP` of every pass, the chip given to the lowering, and
`Kernel.compile`, `phobos.build` and the tuner running the driver's stages."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from phobos import build, driver
from phobos.cli.compile import build_parser
from phobos.lower import passes
from phobos.source import SourceFile
from phobos.syntax.parser import parse

ROOT = Path(__file__).resolve().parents[2]
SAXPY = str(ROOT / "examples" / "saxpy.ph")

# Two kernels, one of them with a nested reduction for `normalise` to move out.
TWO = """
kernel scale(x: tensor<f32>[N], a: f32) {
  let base = ctx.block.x * 1024
  x[base :+ 1024] = a * x[base :+ 1024]
}

kernel centre(X: tensor<f32>[N, 64]) {
  let r = ctx.block.x * 16
  X[r :+ 16, 0 :+ 64] = X[r :+ 16, 0 :+ 64] - rowsum(X[r :+ 16, 0 :+ 64]) / 64.0
}
"""


@pytest.fixture(autouse=True)
def no_dump(monkeypatch):
    monkeypatch.delenv("PHOBOS_DUMP", raising=False)


@pytest.fixture
def two(tmp_path):
    path = tmp_path / "two.ph"
    path.write_text(TWO)
    return str(path)


def test_list_passes_prints_them_in_order(compile_cli):
    ran = compile_cli(["--list-passes"])
    assert ran.status == 0 and ran.err == ""
    assert [line.split()[0] for line in ran.out.splitlines()] == list(passes.NAMES)
    assert ran.out == passes.describe()
    assert "--list-passes" in build_parser().format_help()


def test_every_pass_is_an_artifact_after_hir_and_before_lir():
    names = driver.artifacts()
    assert names[names.index("hir") + 1 : names.index("lir")] == list(passes.NAMES)
    assert driver.chain("place") == ["ast", "hir", "lir"]
    with pytest.raises(ValueError, match="unknown artifact 'nope'"):
        driver.chain("nope")


def test_emit_place_prints_the_plan_of_every_kernel(compile_cli, two):
    ran = compile_cli([two, "--emit", "place"])
    assert ran.status == 0, ran.err
    heads = [line for line in ran.out.splitlines() if line.startswith("plan ")]
    assert heads == ["plan scale  // chip sm_90", "plan centre  // chip sm_90"]
    assert "  tiles:" in ran.out and "  shared:" in ran.out and "  smem: " in ran.out


def test_emit_normalise_prints_the_hir_the_later_passes_read(compile_cli, two):
    ran = compile_cli([two, "--emit", "normalise"])
    assert ran.status == 0, ran.err
    assert ran.out.startswith("kernel scale(")
    assert "var rowsum_" in ran.out  # the nested reduction in a tile of its own
    hir = compile_cli([two, "--emit", "hir"]).out
    assert "var rowsum_" not in hir


def test_generate_and_verify_print_the_lir(two):
    # One compile: the temporaries' numbers run on from one compile to the next.
    for name in ("generate", "overlap", "verify"):
        result = driver.compile_path(two, name)
        assert result.text == driver.STAGES["lir"].text(result.artifacts["lir"])
        assert result.text.startswith("kernel scale(")


def test_a_variants_pass_text_names_its_entry():
    options = driver.Options(all_variants=True)
    result = driver.compile_path(SAXPY, "verify", options=options)
    assert "kernel saxpy__BLOCK_16(" in result.text
    assert result.text == driver.STAGES["lir"].text(result.artifacts["lir"])


def test_the_chip_reaches_the_lowering(compile_cli, two):
    ran = compile_cli([two, "--emit", "place", "--chip", "sm_80"])
    assert ran.out.splitlines()[0] == "plan scale  // chip sm_80"


def test_an_unknown_chip_is_refused_by_the_driver():
    result = driver.compile_source(SourceFile("k.ph", TWO), "lir", options=driver.Options("sm_70"))
    assert not result.ok and result.text is None
    [d] = result.diagnostics
    assert d.code == "E0908" and d.message == "unknown chip `sm_70`"


def test_phobos_dump_writes_each_pass(monkeypatch, tmp_path, two):
    dump = tmp_path / "dump"
    monkeypatch.setenv("PHOBOS_DUMP", str(dump))
    result = driver.compile_path(two, "ptx")
    assert result.ok
    for name in passes.NAMES:
        assert (dump / f"two.ph.{name}").read_text() == result.artifacts[name]
        for kernel in ("scale", "centre"):
            assert (dump / f"{kernel}.{name}").exists()
    assert (dump / "centre.place").read_text().startswith("plan centre  // chip sm_90")
    assert (dump / "scale.verify").read_text() == (dump / "scale.lir").read_text()


def test_a_refused_kernel_still_dumps_the_passes_before_the_refusal(monkeypatch, tmp_path):
    src = tmp_path / "big.ph"
    src.write_text("""
kernel big(A: tensor<f32>[M, N], B: tensor<f32>[M, N]) {
  var a = A[0 :+ 128, 0 :+ 64]
  var b = A[0 :+ 128, 0 :+ 64]
  var c: tile<f32>[128, 1] = a[0 :+ 128, 0 :+ 1]
  var d: tile<f32>[128, 1] = b[0 :+ 128, 0 :+ 1]
  B[0 :+ 128, 0 :+ 1] = c + d
}
""")
    monkeypatch.setenv("PHOBOS_DUMP", str(tmp_path / "dump"))
    result = driver.compile_path(str(src), "lir")
    assert [d.code for d in result.diagnostics] == ["E0501"]
    assert (tmp_path / "dump" / "big.normalise").read_text().startswith("kernel big(")
    assert not (tmp_path / "dump" / "big.place").exists()


# ---------------------------------------------------------------------------
# One pipeline


@pytest.fixture
def lir_stage_calls(monkeypatch):
    """The kernels the driver's `lir` stage lowers, by name, whoever asked."""
    calls: list[list[str]] = []
    stage = driver.STAGES["lir"]

    def counted(kernels, unit):
        calls.append([k.name for k in kernels])
        return stage.run(kernels, unit)

    monkeypatch.setitem(driver.STAGES, "lir", driver.Stage("hir", counted, stage.text, stage.parts))
    return calls


def _saxpy_kernel():
    spec = importlib.util.spec_from_file_location("saxpy_example", ROOT / "examples" / "saxpy.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.saxpy


def test_the_command_line_runs_the_driver_stages(compile_cli, lir_stage_calls):
    assert compile_cli([SAXPY, "--emit", "ptx"]).status == 0
    assert lir_stage_calls == [["saxpy"]]


def test_build_runs_the_driver_stages(lir_stage_calls):
    program, _ = parse(SourceFile("k.ph", TWO))
    built = build.build_kernel(program, "centre", chip="sm_80")
    assert lir_stage_calls == [["centre"]]
    assert ".target sm_80" in built.ptx and built.contract.entry == "centre"
    assert built.lir.name == "centre" and built.hir.name == "centre"


def test_kernel_compile_runs_the_driver_stages_for_its_chip(lir_stage_calls, monkeypatch, tmp_path):
    monkeypatch.setenv("PHOBOS_DUMP", str(tmp_path))
    built = _saxpy_kernel().compile(chip="sm_80", variant={"BLOCK": 16})
    assert lir_stage_calls == [["saxpy"]]
    assert ".target sm_80" in built.ptx
    place = (tmp_path / "saxpy.BLOCK=16.place").read_text()
    assert place.startswith("plan saxpy  // chip sm_80")
    assert {p.name.split(".")[-1] for p in tmp_path.iterdir()} == {
        "hir",
        *passes.NAMES,
        "lir",
        "ptx",
        "json",
    }


def test_the_tuner_compiles_each_variant_by_the_driver_stages(lir_stage_calls):
    from phobos.tune.variants import Compiled, compile_variants

    results = compile_variants(_saxpy_kernel(), "sm_80", check_races=False, jobs=1)
    assert all(isinstance(r, Compiled) for r in results)
    assert lir_stage_calls == [["saxpy"]] * len(results)
    assert all(".target sm_80" in r.ptx for r in results)
