"""The stage table: chains, stopping on errors, CompileError, a new stage in one line."""

from __future__ import annotations

import pytest

from phobos import driver
from phobos.diagnostics.diagnostic import CompileError, Diagnostic, Label
from phobos.source import SourceFile


def test_chain_follows_after_links():
    assert driver.chain("ast") == ["ast"]
    assert driver.chain("ph") == ["ast", "ph"]
    assert driver.chain("py") == ["ast", "py"]


def test_a_new_stage_is_one_table_entry(stub_front_ends, monkeypatch):
    monkeypatch.setitem(
        driver.STAGES, "shout", driver.Stage("ph", lambda text, unit: text.upper(), str)
    )
    monkeypatch.setitem(
        driver.STAGES, "ph", driver.Stage("ast", lambda program, unit: "kernel k() {}\n")
    )
    result = driver.compile_source(SourceFile("k.ph", "kernel k() {}\n"), "shout")
    assert result.ok
    assert result.text == "KERNEL K() {}\n"
    assert list(result.artifacts) == ["ast", "ph", "shout"]


def test_errors_stop_the_stages(stub_front_ends, monkeypatch):
    ran = []
    monkeypatch.setitem(
        driver.STAGES, "ph", driver.Stage("ast", lambda program, unit: ran.append(1) or "")
    )
    result = driver.compile_source(SourceFile("k.ph", "oops\n"), "ph")
    assert not result.ok
    assert result.text is None
    assert ran == []
    assert [d.message for d in result.diagnostics] == ["found `oops`"]


def test_compile_error_raised_by_a_stage_becomes_diagnostics(stub_front_ends, monkeypatch):
    source = SourceFile("k.ph", "abc\n")
    diag = Diagnostic.error("E0901", "refused", Label(source.span(0, 3), "here"))

    def refuse(program, unit):
        raise CompileError([diag])

    monkeypatch.setitem(driver.STAGES, "ph", driver.Stage("ast", refuse))
    result = driver.compile_source(source, "ph")
    assert result.diagnostics == [diag]
    assert result.text is None


def test_other_exceptions_are_internal_errors(stub_front_ends, monkeypatch):
    def broken(program, unit):
        return {}["missing"]

    monkeypatch.setitem(driver.STAGES, "py", driver.Stage("ast", broken))
    with pytest.raises(driver.InternalCompilerError) as info:
        driver.compile_source(SourceFile("dir/k.ph", ""), "py")
    assert info.value.stage == "py"
    assert info.value.location == "dir/k.ph"
    assert str(info.value) == "KeyError: 'missing'"
    assert "Traceback" in info.value.traceback


def test_an_exception_in_the_text_form_is_an_internal_error(stub_front_ends, monkeypatch):
    def bad_text(value):
        raise ValueError("no text")

    monkeypatch.setitem(driver.STAGES, "ast", driver.Stage(None, driver._front_end, bad_text))
    with pytest.raises(driver.InternalCompilerError):
        driver.compile_source(SourceFile("k.ph", ""), "ast")


def test_front_end_by_suffix(tmp_path):
    (tmp_path / "a.rs").write_text("")
    with pytest.raises(driver.InputError) as info:
        driver.compile_path(str(tmp_path / "a.rs"))
    assert info.value.code == "E0902"
    with pytest.raises(driver.InputError) as info:
        driver.compile_path(str(tmp_path / "gone.ph"))
    assert info.value.code == "E0901"
    assert info.value.diagnostic.primary is None


def test_phobos_dump_writes_every_artifact(stub_front_ends, monkeypatch, tmp_path):
    monkeypatch.setenv("PHOBOS_DUMP", str(tmp_path / "dump"))
    monkeypatch.setitem(driver.STAGES, "ph", driver.Stage("ast", lambda program, unit: "text\n"))
    driver.compile_source(SourceFile("src/k.ph", ""), "ph")
    assert (tmp_path / "dump" / "k.ph.ast").read_text() == "Program items=[]\n"
    assert (tmp_path / "dump" / "k.ph.ph").read_text() == "text\n"


def test_real_parser_through_the_table():
    pytest.importorskip("phobos.syntax.parser")
    result = driver.compile_source(SourceFile("k.ph", "kernel k() {\n}\n"), "ast")
    assert result.ok, result.diagnostics
    assert result.text == (
        "Program\n  items[0]: Kernel attrs=[] name=k params=[]\n    body: Block stmts=[]\n"
    )
