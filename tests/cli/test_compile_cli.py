"""`phobos-compile`: outputs, diagnostics on stderr, and every exit status."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from phobos import driver, spanmap
from phobos.source import SourceFile

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def workdir(tmp_path, monkeypatch, stub_front_ends):
    monkeypatch.chdir(tmp_path)
    Path("ok.ph").write_text("kernel k() {\n}\n")
    Path("bad.ph").write_text("kernel k() {\n  let a = oops\n  let b = oops + 1\n}\n")
    return tmp_path


def test_ok_emits_the_ast_on_stdout(workdir, compile_cli):
    ran = compile_cli(["ok.ph"])
    assert ran.status == 0
    assert ran.out == "Program items=[]\n"
    assert ran.err == ""


def test_diagnostics_exit_1_with_rustc_summary(workdir, compile_cli):
    ran = compile_cli(["bad.ph", "--emit", "ast"])
    assert ran.status == 1
    assert ran.out == ""
    assert ran.err.count("error[E0901]: found `oops`") == 2
    assert " --> bad.ph:2:11\n" in ran.err
    assert " --> bad.ph:3:11\n" in ran.err
    assert "error: aborting due to 2 previous errors\n" in ran.err
    assert ran.err.endswith("try `phobos-compile --explain E0901`.\n")


def test_one_error_is_singular(workdir, compile_cli):
    Path("one.ph").write_text("oops\n")
    ran = compile_cli(["one.ph"])
    assert ran.status == 1
    assert "error: aborting due to 1 previous error\n" in ran.err


def test_several_files_report_together(workdir, compile_cli):
    ran = compile_cli(["ok.ph", "bad.ph"])
    assert ran.status == 1
    assert ran.out == "Program items=[]\n"  # the good file still prints
    assert "aborting due to 2 previous errors" in ran.err


def test_json_error_format(workdir, compile_cli):
    ran = compile_cli(["bad.ph", "--error-format", "json"])
    assert ran.status == 1
    rows = [json.loads(line) for line in ran.err.splitlines()]
    assert [(r["file"], r["line"], r["column"], r["end_column"]) for r in rows] == [
        ("bad.ph", 2, 11, 15),
        ("bad.ph", 3, 11, 15),
    ]
    assert all(r["code"] == "E0901" and r["severity"] == "error" for r in rows)
    assert rows[0]["labels"][0]["message"] == "not allowed here"


def test_json_error_format_for_usage_errors(workdir, compile_cli):
    ran = compile_cli(["missing.ph", "--error-format", "json"])
    assert ran.status == 2
    row = json.loads(ran.err)
    assert row["code"] == "E0901" and row["file"] is None


def test_output_file(workdir, compile_cli):
    ran = compile_cli(["ok.ph", "-o", "out.txt"])
    assert ran.status == 0 and ran.out == ""
    assert Path("out.txt").read_text() == "Program items=[]\n"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--bogus", "ok.ph"], "error: unrecognized arguments: --bogus"),
        (["ok.ph", "--emit", "nope"], "error: argument --emit: invalid choice: 'nope'"),
        ([], "error: no input files"),
        (["missing.ph"], "error[E0901]: cannot read `missing.ph`: no such file or directory"),
        (["notes.txt"], "error[E0902]: unknown input suffix `.txt` for `notes.txt`"),
        (["Makefile"], "error[E0902]: unknown input suffix no suffix for `Makefile`"),
        (["ok.ph", "bad.ph", "-o", "x"], "error[E0905]: `-o` needs exactly one input file"),
        (["ok.ph", "-o", "no/such/dir/out"], "error[E0904]: cannot write `no/such/dir/out`"),
        (["--explain", "E9999"], "error[E0906]: `E9999` is not a known error code"),
        (["ok.py", "--origin", "m.map"], "error: `--origin` needs exactly one `.ph` input"),
        (["ok.ph", "--origin", "m.map"], "error[E0903]: cannot use span map `m.map`"),
    ],
)
def test_usage_errors_exit_2_with_one_clear_line(workdir, compile_cli, argv, message):
    Path("notes.txt").write_text("x")
    Path("Makefile").write_text("x")
    Path("ok.py").write_text("x = 1\n")
    ran = compile_cli(argv)
    assert ran.status == 2
    assert ran.err.startswith(message), ran.err
    assert "Traceback" not in ran.err
    assert ran.err.splitlines()[0] in ran.err and ran.out == ""


def test_usage_error_reads_nothing_else(workdir, compile_cli):
    ran = compile_cli(["ok.ph", "missing.ph"])
    assert ran.status == 2
    assert ran.out == ""  # inputs are all read before any is compiled


def test_explain_prints_the_explanation(compile_cli):
    ran = compile_cli(["--explain", "E0903"])
    assert ran.status == 0
    assert ran.out.startswith("# E0903: ")
    assert "--origin" in ran.out
    assert compile_cli(["--explain", "e903"]).out == ran.out


# ---------------------------------------------------------------------------
# Internal compiler errors


def boom(_value, _unit):
    raise ZeroDivisionError("division by zero")


def test_internal_compiler_error_banner(workdir, compile_cli, monkeypatch):
    monkeypatch.setitem(driver.STAGES, "ast", driver.Stage(None, boom))
    ran = compile_cli(["ok.ph"])
    assert ran.status == 101
    lines = ran.err.splitlines()
    assert lines[0] == "error: internal compiler error: ZeroDivisionError: division by zero"
    assert (
        "note: this is a bug in Phobos; please report it with the file that triggered it" in lines
    )
    assert "note: compiling `ok.ph`, stage `ast`" in lines
    assert "Traceback" not in ran.err


def test_internal_compiler_error_in_a_later_stage_with_backtrace(workdir, compile_cli, monkeypatch):
    monkeypatch.setitem(driver.STAGES, "ph", driver.Stage("ast", boom))
    monkeypatch.setenv("PHOBOS_BACKTRACE", "1")
    ran = compile_cli(["ok.ph", "--emit", "ph"])
    assert ran.status == 101
    assert "note: compiling `ok.ph`, stage `ph`" in ran.err
    assert "Traceback (most recent call last)" in ran.err
    assert "in boom" in ran.err


def test_internal_compiler_error_names_the_span_when_known(workdir, compile_cli, monkeypatch):
    def located(_value, unit):
        exc = RuntimeError("stuck")
        exc.span = unit.source.span(13, 14)
        raise exc

    monkeypatch.setitem(driver.STAGES, "ast", driver.Stage(None, located))
    ran = compile_cli(["ok.ph"])
    assert ran.status == 101
    assert "note: compiling `ok.ph:2:1`, stage `ast`" in ran.err


# ---------------------------------------------------------------------------
# Span maps: writing beside a `.ph`, and --origin


def make_mapped_pair(folder: Path) -> None:
    """kernel.py, the kernel.ph it 'generated', and kernel.ph.map, by hand."""
    py = "import phobos.lang as ph\n\n\n@ph.kernel\ndef k():\n    a: ph.let = oops\n"
    ph = "kernel k() {\n  let a = oops\n}\n"
    (folder / "src").mkdir()
    (folder / "src" / "kernel.py").write_text(py)
    (folder / "gen").mkdir()
    (folder / "gen" / "kernel.ph").write_text(ph)
    original = SourceFile.read(str(folder / "src" / "kernel.py"))
    gen_at = ph.index("oops")
    py_at = py.index("oops")
    entries = [
        (0, len(ph), original.span(0, len(py))),  # the whole kernel
        (gen_at, gen_at + 4, original.span(py_at, py_at + 4)),  # the name
    ]
    smap = spanmap.build(str(folder / "gen" / "kernel.ph"), ph, entries, original)
    spanmap.write(smap, str(folder / "gen" / "kernel.ph.map"))


def test_origin_reports_at_the_python_line(workdir, compile_cli):
    make_mapped_pair(workdir)
    plain = compile_cli(["gen/kernel.ph"])
    assert " --> gen/kernel.ph:2:11" in plain.err
    ran = compile_cli(["gen/kernel.ph", "--origin", "gen/kernel.ph.map"])
    assert ran.status == 1
    assert " --> src/kernel.py:6:17" in ran.err
    assert "6 |     a: ph.let = oops\n" in ran.err
    assert "  |                 ^^^^ not allowed here\n" in ran.err
    assert "kernel.ph" not in ran.err


def test_origin_with_json(workdir, compile_cli):
    make_mapped_pair(workdir)
    ran = compile_cli(["gen/kernel.ph", "--origin", "gen/kernel.ph.map", "--error-format", "json"])
    row = json.loads(ran.err)
    assert (row["file"], row["line"], row["column"]) == ("src/kernel.py", 6, 17)
    assert row["labels"][0]["file"] == "src/kernel.py"


@pytest.mark.parametrize(
    "content, reason",
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "not a span map"),
        ('{"version": 7}', "unsupported span map version 7"),
        ('{"version": 1, "original": "../src/kernel.py"}', "missing `original` or `entries`"),
        (
            '{"version": 1, "original": "../src/kernel.py", "entries": [[1, 2]]}',
            "an entry is not four integers",
        ),
        (
            '{"version": 1, "original": "../src/kernel.py", "entries": [[0, 999, 0, 1]]}',
            "does not match",
        ),
        ('{"version": 1, "original": "gone.py", "entries": []}', "cannot read the original file"),
    ],
)
def test_bad_span_map_is_a_usage_error(workdir, compile_cli, content, reason):
    make_mapped_pair(workdir)
    Path("gen/bad.map").write_text(content)
    ran = compile_cli(["gen/kernel.ph", "--origin", "gen/bad.map"])
    assert ran.status == 2
    assert ran.err.startswith("error[E0903]: cannot use span map `gen/bad.map`: ")
    assert reason in ran.err
    assert "Traceback" not in ran.err


def test_python_input_emitted_as_ph_writes_the_map(workdir, compile_cli, monkeypatch):
    import phobos.syntax

    class FakePrinter:
        @staticmethod
        def print_mapped(program):
            # One entry covering the whole output, pointing at the whole source.
            span = program.span
            return "kernel k() {\n}\n", [(0, 14, span)]

        @staticmethod
        def print_program(program):
            raise AssertionError("a Python input must be printed with its spans")

    monkeypatch.setitem(sys.modules, "phobos.syntax.printer", FakePrinter)
    monkeypatch.setattr(phobos.syntax, "printer", FakePrinter, raising=False)
    Path("src").mkdir()
    Path("src/k.py").write_text("x = 1\n")
    Path("out").mkdir()
    ran = compile_cli(["src/k.py", "--emit", "ph", "-o", "out/k.ph"])
    assert ran.status == 0, ran.err
    assert Path("out/k.ph").read_text() == "kernel k() {\n}\n"
    data = json.loads(Path("out/k.ph.map").read_text())
    assert data["version"] == 1
    assert data["original"] == os.path.join("..", "src", "k.py")
    assert data["generated"] == "k.ph"
    assert data["entries"] == [[0, 14, 0, 6]]
    # A `.ph` input writes no map, and neither does stdout.
    assert compile_cli(["src/k.py", "--emit", "ph"]).out == "kernel k() {\n}\n"


# ---------------------------------------------------------------------------
# The real front ends, end to end (skipped until they exist)


def test_python_round_trip_through_origin_with_the_real_front_ends(
    tmp_path, monkeypatch, compile_cli
):
    pytest.importorskip("phobos.syntax.printer")
    pytest.importorskip("phobos.pyfront.translate")
    pytest.importorskip("phobos.syntax.parser")
    monkeypatch.chdir(tmp_path)
    Path("k.py").write_text(
        "import phobos.lang as ph\n"
        "\n"
        "\n"
        "@ph.kernel\n"
        "def k(x: ph.tensor[ph.f32][N]):\n"
        "    a: ph.let = x[0]\n"
        "    b: ph.let = a + 1\n"
    )
    ran = compile_cli(["k.py", "--emit", "ph", "-o", "k.ph"])
    assert ran.status == 0, ran.err
    assert Path("k.ph.map").exists()
    # Break the generated `.ph` at the line of `b` without moving any byte before it.
    ph = Path("k.ph").read_text()
    at = ph.index("a + 1")
    Path("k.ph").write_text(ph[:at] + "a + )" + ph[at + 5 :])
    ran = compile_cli(["k.ph", "--origin", "k.ph.map"])
    assert ran.status == 1
    assert " --> k.py:7:" in ran.err, ran.err


# ---------------------------------------------------------------------------
# As a program


def python(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO), NO_COLOR="1")
    env.pop("PHOBOS_BACKTRACE", None)
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_python_dash_m_runs_the_tool(tmp_path):
    done = python("-m", "phobos.cli.compile", str(tmp_path / "missing.ph"))
    assert done.returncode == 2
    assert "error[E0901]" in done.stderr and "Traceback" not in done.stderr
    done = python("-m", "phobos.cli.compile", "--explain", "E0901")
    assert done.returncode == 0 and done.stdout.startswith("# E0901")
    done = python("-m", "phobos.cli", "--explain", "E0905")
    assert done.returncode == 0 and done.stdout.startswith("# E0905")


def test_color_only_on_a_terminal_without_no_color(monkeypatch):
    from phobos.cli.compile import use_color

    class Tty:
        def isatty(self):
            return True

    class Pipe:
        def isatty(self):
            return False

    monkeypatch.delenv("NO_COLOR", raising=False)
    assert use_color(Tty()) is True
    assert use_color(Pipe()) is False
    monkeypatch.setenv("NO_COLOR", "1")
    assert use_color(Tty()) is False
