"""The lowering as named passes: their order, what each makes, its text, the chip the
lowering is for, and the verifier after every pass that makes lir."""

from __future__ import annotations

import dataclasses
import re

import pytest
from lowerkit import checked

from phobos.lower import lir, passes, placement
from phobos.lower.kernel import lower_kernel
from phobos.lower.verify import LirError
from phobos.sema import hir

STAGED = """
kernel k(X: tensor<f32>[N, 64], Y: tensor<f32>[N, 64]) {
  let r = ctx.block.x * 16
  var t: tile<f32>[16, 64] = X[r :+ 16, 0 :+ 64]
  barrier()
  Y[r :+ 16, 0 :+ 64] = t + rowsum(t)
}
"""


def lowered_with_passes(source: str, chip: str = "sm_90"):
    """(lir kernel, [(pass name, lowering, output)]) of the kernel `k` of `source`."""
    seen = []
    k, diags = lower_kernel(
        checked(source), chip, after=lambda p, lw, out: seen.append((p, lw, out))
    )
    assert k is not None, [d.message for d in diags]
    return k, seen


def test_the_passes_in_order():
    assert passes.NAMES == ("normalise", "place", "generate", "overlap", "verify")
    assert [p.name for p in passes.PASSES if p.lir] == ["generate", "overlap"]
    lines = passes.describe().splitlines()
    assert [line.split()[0] for line in lines] == list(passes.NAMES)
    assert all(len(line.split(None, 1)[1]) > 20 for line in lines)  # a line each says what


def test_each_pass_makes_its_own_thing():
    k, seen = lowered_with_passes(STAGED)
    assert [p.name for p, _, _ in seen] == list(passes.NAMES)
    outputs = {p.name: out for p, _, out in seen}
    assert isinstance(outputs["normalise"], hir.Block)
    assert isinstance(outputs["place"], placement.Plan)
    assert isinstance(outputs["generate"], lir.Kernel)
    # no wgmma here: `overlap` hands the kernel on as it is
    assert outputs["verify"] is outputs["overlap"] is outputs["generate"] is k


def test_normalise_binds_a_nested_reduction_to_a_tile_of_its_own():
    _, seen = lowered_with_passes(STAGED)
    p, lw, body = seen[0]
    text = p.text(lw, body)
    assert text.startswith("kernel k(X: ")
    temp = re.search(r"var (rowsum_\d+): tile<f32>\[16, 1\] = rowsum#\d+\(t\)", text)
    assert temp, text  # moved out of the sum, into a tile of its own
    assert f"(t + {temp.group(1)}: tile<f32>[16, 64])" in text


def test_every_decision_is_keyed_by_a_label_the_normalised_hir_prints():
    _, seen = lowered_with_passes(STAGED)
    (_, lw, body), (_, _, plan) = seen[0], seen[1]
    labels = {int(n) for n in re.findall(r"#(\d+)", seen[0][0].text(lw, body))}
    assert plan.vec and set(plan.vec) <= labels
    assert set(plan.layouts) | set(plan.stages) | set(plan.widened) <= labels
    text = seen[1][0].text(lw, plan)
    line = next(x for x in text.splitlines() if x.startswith("  vec: "))
    assert all(f"#{n}: " in line for n in plan.vec)


def test_the_chip_is_an_input_of_the_lowering():
    _, seen = lowered_with_passes(STAGED, chip="sm_80")
    assert {lw.chip for _, lw, _ in seen} == {"sm_80"}
    _, seen = lowered_with_passes(STAGED)
    assert seen[0][1].chip == "sm_90"  # the default keeps today's callers


