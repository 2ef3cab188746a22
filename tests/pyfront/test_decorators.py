"""`@ph.kernel` and `@ph.fn` on a real module, written to disk and imported."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

import phobos.lang as ph
from phobos.diagnostics import CompileError
from phobos.source import SourceFile
from phobos.syntax import ast
from phobos.syntax.parser import parse

REPO = Path(__file__).resolve().parents[2]

GOOD = """\
from __future__ import annotations

import phobos.lang as ph


@ph.fn
def twice(a):
    return a + a


@ph.kernel(key=("N",))
@ph.autotune(BLOCK=[16, 256])
def saxpy(x: ph.tensor[ph.f32][N], y: ph.tensor[ph.f32][N], alpha: ph.f32):
    \"\"\"y = alpha * x + y, a block of BLOCK elements per CTA.\"\"\"
    base: ph.let = ph.ctx.block.x * BLOCK
    y[base:+BLOCK] = twice(alpha) * x[base:+BLOCK] + y[base:+BLOCK]


@ph.kernel
def other(x: ph.tensor[ph.f32][N]):
    x[0] = 1.0
"""


def _import(tmp_path: Path, text: str):
    name = f"phobos_test_{uuid.uuid4().hex}"
    path = tmp_path / f"{name}.py"
    path.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(name, None)
    return module, path


def test_kernel_object(tmp_path):
    module, path = _import(tmp_path, GOOD)
    k = module.saxpy
    assert isinstance(k, ph.Kernel)
    assert k.name == "saxpy"
    assert k.key == ("N",)
    assert k.__doc__.startswith("y = alpha")
    assert isinstance(k.ast, ast.Kernel) and k.ast.name.id == "saxpy"
    # The module's fns and this kernel, not the other kernel.
    assert [item.name.id for item in k.program.items] == ["twice", "saxpy"]
    # Spans are lines of the real file.
    line, _ = k.ast.name.span.source.line_col(k.ast.name.span.start)
    assert line == 13
    assert k.ast.name.span.source.name == str(path)


def test_kernel_source_parses_back_to_the_same_program(tmp_path):
    module, _ = _import(tmp_path, GOOD)
    text = module.saxpy.source
    assert "kernel saxpy(" in text and "@autotune(BLOCK in [16, 256])" in text
    assert "fn twice(a)" in text
    program, diags = parse(SourceFile("back.ph", text))
    assert diags == []
    assert program == module.saxpy.program


def test_fn_object(tmp_path):
    module, _ = _import(tmp_path, GOOD)
    f = module.twice
    assert isinstance(f, ph.Fn)
    assert f.name == "twice" and f.uses is None
    assert isinstance(f.ast, ast.Function)
    assert "fn twice(a) = a + a" in f.source
    with pytest.raises(TypeError, match="only inside a @ph.kernel"):
        f(1)


def test_fn_uses(tmp_path):
    text = 'import phobos.lang as ph\n\n@ph.fn(uses=("W",))\ndef store(i):\n    W[i] = 0\n'
    module, _ = _import(tmp_path, text)
    assert module.store.uses == ("W",)
    assert module.store.ast.uses == ("W",)


def test_a_launch_binds_its_arguments(tmp_path):
    module, _ = _import(tmp_path, GOOD)
    launcher = module.saxpy[(4,)]
    with pytest.raises(TypeError, match="argument `x` is an int"):
        launcher(1, 2, 3.0)
    with pytest.raises(TypeError, match=r"saxpy\[grid\]"):
        module.saxpy(1, 2, 3.0)


BAD = """\
import phobos.lang as ph


@ph.kernel
def bad(x: ph.f32):
    y: ph.let = x ** 2
    z: ph.let = x if x else 0.0
"""


def test_compile_error_carries_the_diagnostics(tmp_path):
    with pytest.raises(CompileError) as info:
        _import(tmp_path, BAD)
    error = info.value
    assert [d.code for d in error.diagnostics] == ["E0101", "E0102"]
    report = str(error)
    assert "error[E0101]: `**` is not an operator in Phobos" in report
    assert "error[E0102]" in report
    assert ":6:" in report  # the Python line of `**`


def test_errors_of_other_kernels_are_theirs(tmp_path):
    text = """\
from __future__ import annotations

import phobos.lang as ph

def make_bad():
    @ph.kernel
    def bad(x: ph.f32):
        y: ph.let = x ** 2
    return bad

@ph.kernel
def good(x: ph.tensor[ph.f32][N]):
    x[0] = 1.0
"""
    module, _ = _import(tmp_path, text)
    assert module.good.name == "good"
    with pytest.raises(CompileError):
        module.make_bad()


def test_kernels_defined_in_a_function_see_the_fns_around_them(tmp_path):
    text = """\
from __future__ import annotations

import phobos.lang as ph

@ph.fn
def one():
    return 1

def make():
    @ph.fn
    def two():
        return 2

    @ph.kernel
    def k(x: ph.tensor[ph.i32][N]):
        x[0] = one() + two()

    return k

def elsewhere():
    @ph.fn
    def three():
        return 3
"""
    module, _ = _import(tmp_path, text)
    k = module.make()
    assert [item.name.id for item in k.program.items] == ["one", "two", "k"]


def test_builtins_outside_a_kernel_say_so():
    with pytest.raises(ph.OutsideKernelError, match=r"`ph.exp` means something only inside"):
        ph.exp(1.0)
    with pytest.raises(ph.OutsideKernelError):
        ph.f32(1)
    with pytest.raises(ph.OutsideKernelError):
        ph.unroll(2, range(4))


def test_attributes_return_what_they_decorate():
    def f():
        pass

    assert ph.pipeline(f) is f
    assert ph.autotune(X=[32, 256])(f) is f
    assert ph.launch(256)(f) is f
    assert ph.tensorcore("wmma")(f) is f


def test_placeholders_read_like_their_spelling():
    assert repr(ph.tensor[ph.f16]["M", 64]) == "ph.tensor[ph.f16]['M', 64]"
    assert repr(ph.ctx.block.x) == "ph.ctx.block.x"
    assert repr(ph.let[ph.f32]) == "ph.let[ph.f32]"


def _run(script: str, **env) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": str(REPO), **env}
    return subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=environment,
        cwd=str(REPO),
        timeout=60,
    )


def test_uncaught_compile_error_prints_only_the_report(tmp_path):
    path = tmp_path / "badmod.py"
    path.write_text(BAD, encoding="utf-8")
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        import badmod
        """
    )
    result = _run(script)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "error[E0101]" in result.stderr
    traced = _run(script, PHOBOS_TRACEBACK="1")
    assert "Traceback" in traced.stderr and "error[E0101]" in traced.stderr


def test_other_exceptions_keep_their_traceback():
    result = _run("import phobos.lang\nraise ValueError('plain')")
    assert "Traceback" in result.stderr and "ValueError: plain" in result.stderr
