"""A module of kernels without `from __future__ import annotations`: a Phobos error at
the kernel's `def`, raised while Python runs the module, in place of a `NameError`."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from phobos.lang import KernelCompileError

REPO = Path(__file__).resolve().parents[2]

WITHOUT = """\
import phobos.lang as ph


@ph.kernel
def k(A: ph.tensor[ph.f16][R, D]):
    A[0, 0] = ph.f16(1.0)
"""


def _run(path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("PHOBOS_TRACEBACK", None)
    return subprocess.run(
        [sys.executable, *args, str(path)], capture_output=True, text=True, env=env, timeout=120
    )


def test_running_the_module_reports_the_missing_import_at_the_def(tmp_path: Path) -> None:
    path = tmp_path / "kernels.py"
    path.write_text(WITHOUT)
    ran = _run(path)
    assert ran.returncode == 1
    assert "NameError" not in ran.stderr and "Traceback" not in ran.stderr, ran.stderr
    assert "error[E0123]: a module of kernels needs `from __future__ import annotations`" in (
        ran.stderr
    )
    assert f"--> {path}:5:5" in ran.stderr  # the kernel's name, on the `def` line
    assert "`R` is not a name Python knows" in ran.stderr


def test_importing_it_raises_the_compile_error(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "nofuture_kernels.py").write_text(WITHOUT)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("nofuture_kernels", None)
    with pytest.raises(KernelCompileError) as info:
        __import__("nofuture_kernels")
    (diag,) = info.value.diagnostics
    assert diag.code == "E0123"
    assert diag.span.text == "k"
    assert [s.span.text for s in diag.secondary] == ["R"]


def test_with_the_import_the_module_runs(tmp_path: Path) -> None:
    path = tmp_path / "kernels.py"
    path.write_text("from __future__ import annotations\n\n" + WITHOUT + "print(k.name)\n")
    ran = _run(path)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "k"


def test_annotations_python_can_evaluate_need_no_import(tmp_path: Path) -> None:
    # Fixed extents and scalars only: Python evaluates them without a `NameError`.
    path = tmp_path / "kernels.py"
    path.write_text(
        textwrap.dedent(
            """\
            import phobos.lang as ph


            @ph.kernel
            def k(A: ph.tensor[ph.f32][64], x: ph.f32):
                A[0] = x

            print(k.name)
            """
        )
    )
    ran = _run(path)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "k"