def test_the_plan_prints_every_tile_and_buffer():
    _, seen = lowered_with_passes(STAGED)
    p, lw, plan = seen[1]
    text = p.text(lw, plan)
    assert text.splitlines()[0] == "plan k  // chip sm_90"
    lines = {line.split(":")[0].strip(): line for line in text.splitlines()}
    assert "shape=(16, 64) elem='f32' place='registers' vec=4 reason=" in lines["t"]
    (row,) = [line for name, line in lines.items() if name.startswith("rowsum_")]
    assert "shape=(16, 1) elem='f32' place='shared'" in row
    assert "regs=" not in row and "sym=" not in row
    (sym,) = [s for s in plan.tiles if s.name.startswith("rowsum_")]
    buffer = plan.tiles[sym].buffer
    assert f"buffer={buffer.name}" in row
    shared = text[text.index("  shared:") :]
    assert f"name={buffer.name!r} offset={buffer.offset} size={buffer.size}" in shared
    assert f"  smem: {plan.smem}" in text


def test_the_plan_text_shows_new_fields_without_a_change():
    @dataclasses.dataclass
    class Tile:
        sym: hir.Sym
        place: str
        regs: list | None = None
        swizzle: int = 128  # a field the printer has never heard of

    @dataclasses.dataclass
    class Plan:
        tiles: dict
        vec: dict
        rings: int = 2

    sym = hir.Sym("a", 1, "let", hir.Scalar("f32"))
    lw = type("Lw", (), {"k": type("K", (), {"name": "q"})(), "chip": "sm_90a"})()
    text = passes.plan_text(lw, Plan({sym: Tile(sym, "registers", [1, 2])}, {1: 4, 2: 8}))
    assert text == (
        "plan q  // chip sm_90a\n"
        "  tiles:\n"
        "    a: place='registers' swizzle=128\n"
        "  vec: {#1: 4, #2: 8}\n"
        "  rings: 2\n"
    )


def _broken(lw, made):
    """A `generate` that reads a register nobody writes."""
    add = lir.inst("add", (lir.Reg("a", "f32"),), (lir.Reg("b", "f32"),), type="f32")
    return lir.Kernel("k", (), lir.Block((add,)))


def test_under_phobos_verify_a_pass_that_breaks_lir_is_named_at_once(monkeypatch):
    ran = []
    later = passes.Pass("later", "runs after", lambda lw, made: ran.append(1), lambda lw, o: "")
    broken = dataclasses.replace(passes.PASSES[2], run=_broken)
    monkeypatch.setattr(passes, "PASSES", (*passes.PASSES[:2], broken, later))
    monkeypatch.setenv("PHOBOS_VERIFY", "1")
    with pytest.raises(LirError, match="read but never written"):
        lower_kernel(checked(STAGED))
    assert ran == []
    monkeypatch.setenv("PHOBOS_VERIFY", "0")
    lower_kernel(checked(STAGED))
    assert ran == [1]


def test_the_verify_pass_always_runs(monkeypatch):
    broken = dataclasses.replace(passes.PASSES[2], run=_broken)
    monkeypatch.setattr(passes, "PASSES", (*passes.PASSES[:2], broken, *passes.PASSES[3:]))
    monkeypatch.setenv("PHOBOS_VERIFY", "0")
    with pytest.raises(LirError):
        lower_kernel(checked(STAGED))


def test_a_refusal_ends_the_loop_after_the_passes_before_it():
    src = """
kernel k(A: tensor<f32>[M, N], B: tensor<f32>[M, N]) {
  var a = A[0 :+ 128, 0 :+ 64]
  var b = A[0 :+ 128, 0 :+ 64]
  var c: tile<f32>[128, 1] = a[0 :+ 128, 0 :+ 1]
  var d: tile<f32>[128, 1] = b[0 :+ 128, 0 :+ 1]
  B[0 :+ 128, 0 :+ 1] = c + d
}"""
    seen = []
    k, diags = lower_kernel(checked(src), after=lambda p, lw, out: seen.append(p.name))
    assert k is None and diags[0].code == "E0501"  # 64 KB of tiles: refused by `place`
    assert seen == ["normalise"]
