"""The round trip: every Phobos source in the tree reads the same in both spellings.

* `.ph` -> parse -> `print_python` -> `translate_module` gives the tree parsed (spans,
  float spellings, `/` spellings and fn `uses` aside, which `==` ignores);
* every `examples/*.py` with a `.ph` twin translates to the twin's tree;
* `.ph` -> `print_program` -> parse gives the same tree, and printing is a fixed point;
* a Python module -> `print_python` -> `translate_module` gives the same tree.

The `.ph` sources are the examples and every `.ph` under tests/ that parses without
errors (a file annotated `//~ ERROR` is a test of an error and is left out).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from phobos.pyfront.translate import translate_module
from phobos.source import SourceFile
from phobos.syntax import ast
from phobos.syntax.parser import parse
from phobos.syntax.printer import print_program
from phobos.syntax.pyprinter import PySpellingError, print_python

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
SPEC_EXAMPLES = ("sgemm", "flash_attention", "kda", "saxpy")


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _ph_sources() -> list[Path]:
    found = sorted(EXAMPLES.glob("*.ph"))
    for path in sorted((ROOT / "tests").rglob("*.ph")):
        if "//~ ERROR" not in path.read_text(encoding="utf-8", errors="replace"):
            found.append(path)
    return found


def _py_modules() -> list[Path]:
    """Python spellings in the tree that are meant to translate cleanly."""
    found = sorted(EXAMPLES.glob("*.py"))
    for path in sorted((ROOT / "tests").rglob("*.py")):
        if path.name.startswith(("test_", "conftest")):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if "phobos.lang" in text and "#~ ERROR" not in text:
            found.append(path)
    return found


PH_SOURCES = _ph_sources()
PY_MODULES = _py_modules()
TWINS = [p for p in sorted(EXAMPLES.glob("*.py")) if p.with_suffix(".ph").exists()]


def _show(node: ast.Node) -> str:
    dump = getattr(ast, "dump", None)
    return dump(node) if dump else repr(node)


def _errors(diags) -> list[str]:
    return [f"{d.code} {d.message}" for d in diags if d.severity == "error"]


def _parse_clean(path: Path) -> ast.Program:
    """The tree of a `.ph` file; examples must parse cleanly, test sources may not."""
    program, diags = parse(SourceFile.read(str(path), _rel(path)))
    errors = _errors(diags)
    if errors:
        if path.parent == EXAMPLES:
            pytest.fail(f"{_rel(path)} does not parse: {errors}")
        pytest.skip(f"{_rel(path)} has syntax errors: it tests the parser, not the round trip")
    return program


def _assert_same(got: ast.Program, want: ast.Program, what: str, text: str = "") -> None:
    if got != want:
        pytest.fail(
            f"{what}: the trees differ\n--- want\n{_show(want)}\n--- got\n{_show(got)}"
            + (f"\n--- through\n{text}" if text else "")
        )


def test_the_examples_are_all_here():
    for stem in SPEC_EXAMPLES:
        assert (EXAMPLES / f"{stem}.ph").exists(), stem
        assert (EXAMPLES / f"{stem}.py").exists(), stem
    assert {p.stem for p in TWINS} >= set(SPEC_EXAMPLES)


@pytest.mark.parametrize("path", PH_SOURCES, ids=_rel)
def test_ph_through_python(path):
    program = _parse_clean(path)
    try:
        text = print_python(program)
    except PySpellingError as err:
        if path.parent == EXAMPLES:
            raise
        pytest.skip(f"no Python spelling: {err}")
    back, diags = translate_module(SourceFile(path.with_suffix(".py").name, text))
    assert not _errors(diags), f"{_errors(diags)}\n--- the Python printed\n{text}"
    _assert_same(back, program, f"{_rel(path)} through Python", text)


@pytest.mark.parametrize("path", TWINS, ids=_rel)
def test_python_example_spells_its_twin(path):
    twin = _parse_clean(path.with_suffix(".ph"))
    program, diags = translate_module(SourceFile.read(str(path), _rel(path)))
    assert not _errors(diags), _errors(diags)
    _assert_same(program, twin, f"{_rel(path)} against {path.with_suffix('.ph').name}")


@pytest.mark.parametrize("path", PH_SOURCES, ids=_rel)
def test_ph_printer_round_trip(path):
    program = _parse_clean(path)
    text = print_program(program)
    again, diags = parse(SourceFile(path.name, text))
    assert not _errors(diags), f"{_errors(diags)}\n--- printed\n{text}"
    _assert_same(again, program, f"{_rel(path)} through print_program", text)
    assert print_program(again) == text, "printing the printed program changes it"


@pytest.mark.parametrize("path", PY_MODULES, ids=_rel)
def test_python_through_the_python_printer(path):
    program, diags = translate_module(SourceFile.read(str(path), _rel(path)))
    assert not _errors(diags), _errors(diags)
    text = print_python(program)
    again, diags = translate_module(SourceFile(path.name, text))
    assert not _errors(diags), f"{_errors(diags)}\n--- printed\n{text}"
    _assert_same(again, program, f"{_rel(path)} through print_python", text)
    assert print_python(again) == text, "printing the printed module changes it"


@pytest.mark.parametrize("path", TWINS, ids=_rel)
def test_python_example_uses_the_documented_header(path):
    lines = [
        line
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.startswith(("from ", "import "))
    ]
    assert lines[:2] == ["from __future__ import annotations", "import phobos.lang as ph"]


@pytest.mark.parametrize("path", TWINS, ids=_rel)
def test_python_example_imports_and_spells_its_twin(path):
    """Importing the module runs its decorators; each kernel's `.source` is the twin."""
    spec = importlib.util.spec_from_file_location(f"_example_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    twin = _parse_clean(path.with_suffix(".ph"))
    for item in twin.items:
        kernel = getattr(module, item.name.id)
        spelled, diags = parse(SourceFile(f"{item.name.id}.source", kernel.source))
        assert not _errors(diags), _errors(diags)
        assert item in spelled.items, kernel.source


# Every node kind and the operator cases where Python's ranks differ from Phobos's, so
# the round trip covers them even before the tree holds a source with each.
INLINE = {
    "functions": """
fn axpy(a, x, y) = a * x + y
fn scaled(t) {
  t = t * SCALE
  t
}
fn add(a, b) = a + b
kernel k(A: tensor<f32>[N], B: tensor<f16>[N, 64], n: i32) {
  var t: tile<f32>[1, 64] = 0.0
  scaled(t)
  let g = generate(scaled)
  let r = reduce<over ctx.thread>(A[0], add)
  A[0] = axpy(2.0, A[1], A[2])
}
""",
    "statements": """
@launch(128, 2)
@tensorcore(wmma)
@registers(acc, t)
@dynshared
@aligned(M = TILE_M, N = 64)
@autotune(U in [1, 2, 4], TILE_M in [16, 128])
kernel stmts(A: tensor<f32>[M, N], flag: bool) {
  var acc: tile<f32>[TILE_M, 64]
  var i = 0
  var x: f32 = 1.5e-3
  let y: i32 = 7
  for<unroll U> j in range(0, N, 2) {
    if j == 3 {
      continue
    } else if j > 100 {
      break
    } else {
      if j < 2 { i += 1 }
    }
  }
  while i < 10 && !flag {
    i = i + 1
    i -= 1; i *= 2; i /= 2; i %= 7; i &= 15; i |= 1; i ^= 3; i <<= 1; i >>= 1
  }
  if flag { return }
  for r in range(ctx.block.x, M) { }
  acc = A[:, :]
  acc[0 :+ 1, 1:] = A[0, :64]
  acc[:, :] += A[M - TILE_M :+ TILE_M, 0 :+ 64]
}
""",
    "names": """
fn ph(a) = a + ph_
kernel range(exp: f32, lambda_: i32, ph_: i32) {
  let max = exp * 2.0
  let x = max + ph(exp) + max(exp, 1.0)
  for i in range(0, lambda_) { }
}
""",
    "operators": """
kernel ops(A: tensor<i32>[N], s: i32) {
  let a = A[0]
  let b = A[1]
  let c1 = (a < b) == (b < s)
  let c2 = a == (b < s)
  let c3 = (a == b) != true
  let c4 = !a == b
  let c5 = !(a == b) && !(a < b || b < s)
  let c6 = a & 15 == 3 || (a | b) ^ s > 0
  let c7 = -(a + b) * ~b - -1 % (a / 2) << 3 >> 1
  let c8 = a - (b - s) - a * (b + s) / (a % b)
  let c9 = !(!false)
  let c10 = i32(f32(a) / 2.0) / 4
  let w = sum<over ctx.lane, width 8>(a) + max<over ctx.lane>(b) + min(a, b)
  let v = shfl<xor 16>(a) + shfl<from s>(b) + shfl<down 1, width 16>(a) + shfl<up 2>(b)
  let q = any<over ctx.lane>(a > 0) || all<over ctx.thread>(b > 0)
  let z = argmax<over ctx.lane>(a) + ctx.lanes + ctx.warps + ctx.threads
  let u = ctx.thread + ctx.warp + ctx.lane + ctx.blocks.y + ctx.block.z
  A[a :+ (b + s)] = A[a :+ s * 2]
}
""",
}


@pytest.mark.parametrize("name", sorted(INLINE))
def test_inline_sources_through_python(name):
    program, diags = parse(SourceFile(f"{name}.ph", INLINE[name]))
    assert not _errors(diags), _errors(diags)
    text = print_python(program)
    back, diags = translate_module(SourceFile(f"{name}.py", text))
    assert not _errors(diags), f"{_errors(diags)}\n--- the Python printed\n{text}"
    _assert_same(back, program, f"{name} through Python", text)
    printed = print_program(program)
    again, diags = parse(SourceFile(f"{name}.ph", printed))
    assert not _errors(diags), f"{_errors(diags)}\n--- printed\n{printed}"
    _assert_same(again, program, f"{name} through print_program", printed)
