"""The round trip over directories: every source reads the same in both spellings.

    python tools/roundtrip.py [DIR_OR_FILE ...]      (default: examples/ and tests/)

For each `.ph` that parses cleanly: `.ph` -> `print_python` -> `translate_module` and
`.ph` -> `print_program` -> parse give the tree parsed. For each `.py` with a `.ph`
twin beside it: it translates to the twin's tree. A `.ph` annotated `//~ ERROR`
tests an error and is left out. Prints one line per file; exits 1 if any differ.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from phobos.pyfront.translate import translate_module  # noqa: E402
from phobos.source import SourceFile  # noqa: E402
from phobos.syntax.parser import parse  # noqa: E402
from phobos.syntax.printer import print_program  # noqa: E402
from phobos.syntax.pyprinter import PySpellingError, print_python  # noqa: E402


def _errors(diags) -> list[str]:
    return [f"{d.code}: {d.message}" for d in diags if d.severity == "error"]


def check_ph(path: Path) -> tuple[str, str]:
    """("ok" | "skip" | "FAIL", why) for one `.ph` file."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if "//~ ERROR" in text:
        return "skip", "an error test"
    program, diags = parse(SourceFile(str(path), text))
    if _errors(diags):
        return "skip", f"does not parse ({_errors(diags)[0]})"
    try:
        spelled = print_python(program)
    except PySpellingError as err:
        return "skip", f"no Python spelling: {err}"
    back, diags = translate_module(SourceFile(str(path.with_suffix(".py")), spelled))
    if _errors(diags):
        return "FAIL", f"its Python spelling is refused: {_errors(diags)}"
    if back != program:
        return "FAIL", "its Python spelling reads back to another tree"
    printed = print_program(program)
    again, diags = parse(SourceFile(str(path), printed))
    if _errors(diags) or again != program:
        return "FAIL", "print_program does not read back to the same tree"
    return "ok", ""


def check_twin(path: Path) -> tuple[str, str]:
    """("ok" | "FAIL", why) for a `.py` with a `.ph` twin beside it."""
    twin, diags = parse(SourceFile.read(str(path.with_suffix(".ph"))))
    if _errors(diags):
        return "FAIL", f"its twin does not parse: {_errors(diags)}"
    program, diags = translate_module(SourceFile.read(str(path)))
    if _errors(diags):
        return "FAIL", f"refused: {_errors(diags)}"
    if program != twin:
        return "FAIL", f"differs from {path.with_suffix('.ph').name}"
    return "ok", ""


def _files(args: list[str]) -> list[Path]:
    roots = [Path(a) for a in args] or [ROOT / "examples", ROOT / "tests"]
    found: list[Path] = []
    for root in roots:
        if root.is_file():
            found.append(root)
        else:
            found += sorted(p for p in root.rglob("*") if p.suffix in (".ph", ".py"))
    return found


def main(argv: list[str] | None = None) -> int:
    failed = checked = 0
    for path in _files(sys.argv[1:] if argv is None else argv):
        if path.suffix == ".ph":
            status, why = check_ph(path)
        elif path.with_suffix(".ph").exists():
            status, why = check_twin(path)
        else:
            continue
        checked += status != "skip"
        failed += status == "FAIL"
        print(f"{status:4} {path}" + (f": {why}" if why else ""))
    print(f"{checked} checked, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
