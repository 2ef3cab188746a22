"""An interpreter fault reads as a compile error: at the kernel's line, without the
interpreter's frames; a runaway loop stops within its time budget, at the loop."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from phobos.diagnostics import CompileError
from phobos.diagnostics.render import render_human
from phobos.interp import InterpError, run_kernel
from phobos.interp.tiles import LOOP_SECONDS, LOOP_SECONDS_VAR, loop_seconds
from phobos.sema.check import check_kernel
from phobos.source import SourceFile
from phobos.syntax.parser import parse

REPO = Path(__file__).resolve().parents[2]

LAUNCH = """\
from __future__ import annotations

import numpy as np
import phobos.lang as ph


@ph.kernel
@ph.launch(32)
def k(A: ph.tensor[ph.f32][N], out: ph.tensor[ph.f32][N]):
    i: ph.let = ph.ctx.block.x
    out[i] = A[i + 100]


A = np.zeros(8, dtype=np.float32)
out = np.zeros(8, dtype=np.float32)
k[(8,)](A, out)
"""

ENDLESS = """
kernel k(A: tensor<i32>[N]) {
  var n: i32 = 0
  while A[0] == 0 {
    n += 1
  }
  A[1] = n
}"""


def checked(source: str):
    program, diags = parse(SourceFile("endless.ph", source))
    assert not diags, diags
    kernel, diags = check_kernel(program, "k")
    assert kernel is not None, diags
    return kernel


def test_an_uncaught_fault_prints_like_a_compile_error(tmp_path: Path) -> None:
    path = tmp_path / "oob.py"
    path.write_text(LAUNCH)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("PHOBOS_TRACEBACK", None)
    ran = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, env=env, timeout=120
    )
    assert ran.returncode == 1
    assert "Traceback" not in ran.stderr and "tiles.py" not in ran.stderr, ran.stderr
    lines = ran.stderr.splitlines()
    assert lines[0] == "error[E0911]: index [100] is outside the [8] tensor (thread 0)"
    assert lines[1].endswith(f"{path}:11:14")  # at the read `A[i + 100]`, not the statement
    assert "    out[i] = A[i + 100]" in ran.stderr
    assert "^^^^^^^^^^" in ran.stderr


def test_the_error_carries_its_diagnostic() -> None:
    err = InterpError("integer division by zero")
    assert isinstance(err, CompileError)
    (diag,) = err.diagnostics
    assert (diag.code, diag.message, diag.primary) == ("E0911", "integer division by zero", None)


def test_a_runaway_loop_stops_within_its_budget_at_the_loop_line() -> None:
    a = np.zeros(4, np.int32)
    start = time.monotonic()
    with pytest.raises(InterpError) as info:
        run_kernel(checked(ENDLESS), (1,), {"A": a}, max_iterations=10**9, max_seconds=0.3)
    assert time.monotonic() - start < 20
    err = info.value
    assert "did not finish after 0.3 seconds" in err.message
    assert f"raise the limit with `{LOOP_SECONDS_VAR}`" in err.message
    assert err.span.text == "while A[0] == 0 {"  # the loop's header line, not its body
    shown = render_human(err.diagnostics)
    assert "endless.ph:4:3" in shown


def test_the_budget_is_read_from_the_environment(monkeypatch) -> None:
    monkeypatch.delenv(LOOP_SECONDS_VAR, raising=False)
    assert loop_seconds() == LOOP_SECONDS == 10.0
    monkeypatch.setenv(LOOP_SECONDS_VAR, "0.25")
    assert loop_seconds() == 0.25
    with pytest.raises(InterpError) as info:
        run_kernel(checked(ENDLESS), (1,), {"A": np.zeros(4, np.int32)}, max_iterations=10**9)
    assert "0.25 seconds" in info.value.message
    for bad in ("0", "-1", "soon"):
        monkeypatch.setenv(LOOP_SECONDS_VAR, bad)
        with pytest.raises(InterpError, match=f"`{LOOP_SECONDS_VAR}` is `{bad}`"):
            loop_seconds()
