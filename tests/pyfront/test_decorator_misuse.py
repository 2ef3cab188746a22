"""A def the decorators cannot take (`@ph.fn` over `@ph.kernel`, an `async def`) raises
the translation's own diagnostic at the decorator, as a compile error, when Python runs
the module: not an `OSError` or a `TypeError` from inside Phobos."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from phobos.lang import KernelCompileError

REPO = Path(__file__).resolve().parents[2]
HEAD = "from __future__ import annotations\nimport phobos.lang as ph\n\n"

CASES = {
    "fn over kernel": (
        "@ph.fn\n@ph.kernel\ndef k(x: ph.tensor[ph.f32][N]):\n    x[0:+4] = x[0:+4]\n",
        "error[E0115]: a def is either a `@ph.kernel` or a `@ph.fn`",
        5,
    ),
    "async kernel": (
        "@ph.kernel\nasync def k(x: ph.tensor[ph.f32][N]):\n    x[0:+4] = x[0:+4]\n",
        "error[E0115]: a `@ph.kernel` cannot be `async`",
        4,
    ),
    "async fn": (
        "@ph.fn\nasync def f(x):\n    return x\n",
        "error[E0115]: a `@ph.fn` cannot be `async`",
        4,
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_running_the_module_reports_the_decorator(name, tmp_path: Path) -> None:
    body, message, line = CASES[name]
    path = tmp_path / "kernels.py"
    path.write_text(HEAD + body)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("PHOBOS_TRACEBACK", None)
    ran = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, env=env, timeout=120
    )
    assert ran.returncode == 1
    assert "Traceback" not in ran.stderr and "OSError" not in ran.stderr, ran.stderr
    assert message in ran.stderr, ran.stderr
    assert f"--> {path}:{line}:1" in ran.stderr


def test_importing_it_raises_the_compile_error(tmp_path: Path, monkeypatch) -> None:
    body, _, line = CASES["async kernel"]
    (tmp_path / "async_kernels.py").write_text(HEAD + body)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("async_kernels", None)
    with pytest.raises(KernelCompileError) as info:
        __import__("async_kernels")
    codes = [d.code for d in info.value.diagnostics]
    assert codes == ["E0115"], codes


def test_a_non_function_is_still_a_type_error() -> None:
    import phobos.lang as ph

    with pytest.raises(TypeError, match="applies to a plain def"):
        ph.kernel(len)
