"""`ph2py`: the Python spelling on stdout, with phobos-compile's diagnostics and statuses."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest


@pytest.fixture
def workdir(tmp_path, monkeypatch, stub_front_ends):
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def fake_pyprinter(monkeypatch):
    import phobos.syntax

    class Fake:
        PySpellingError = type("PySpellingError", (ValueError,), {})

        @staticmethod
        def print_python(program):
            return f"# {len(program.items)} items\n"

    monkeypatch.setitem(sys.modules, "phobos.syntax.pyprinter", Fake)
    monkeypatch.setattr(phobos.syntax, "pyprinter", Fake, raising=False)


def test_prints_the_python_spelling(workdir, ph2py_cli, fake_pyprinter):
    Path("k.ph").write_text("kernel k() {}\n")
    ran = ph2py_cli(["k.ph"])
    assert (ran.status, ran.out, ran.err) == (0, "# 0 items\n", "")
    assert ph2py_cli(["k.ph", "-o", "k_out.py"]).status == 0
    assert Path("k_out.py").read_text() == "# 0 items\n"


def test_errors_exit_1(workdir, ph2py_cli, fake_pyprinter):
    Path("k.ph").write_text("oops\n")
    ran = ph2py_cli(["k.ph"])
    assert ran.status == 1 and ran.out == ""
    assert " --> k.ph:1:1" in ran.err
    assert "error: aborting due to 1 previous error" in ran.err
    assert ran.err.endswith("try `phobos-compile --explain E0901`.\n")


@pytest.mark.parametrize(
    "argv, start",
    [
        (["k.py"], "error[E0902]: `ph2py` reads Phobos text, but `k.py` is not a `.ph` file"),
        (["gone.ph"], "error[E0901]: cannot read `gone.ph`"),
        ([], "error: no input files"),
        (["--emit", "ast", "k.ph"], "error: unrecognized arguments: --emit"),
    ],
)
def test_usage_errors(workdir, ph2py_cli, argv, start):
    Path("k.py").write_text("")
    ran = ph2py_cli(argv)
    assert ran.status == 2
    assert ran.err.startswith(start), ran.err


def test_internal_error(workdir, ph2py_cli, monkeypatch):
    from phobos import driver

    def boom(program, unit):
        raise RuntimeError("bad")

    monkeypatch.setitem(driver.STAGES, "py", driver.Stage("ast", boom))
    Path("k.ph").write_text("")
    ran = ph2py_cli(["k.ph"])
    assert ran.status == 101
    assert ran.err.startswith("error: internal compiler error: RuntimeError: bad\n")


def test_real_pyprinter_on_an_example(ph2py_cli):
    pytest.importorskip("phobos.syntax.pyprinter")
    pytest.importorskip("phobos.syntax.parser")
    example = Path(__file__).resolve().parents[2] / "examples" / "saxpy.ph"
    if not example.exists():
        pytest.skip("no example")
    ran = ph2py_cli([str(example)])
    assert ran.status == 0, ran.err
    assert "@ph.kernel" in ran.out
    compile(ran.out, "saxpy.py", "exec")  # it is Python


def test_a_program_python_cannot_spell_is_a_diagnostic(tmp_path, monkeypatch, ph2py_cli):
    monkeypatch.chdir(tmp_path)
    Path("k.ph").write_text("kernel k(A: tensor<f32>[N]) {\n  let lambda = 1\n}\n")
    ran = ph2py_cli(["k.ph"])
    assert ran.status == 1
    assert "error[E0907]: `lambda` is a Python keyword" in ran.err
    assert " --> k.ph:2:7" in ran.err
    assert "internal compiler error" not in ran.err
