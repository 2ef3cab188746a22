"""`phobos-compile --check-races`: clean on the kernels that lower, a seeded race (the
barriers of the lowered softmax removed) reported at the user's line, faults too."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from phobos import build, races
from phobos.lower import lir
from phobos.sema.check import check_kernel

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "benchmarks" / "kernels.py"


@pytest.fixture(autouse=True)
def no_dump(monkeypatch):
    monkeypatch.delenv("PHOBOS_DUMP", raising=False)


@pytest.mark.parametrize(
    "path", ["examples/saxpy.ph", "examples/saxpy.py", "benchmarks/kernels.py"]
)
def test_the_kernels_that_lower_are_race_free(compile_cli, path):
    ran = compile_cli([str(ROOT / path), "--check-races", "--all-variants", "--emit", "lir"])
    assert ran.status == 0, ran.err
    # A variant over the chip's shared memory is left out with a warning, no more.
    heads = [
        ln
        for ln in ran.err.splitlines()
        if ln.startswith(("warning:", "error")) and "emitted" not in ln
    ]
    assert all("is left out: the kernel's tiles need" in ln for ln in heads), ran.err


def test_check_races_runs_the_lowering_whatever_is_emitted(compile_cli, tmp_path):
    src = tmp_path / "f.ph"
    src.write_text(
        "kernel k(x: tensor<f32>[N]) {\n"
        "  let i = ctx.block.x * ctx.threads + ctx.thread\n"
        "  x[i] = 2.0 * x[i]\n"
        "}\n"
    )
    assert compile_cli([str(src), "--emit", "ph"]).status == 0
    ran = compile_cli([str(src), "--emit", "ph", "--check-races"])
    assert ran.status == 1
    assert "error[E0910]: `k` faulted in the race check's run" in ran.err
    assert f"{src}:3:3" in ran.err and "past the end of `x`" in ran.err
    assert ran.out == ""


def test_a_fault_is_reported_at_the_python_line_through_origin(compile_cli, tmp_path):
    py = tmp_path / "k.py"
    py.write_text(
        "import phobos.lang as ph\n"
        "\n"
        "\n"
        "@ph.kernel\n"
        "def k(x: ph.tensor[ph.f32][N]):\n"
        "    i: ph.let = ph.ctx.block.x * ph.ctx.threads + ph.ctx.thread\n"
        "    x[i] = 2.0 * x[i]\n"
    )
    ph = tmp_path / "k.ph"
    assert compile_cli([str(py), "--emit", "ph", "-o", str(ph)]).status == 0
    ran = compile_cli([str(ph), "--origin", f"{ph}.map", "--check-races", "--emit", "lir"])
    assert ran.status == 1
    assert f"{py}:7:5" in ran.err, ran.err


def test_a_kernel_not_lowered_is_reported_and_skipped(compile_cli, tmp_path):
    ph = tmp_path / "k.ph"
    ph.write_text(
        "kernel k(A: tensor<f32>[M, K], B: tensor<f32>[K, N], C: tensor<f32>[M, N]) {\n"
        "  let a = A[0 :+ 16, :]\n"
        "  let b = B[:, 0 :+ 16]\n"
        "  C[0 :+ 16, 0 :+ 16] = dot(a, b)\n"
        "}\n"
    )
    ran = compile_cli([str(ph), "--check-races", "--emit", "lir"])
    assert ran.status == 1
    assert "E0500" in ran.err and "E0909" not in ran.err and "E0910" not in ran.err


def _without_barriers(block: lir.Block) -> lir.Block:
    items = []
    for item in block.items:
        if isinstance(item, lir.Inst) and item.op == "bar":
            continue
        inner = {
            name: _without_barriers(getattr(item, name))
            for name in ("then", "orelse", "body")
            if isinstance(getattr(item, name, None), lir.Block)
        }
        items.append(dataclasses.replace(item, **inner) if inner else item)
    return dataclasses.replace(block, items=tuple(items))


def test_a_seeded_race_is_found_at_the_users_line():
    from benchmarks import kernels

    checked = check_kernel(kernels.softmax_rows.program, "softmax_rows")[0]
    lowered = build.lower(checked)
    assert races.check_races(checked, lowered) == []
    seeded = dataclasses.replace(lowered, body=_without_barriers(lowered.body))
    assert "bar" in lir.print_kernel(lowered) and " bar" not in lir.print_kernel(seeded)
    found = races.check_races(checked, seeded)
    assert found and all(d.code == "E0909" for d in found)
    source = KERNELS.read_text().splitlines()
    lines = set()
    for diag in found:
        span = diag.primary.span
        assert span.source.name.endswith("kernels.py")
        line, _ = span.source.line_col(span.start)
        lines.add(line)
        assert diag.secondary, diag
        assert "data race" in diag.message and diag.help
    # The reductions exchange partial results through shared memory.
    assert {source[n - 1].split("=")[-1].strip() for n in lines} >= {"ph.rowmax(x)"}


def test_inputs_too_large_to_allocate_are_reported_not_allocated(compile_cli, tmp_path):
    # 68 rows of 2^32 floats: a terabyte the check once tried to allocate.
    src = tmp_path / "huge.ph"
    src.write_text("kernel k(A: tensor<f32>[M, 4294967296]) { }\n")
    ran = compile_cli([str(src), "--check-races", "--emit", "lir"])
    assert ran.status == 0, ran.err
    assert "warning[E0912]: `k` was not race-checked: its argument `A` of shape" in ran.err
    assert "past the check's 256 MiB of inputs" in ran.err
    assert "huge.ph:1:1" in ran.err


def test_a_grid_barrier_kernel_is_race_checked_with_its_blocks_side_by_side(compile_cli):
    # tests/kernels/two_phase.ph waits at `grid_barrier` for every block: run one block
    # after another, the first spun until the loop limit and a false "looks endless".
    ran = compile_cli([str(ROOT / "tests/kernels/two_phase.ph"), "--check-races", "--emit", "lir"])
    assert ran.status == 0, ran.err
    assert "E0910" not in ran.err and "E0909" not in ran.err, ran.err
