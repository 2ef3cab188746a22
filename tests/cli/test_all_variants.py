"""`phobos-compile --all-variants`: every variant compiles in one run; one that fails
(too much shared memory, a race under `--check-races`) is reported with a warning
naming it and left out of the PTX and the contract, while the others are emitted. A
kernel none of whose variants compiles is an error."""

import re
from pathlib import Path

import pytest

from phobos.runtime.contract import Contract


@pytest.fixture(autouse=True)
def no_dump(monkeypatch):
    monkeypatch.delenv("PHOBOS_DUMP", raising=False)


# `t` is read per point, so it lives in shared memory: T rows of 512 bytes.
STAGED = """
@autotune(T in [{choices}])
kernel stage(X: tensor<f32>[M, 128], Y: tensor<f32>[M, 128]) {{
  let r = ctx.block.x * T
  var t: tile<f32>[T, 128] = X[r :+ T, 0 :+ 128]
  barrier()
  for q in range(0, T * 128 / ctx.threads) {{
    let e = q * ctx.threads + ctx.thread
    let v = t[e / 128, 127 - e % 128]
    if r + e / 128 < M {{ Y[r + e / 128, e % 128] = v }}
  }}
}}
"""


def entries(ptx: str) -> list[str]:
    return re.findall(r"\.entry (\w+)\(", ptx)


def write(tmp_path, choices: str):
    src = tmp_path / "stage.ph"
    src.write_text(STAGED.format(choices=choices))
    return str(src)


def test_variants_over_shared_memory_are_left_out(compile_cli, tmp_path):
    out = tmp_path / "K.ptx"
    ran = compile_cli([write(tmp_path, "16, 32, 128, 256"), "--all-variants", "-o", str(out)])
    assert ran.status == 0, ran.err
    for t in (128, 256):
        assert f"warning: variant T={t} of `stage` is left out: " in ran.err, ran.err
    assert "error" not in ran.err.replace("error[E0501]", "")  # the original as a note
    assert "note: error[E0501]: the kernel's tiles need 65536 bytes" in ran.err, ran.err
    assert entries(out.read_text()) == ["stage__T_16", "stage__T_32"]
    contract = Contract.from_json((tmp_path / "K.json").read_text())
    assert [k.variant for k in contract.kernels] == [{"T": 16}, {"T": 32}]


def test_a_kernel_with_no_variant_left_is_an_error(compile_cli, tmp_path):
    out = tmp_path / "K.ptx"
    ran = compile_cli([write(tmp_path, "128, 256"), "--all-variants", "-o", str(out)])
    assert ran.status == 1
    assert "error[E0501]" in ran.err and "left out" not in ran.err
    assert not out.exists()


def test_without_all_variants_the_first_choice_alone_is_compiled(compile_cli, tmp_path):
    ran = compile_cli([write(tmp_path, "128, 256"), "--emit", "ptx"])
    assert ran.status == 1 and "error[E0501]" in ran.err


def test_a_racing_variant_is_left_out_under_check_races(compile_cli, tmp_path, monkeypatch):
    # The lowering puts barriers where threads meet, so the race is seeded in the check.
    from phobos import races
    from phobos.diagnostics.diagnostic import Diagnostic

    real = races.check_races

    def seeded(checked, lowered, seed=0):
        if dict(checked.variant).get("T") == 32:
            return [Diagnostic.error(races.RACE, "a seeded race on `t`", None)]
        return real(checked, lowered, seed)

    monkeypatch.setattr(races, "check_races", seeded)
    ran = compile_cli([write(tmp_path, "16, 32"), "--all-variants", "--check-races",
                       "--emit", "ptx"])  # fmt: skip
    assert ran.status == 0, ran.err
    assert "warning: variant T=32 of `stage` is left out: a seeded race on `t`" in ran.err
    assert entries(ran.out) == ["stage__T_16"]


# 256 threads write `t[0, thread % W]`: W=128 races, W=16384 needs 64 KB of shared memory.
SPILL_PY = (Path(__file__).resolve().parents[1] / "kernels" / "spill.py").read_text()


@pytest.mark.parametrize("origin", [False, True])
def test_the_variants_compile_alike_in_one_process_and_in_several(compile_cli, tmp_path, origin):
    py = tmp_path / "spill.py"
    py.write_text(SPILL_PY)
    args = [str(py)]
    if origin:  # the `.ph` it spells, reported at the Python lines through the span map
        assert compile_cli([str(py), "--emit", "ph", "-o", str(tmp_path / "spill.ph")]).status == 0
        args = [str(tmp_path / "spill.ph"), "--origin", str(tmp_path / "spill.ph.map")]
    outputs = []
    for jobs in ("1", "2"):
        out = tmp_path / f"K{jobs}.ptx"
        ran = compile_cli([*args, "--all-variants", "--check-races", "--jobs", jobs,
                           "-o", str(out)])  # fmt: skip
        assert ran.status == 0, ran.err
        outputs.append((out.read_text(), (tmp_path / f"K{jobs}.json").read_text(), ran.err))
    assert outputs[0] == outputs[1]
    ptx, _, err = outputs[0]
    assert entries(ptx) == ["spill__W_256", "spill__W_1024"]
    assert "warning: variant W=128 of `spill` is left out: data race (write/write)" in err
    assert "warning: variant W=16384 of `spill` is left out: the kernel's tiles need 65536" in err
    assert f"{py}:11:5" in err, err  # the racing write, in the Python the user wrote


def test_the_spans_of_a_worker_point_into_the_callers_file(tmp_path):
    from phobos import driver

    py = tmp_path / "spill.py"
    py.write_text(SPILL_PY)
    source = driver.read_source(str(py))
    options = driver.Options(all_variants=True, check_races=True, jobs=2)
    result = driver.compile_source(source, "lir", options=options)
    warnings = [d for d in result.diagnostics if d.severity == "warning"]
    assert len(warnings) == 2
    assert all(d.primary.span.source is source for d in warnings)


def test_jobs_is_a_count_of_processes(compile_cli, tmp_path):
    ran = compile_cli([write(tmp_path, "16, 32"), "--all-variants", "--jobs", "0"])
    assert ran.status == 2
    assert "`0` is not a number of processes (1 or more)" in ran.err
