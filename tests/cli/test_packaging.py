"""Packaging and command-line hygiene: the version, the license, the sdist's contents,
the JSON format's version field, and the warning for a file without a kernel."""

from __future__ import annotations

import io
import json
import re
from importlib import metadata
from pathlib import Path

import pytest

from phobos.cli import compile as compile_cli
from phobos.cli import ph2py
from phobos.diagnostics.render import JSON_VERSION

REPO = Path(__file__).resolve().parents[2]


class Ran:
    def __init__(self, status: int, out: str, err: str):
        self.status, self.out, self.err = status, out, err


def run_tool(module, argv: list[str]) -> Ran:
    out, err = io.StringIO(), io.StringIO()
    status = module.run(argv, stdout=out, stderr=err, color=False)
    return Ran(status, out.getvalue(), err.getvalue())


@pytest.mark.parametrize("tool", [compile_cli, ph2py])
def test_version_is_the_package_metadata(tool) -> None:
    ran = run_tool(tool, ["--version"])
    assert ran.status == 0 and ran.err == ""
    assert ran.out == f"phobos {metadata.version('phobos')}\n"
    assert re.fullmatch(r"phobos \d+\.\d+\.\d+\S*\n", ran.out)


def test_the_license_is_apache_2() -> None:
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text


def test_the_sdist_manifest_holds_what_the_tests_read() -> None:
    lines = (REPO / "MANIFEST.in").read_text(encoding="utf-8").splitlines()
    rules = {line.strip() for line in lines if line.strip() and not line.startswith("#")}
    for rule in ("graft docs", "graft examples", "graft tests", "graft tools"):
        assert rule in rules
    assert "include LICENSE README.md" in rules
    assert any(r.startswith("include benchmarks/") for r in rules)


def test_json_diagnostics_carry_the_format_version(tmp_path: Path) -> None:
    bad = tmp_path / "bad.ph"
    bad.write_text("kernel k(x: f32) {\n  let y = nope\n}\n")
    ran = run_tool(compile_cli, [str(bad), "--emit", "hir", "--error-format", "json"])
    assert ran.status == 1
    objects = [json.loads(line) for line in ran.err.splitlines()]
    assert objects and all(o["version"] == JSON_VERSION == 1 for o in objects)
    assert objects[0]["code"] == "E0250"


def test_a_file_with_only_fns_warns_that_it_holds_no_kernel(tmp_path: Path) -> None:
    path = tmp_path / "fns.py"
    path.write_text(
        "from __future__ import annotations\nimport phobos.lang as ph\n\n"
        "@ph.fn\ndef twice(a):\n    return a + a\n"
    )
    ran = run_tool(compile_cli, [str(path), "--emit", "hir"])
    assert ran.status == 0
    assert f"warning: `{path}` holds no kernel (only 1 fn)" in ran.err
    assert "warning: 1 warning emitted" in ran.err


def test_an_empty_ph_file_warns_too(tmp_path: Path) -> None:
    path = tmp_path / "empty.ph"
    path.write_text("// nothing here\n")
    ran = run_tool(compile_cli, [str(path), "--emit", "hir", "--error-format", "json"])
    assert ran.status == 0
    (warning,) = [json.loads(line) for line in ran.err.splitlines()]
    assert warning["severity"] == "warning"
    assert "holds no kernel (nothing Phobos reads)" in warning["message"]


def test_a_file_with_a_kernel_compiles_quietly(tmp_path: Path) -> None:
    path = tmp_path / "k.ph"
    path.write_text("kernel k(x: tensor<f32>[N]) {\n  x[0] = 1.0\n}\n")
    ran = run_tool(compile_cli, [str(path), "--emit", "hir"])
    assert ran.status == 0 and ran.err == ""


def test_printing_the_front_ends_reading_does_not_warn(tmp_path: Path) -> None:
    path = tmp_path / "empty.ph"
    path.write_text("// nothing here\n")
    ran = run_tool(compile_cli, [str(path), "--emit", "ast"])
    assert ran.status == 0 and ran.err == ""
