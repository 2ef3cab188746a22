"""`phobos-compile` to PTX and the launch contract: `-o K.ptx` writes `K.json` beside it,
`--chip`, `--all-variants`, compiling with no CUDA driver, `PHOBOS_DUMP` and `PHOBOS_LOG`."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from phobos.runtime.contract import Contract

ROOT = Path(__file__).resolve().parents[2]
SAXPY_PH = str(ROOT / "examples" / "saxpy.ph")
SAXPY_PY = str(ROOT / "examples" / "saxpy.py")
KERNELS = str(ROOT / "benchmarks" / "kernels.py")


def entries(ptx: str) -> list[str]:
    return re.findall(r"\.visible \.entry (\w+)\(", ptx)


@pytest.fixture(autouse=True)
def no_dump(monkeypatch):
    monkeypatch.delenv("PHOBOS_DUMP", raising=False)


@pytest.mark.parametrize("source", [SAXPY_PH, SAXPY_PY])
@pytest.mark.parametrize("flags", [[], ["--emit", "ptx"]])
def test_o_ptx_writes_the_contract_beside_it(compile_cli, tmp_path, source, flags):
    out = tmp_path / "out" / "K.ptx"
    out.parent.mkdir()
    ran = compile_cli([source, "-o", str(out), *flags])
    assert ran.status == 0, ran.err
    ptx = out.read_text()
    assert ".target sm_90" in ptx and entries(ptx) == ["saxpy"]
    contract = Contract.from_json((tmp_path / "out" / "K.json").read_text())
    (kernel,) = contract.kernels
    assert (kernel.name, kernel.entry, kernel.chip) == ("saxpy", "saxpy", "sm_90")
    assert kernel.variant == {"BLOCK": 16}
    assert [p.name for p in kernel.params] == ["x", "y", "out", "alpha", "N"]


def test_emit_ptx_and_json_print(compile_cli):
    ran = compile_cli([SAXPY_PH, "--emit", "ptx", "--chip", "sm_80"])
    assert ran.status == 0, ran.err
    assert ".target sm_80" in ran.out
    ran = compile_cli([SAXPY_PH, "--emit", "json", "--chip", "sm_90a"])
    assert ran.status == 0, ran.err
    assert Contract.from_json(ran.out).kernel("saxpy").chip == "sm_90a"


def test_an_unknown_chip_is_a_usage_error(compile_cli):
    ran = compile_cli([SAXPY_PH, "--emit", "ptx", "--chip", "sm_70"])
    assert ran.status == 2
    assert "sm_70" in ran.err and all(c in ran.err for c in ("sm_80", "sm_90", "sm_90a"))


def test_all_variants_name_each_entry_after_its_variant(compile_cli, tmp_path):
    out = tmp_path / "K.ptx"
    ran = compile_cli([SAXPY_PH, "--all-variants", "-o", str(out)])
    assert ran.status == 0, ran.err
    blocks = [2**i for i in range(4, 14)]  # `BLOCK in [16, 8192]`: the powers of two between
    assert entries(out.read_text()) == [f"saxpy__BLOCK_{b}" for b in blocks]
    contract = Contract.from_json((tmp_path / "K.json").read_text())
    got = [(k.entry, k.variant) for k in contract.kernels]
    assert got == [(f"saxpy__BLOCK_{b}", {"BLOCK": b}) for b in blocks]
    hir = compile_cli([SAXPY_PH, "--all-variants", "--emit", "hir"]).out
    assert "variant BLOCK=16" in hir and "variant BLOCK=8192" in hir


def test_a_kernel_not_lowered_yet_writes_nothing(compile_cli, tmp_path):
    src = tmp_path / "k.ph"
    src.write_text(
        "kernel k(A: tensor<f32>[M, K], B: tensor<f32>[K, N], C: tensor<f32>[M, N]) {\n"
        "  let a = A[0 :+ 16, :]\n"
        "  let b = B[:, 0 :+ 16]\n"
        "  C[0 :+ 16, 0 :+ 16] = dot(a, b)\n"
        "}\n"
    )
    out = tmp_path / "K.ptx"
    ran = compile_cli([str(src), "-o", str(out)])
    assert ran.status == 1
    assert "error[E0500]: a product's operand with an extent bound at launch" in ran.err
    assert not out.exists() and not (tmp_path / "K.json").exists()


def test_an_instruction_the_chip_lacks_is_e0590(compile_cli, tmp_path):
    src = tmp_path / "b.ph"
    src.write_text(
        "kernel k(x: tensor<bf16>[N], y: tensor<i32>[N]) {\n"
        "  let i = ctx.block.x * ctx.threads + ctx.thread\n"
        "  if i < N { x[i] = bf16(y[i]) }\n"
        "}\n"
    )
    ran = compile_cli([str(src), "--emit", "ptx", "--chip", "sm_80"])
    assert ran.status == 1
    assert "error[E0590]" in ran.err and f"{src}:3:" in ran.err
    assert compile_cli([str(src), "--emit", "ptx", "--chip", "sm_90"]).status == 0


def _python(code: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        timeout=120,
    )


def test_compiling_needs_no_cuda_driver(tmp_path):
    out = tmp_path / "K.ptx"
    ran = _python(
        "import sys\n"
        "import phobos.runtime.cuda as cuda\n"
        "cuda.LIBRARY = 'libcuda-absent.so.0'\n"
        "from phobos.cli.compile import main\n"
        f"status = main([{SAXPY_PY!r}, '-o', {str(out)!r}, '--chip', 'sm_80', '--check-races'])\n"
        "assert cuda._LIB is None\n"
        "sys.exit(status)\n"
    )
    assert ran.returncode == 0, ran.stderr
    assert ".target sm_80" in out.read_text()
    # Nothing on the compile path imports the driver binding at all.
    ran = _python(
        "import sys\n"
        "from phobos.cli.compile import main\n"
        f"assert main([{SAXPY_PH!r}, '--emit', 'json']) == 0\n"
        "assert 'phobos.runtime.cuda' not in sys.modules\n"
    )
    assert ran.returncode == 0, ran.stderr


def test_phobos_dump_writes_every_stage_per_kernel_and_variant(compile_cli, tmp_path, monkeypatch):
    folder = tmp_path / "dump"
    monkeypatch.setenv("PHOBOS_DUMP", str(folder))
    ran = compile_cli([SAXPY_PH, "--all-variants", "--emit", "json"])
    assert ran.status == 0, ran.err
    names = set(os.listdir(folder))
    assert "saxpy.ast" in names
    for key in ("BLOCK=16", "BLOCK=8192"):
        for artifact in ("hir", "lir", "ptx", "json"):
            assert f"saxpy.{key}.{artifact}" in names, sorted(names)
    assert "variant BLOCK=8192" in (folder / "saxpy.BLOCK=8192.hir").read_text()
    assert entries((folder / "saxpy.BLOCK=8192.ptx").read_text()) == ["saxpy__BLOCK_8192"]
    contract = Contract.from_json((folder / "saxpy.BLOCK=16.json").read_text())
    assert contract.kernels[0].entry == "saxpy__BLOCK_16"
    assert len(entries((folder / "saxpy.ph.ptx").read_text())) == 10  # the whole module too


def test_the_python_compile_path_dumps_too(tmp_path, monkeypatch):
    from benchmarks import kernels

    folder = tmp_path / "dump"
    monkeypatch.setenv("PHOBOS_DUMP", str(folder))
    built = kernels.vector_add.compile(chip="sm_80", variant={"BLOCK": 1024})
    for artifact in ("hir", "lir", "ptx", "json"):
        assert (folder / f"vector_add.BLOCK=1024.{artifact}").is_file()
    assert (folder / "vector_add.BLOCK=1024.ptx").read_text() == built.ptx


def test_phobos_log_debug_says_why_with_the_kernel_and_line():
    code = f"from phobos.cli.compile import main; main([{KERNELS!r}, '--emit', 'lir'])"
    quiet = _python(code, {"PHOBOS_LOG": ""})
    assert quiet.returncode == 0, quiet.stderr
    assert "phobos.lower" not in quiet.stderr
    loud = _python(code, {"PHOBOS_LOG": "debug"})
    assert loud.returncode == 0, loud.stderr
    lines = [line for line in loud.stderr.splitlines() if line.startswith("phobos.lower: ")]
    assert lines, loud.stderr
    for line in lines:
        assert re.match(r"phobos\.lower: \w+(\[[\w=,]+\])? \S*kernels\.py:\d+: ", line), line
    text = "\n".join(lines)
    assert re.search(r"softmax_rows\[BLOCK=1024,T=256\] \S*kernels\.py:27: .*rowmax", text), text
    assert "vector width" in text and "tile `x`" in text
