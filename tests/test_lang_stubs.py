"""`phobos/lang/__init__.pyi` is generated from phobos/names.py and must not lag it."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import phobos.lang as ph
from phobos.lang import stubs
from phobos.names import BUILTINS, all_names

REPO = Path(__file__).resolve().parent.parent


def _stub_names(text: str) -> set[str]:
    names = set()
    for node in ast.parse(text).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def test_checked_in_stub_is_up_to_date():
    checked_in = stubs.STUB_PATH.read_text(encoding="utf-8")
    assert checked_in == stubs.render_stub(), "run `python -m phobos.lang.stubs`"


def test_check_command_agrees():
    result = subprocess.run(
        [sys.executable, "-m", "phobos.lang.stubs", "--check"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr


def test_check_fails_when_the_stub_lags(tmp_path, monkeypatch):
    stale = tmp_path / "__init__.pyi"
    stale.write_text(stubs.render_stub().replace("def exp(", "def old_exp("), encoding="utf-8")
    monkeypatch.setattr(stubs, "STUB_PATH", stale)
    assert stubs.main(["--check"]) == 1
    assert stubs.main([]) == 0
    assert stubs.main(["--check"]) == 0
    assert "def exp(x: Any) -> Any:" in stale.read_text(encoding="utf-8")


def test_every_name_is_in_the_stub_and_in_the_module():
    declared = _stub_names(stubs.STUB_PATH.read_text(encoding="utf-8"))
    for name in all_names():
        assert name in declared, f"`{name}` missing from lang.pyi"
        assert hasattr(ph, name), f"`{name}` missing from phobos.lang"
    for name in ("Kernel", "Fn", "OutsideKernelError", "KernelCompileError"):
        assert name in declared and hasattr(ph, name)


def test_builtin_signatures_come_from_the_table():
    text = stubs.render_stub()
    assert "def reduce(x: Any, f: Any, over: Any, width: Any = ...) -> Any:" in text
    assert "def store(run: Any, *values: Any) -> Any:" in text
    assert f'    """{BUILTINS["dot"][1]}"""' in text


def test_stub_is_valid_python():
    compile(stubs.render_stub(), "__init__.pyi", "exec")
