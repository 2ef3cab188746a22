"""Robustness: mutated sources never crash a front end, and every span lies inside.

Seeded mutations of the examples and the test sources (token deletions, swaps and
duplications, truncations, random characters, line edits, and Python constructs
Phobos refuses) go to both front ends: `parse` for `.ph` text, `translate_module`
for `.py` text. Every outcome is a clean parse or diagnostics whose primary and
secondary spans lie inside the source; no exception escapes, and every diagnostic
renders. A clean parse of a mutant also makes the round trip through both printers.

A few thousand cases run by default; `PHOBOS_FUZZ_CASES=N` runs about N. A failure
names its case; `mutant(kind, path, case)` rebuilds the text to reproduce it.
"""

from __future__ import annotations

import dataclasses
import os
import random
import re
import traceback
from pathlib import Path

import pytest

from phobos.pyfront.spellings import ATTRIBUTE_ACCESS, DECORATOR, UNKNOWN_NAME
from phobos.pyfront.translate import translate_module
from phobos.source import SourceFile
from phobos.syntax import ast
from phobos.syntax.parser import parse
from phobos.syntax.printer import print_program
from phobos.syntax.pyprinter import PySpellingError, print_python

try:
    from phobos.diagnostics.render import render_human
except ImportError:  # rendering is checked once the renderer exists
    render_human = None

ROOT = Path(__file__).resolve().parents[1]
CASES = int(os.environ.get("PHOBOS_FUZZ_CASES", "3000"))


def _corpus(suffix: str) -> list[Path]:
    files = sorted((ROOT / "examples").glob(f"*{suffix}"))
    for path in sorted((ROOT / "tests").rglob(f"*{suffix}")):
        if suffix == ".py":
            text = path.read_text(encoding="utf-8", errors="replace")
            if path.name.startswith(("test_", "conftest")) or "phobos.lang" not in text:
                continue
        files.append(path)
    return files


def _rel(path: Path) -> str:
    return path.resolve().relative_to(ROOT).as_posix()


PH_FILES = _corpus(".ph")
PY_FILES = _corpus(".py")
# `.ph` text names attributes, built-ins and ctx fields freely and the compiler checks
# them later; the Python spelling checks them as it reads `ph.name`. A clean `.ph`
# mutant that names `@autotu` or `ctx.blockx` is refused in Python for that alone, and
# one whose attribute is a built-in's name (`@grid_barrier(64)`) as a decorator Phobos
# does not spell.
CHECKED_EARLY = (UNKNOWN_NAME, ATTRIBUTE_ACCESS, DECORATOR)
# Each file gets an equal share of the cases; at least a handful each.
PER_FILE = max(8, CASES // max(1, len(PH_FILES) + len(PY_FILES)))

# -- mutations ---------------------------------------------------------------------

# Rough tokens of either spelling: comments, numbers, words, two-character operators,
# then any other character. Mutations cut and paste these.
TOKEN = re.compile(
    r"//[^\n]*|#[^\n]*|\d+\.\d*(?:[eE][+-]?\d+)?|\w+|<<=|>>=|\*\*|:\+|&&|\|\||//"
    r"|[-+*/%&|^<>=!]=|<<|>>|\S"
)
ODD_CHARACTERS = list("{}[]()<>:;,.@#$?!~`'\"\\+-*/%&|^=_ \t\n\r") + [
    "\x00",
    "\x0c",
    "\u00e9",
    "\u03bb",
    "\u2192",
    "\u200b",
    "\ufeff",
    "\U0001f600",
    "9",
    "x",
]
# Python constructs Phobos refuses, as expressions and as statements.
REFUSED_EXPRESSIONS = [
    "x ** 2", "lambda x: x", "[i for i in x]", '"str"', "a if b else c", "a @ b",
    "a is b", "a in b", "(a, b)", "{1: 2}", "{a}", "f(*args)", "f(**kw)", "x.attr",
    'f"{x}"', "b'raw'", "None", "...", "(y := 1)", "A[::2]", "A[:+n]", "+x", "1j",
    "await x", "ph.nothing", "ph.ctx", "ph.ctx.block", "ph.ctx.lane.x", "ph.let",
    "ph.exp(x, over=ph.ctx.lane)", "ph.shfl(v, sideways=1)", "ph", "a < b < c",
    "not", "ph.sum(x, over=)", "((((((((((((((((((((x))))))))))))))))))))",
]  # fmt: skip
REFUSED_STATEMENTS = [
    "with x:\n    pass", "try:\n    pass\nexcept E:\n    pass", "raise E", "assert x",
    "del x", "global x", "import os", "def inner():\n    pass", "class C:\n    pass",
    "a, b = 1, 2", "a = b = 1", "x: int = 1", "x: ph.let", "x: ph.let[ph.f32, ph.i32] = 1",
    "return 1", "for i in x:\n    pass", "for i in range(1, 2, 3, 4):\n    pass",
    "for i in range(N):\n    pass\nelse:\n    pass", "while x:\n    pass\nelse:\n    pass",
    "async def g():\n    pass", "match x:\n    case 1:\n        pass", "x **= 2", "x @= y",
    "print(x)", "yield x", "x: ph.var", "t: ph.var[ph.tile[ph.f32]]", "ph.unroll(2, x)",
    "f(a)(b)", "A[1:2:3] = x", "x.y = 1", "nonlocal x", "pass", "...", '"""doc"""',
]  # fmt: skip
REFUSED_DEF_EDITS = [
    ("):", ", *args):"), ("):", ", b=1):"), ("):", ", *, k):"), ("):", ", /):"),
    ("):", ", **kw):"), ("(", "(self, "), ("def ", "async def "), ("@ph.kernel", "@ph.kernel()"),
    ("@ph.kernel", "@ph.kernel(key=M)"), ("@ph.kernel", "@ph.fn\n@ph.kernel"),
    ("@ph.kernel", "@staticmethod"), ('="', "=1 + "), ("=[", "=(1, "),
    ("from __future__ import annotations\n", ""), ("import phobos.lang as ph", "import numpy as ph"),
    ("import phobos.lang as ph", "from phobos import lang as ph"),
]  # fmt: skip
PH_INJECTIONS = [
    "**", "lambda", '"str"', "? :", "#", "'", "/*", "@", "@@", "<", ">", "in", "else",
    "let", "var", "fn", "kernel", "ctx", "ctx.", ".", "tensor<", "tile<f32>[", "range(",
    "for<unroll", "sum<over", "shfl<from", ":+", "1e", "0x1F", "1.2.3", "99999999999999999999",
    "1e999", "\\", "\t", "\r", "}", "{", ")", "(",
]  # fmt: skip


def _tokens(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in TOKEN.finditer(text)]


def _delete_token(rng, text):
    toks = _tokens(text)
    if not toks:
        return text
    start, end = rng.choice(toks)
    return text[:start] + text[end:]


def _delete_tokens(rng, text):
    for _ in range(rng.randint(2, 5)):
        text = _delete_token(rng, text)
    return text


def _swap_tokens(rng, text):
    toks = _tokens(text)
    if len(toks) < 2:
        return text
    k = rng.randrange(len(toks) - 1)
    j = k + 1 if rng.random() < 0.7 else rng.randrange(len(toks))
    (a0, a1), (b0, b1) = sorted((toks[k], toks[j]))
    if a1 > b0:
        return text
    return text[:a0] + text[b0:b1] + text[a1:b0] + text[a0:a1] + text[b1:]


def _duplicate_token(rng, text):
    toks = _tokens(text)
    if not toks:
        return text
    start, end = rng.choice(toks)
    return text[:end] + rng.choice(["", " "]) + text[start:end] + text[end:]


def _truncate(rng, text):
    return text[: rng.randint(0, len(text))]


def _insert_characters(rng, text):
    for _ in range(rng.randint(1, 3)):
        at = rng.randint(0, len(text))
        text = text[:at] + rng.choice(ODD_CHARACTERS) + text[at:]
    return text


def _edit_line(rng, text):
    lines = text.split("\n")
    k = rng.randrange(len(lines))
    roll = rng.random()
    if roll < 0.3:
        del lines[k]
    elif roll < 0.6:
        lines.insert(k, lines[k])
    elif roll < 0.8:
        j = rng.randrange(len(lines))
        lines[k], lines[j] = lines[j], lines[k]
    else:
        lines[k] = rng.choice(["    ", "\t", " ", ""]) + lines[k].lstrip(" " if roll < 0.9 else "")
    return "\n".join(lines)


def _inject_ph(rng, text):
    toks = _tokens(text)
    at = rng.choice(toks)[rng.randrange(2)] if toks else 0
    return text[:at] + f" {rng.choice(PH_INJECTIONS)} " + text[at:]


def _body_lines(text: str) -> list[int]:
    """Indices of the lines inside a def body (indented, not a comment)."""
    lines = text.split("\n")
    return [k for k, line in enumerate(lines) if line.startswith("    ") and line.strip()]


def _inject_expression(rng, text):
    """Replace a word or number inside a def body with a refused expression."""
    lines = text.split("\n")
    body = _body_lines(text)
    if not body:
        return text
    k = rng.choice(body)
    words = list(re.finditer(r"\b\w+\b", lines[k]))
    if not words:
        return text
    m = rng.choice(words)
    construct = rng.choice(REFUSED_EXPRESSIONS)
    if rng.random() < 0.5:
        construct = f"({construct})"
    lines[k] = lines[k][: m.start()] + construct + lines[k][m.end() :]
    return "\n".join(lines)


def _inject_statement(rng, text):
    """Insert a refused statement, indented as the body line it goes before."""
    lines = text.split("\n")
    body = _body_lines(text)
    if not body:
        return text
    k = rng.choice(body)
    indent = lines[k][: len(lines[k]) - len(lines[k].lstrip())]
    stmt = rng.choice(REFUSED_STATEMENTS).replace("\n", "\n" + indent)
    lines.insert(k, indent + stmt)
    return "\n".join(lines)


def _edit_def(rng, text):
    old, new = rng.choice(REFUSED_DEF_EDITS)
    spots = [m.start() for m in re.finditer(re.escape(old), text)]
    if not spots:
        return text
    at = rng.choice(spots)
    return text[:at] + new + text[at + len(old) :]


COMMON = {
    "delete-token": _delete_token,
    "delete-tokens": _delete_tokens,
    "swap-tokens": _swap_tokens,
    "duplicate-token": _duplicate_token,
    "truncate": _truncate,
    "insert-characters": _insert_characters,
    "edit-line": _edit_line,
}
MUTATORS = {
    ".ph": {**COMMON, "inject": _inject_ph},
    ".py": {
        **COMMON,
        "refused-expression": _inject_expression,
        "refused-statement": _inject_statement,
        "refused-def": _edit_def,
    },
}


def mutant(kind: str, path: Path, case: int) -> str:
    """The text of case `case` of mutation `kind` of `path`: a failure's reproducer."""
    rng = random.Random(f"{kind}:{_rel(path)}:{case}")
    return MUTATORS[path.suffix][kind](rng, path.read_text(encoding="utf-8"))


# -- checks ---------------------------------------------------------------------------


def _front_end(suffix: str):
    return parse if suffix == ".ph" else translate_module


def _check(suffix: str, name: str, text: str, round_trip: bool = True) -> str | None:
    """What is wrong with reading `text`, or None."""
    source = SourceFile(name, text)
    size = len(source.data)
    try:
        program, diags = _front_end(suffix)(source)
    except RecursionError:
        return "RecursionError escaped\n" + traceback.format_exc(limit=-8)
    except Exception:
        return "exception escaped\n" + traceback.format_exc(limit=-8)
    if not isinstance(program, ast.Program):
        return f"the front end returned {type(program).__name__}, not a Program"
    for d in diags:
        if d.primary is None:
            return f"diagnostic without a location: {d.code} {d.message}"
        for label in (d.primary, *d.secondary):
            span = label.span
            if not (0 <= span.start <= span.end <= size):
                return f"span {span.start}..{span.end} outside 0..{size}: {d.code} {d.message}"
            if span.source.data != source.data:
                return f"span into another file ({span.source.name}): {d.code} {d.message}"
    if render_human is not None:
        try:
            render_human(diags)
        except Exception:
            return "render_human raised\n" + traceback.format_exc(limit=-8)
    if round_trip and not any(d.severity == "error" for d in diags):
        return _check_round_trip(suffix, program)
    return None


def _check_round_trip(suffix: str, program: ast.Program) -> str | None:
    """A clean mutant reads back the same through both printers."""
    try:
        if suffix == ".ph":
            printed = print_program(program)
            again, diags = parse(SourceFile("printed.ph", printed))
            if any(d.severity == "error" for d in diags) or not same_tree(again, program):
                return f"print_program does not read back:\n{printed}"
        try:
            spelled = print_python(program)
        except PySpellingError:
            return None  # a name Python cannot spell, say `in` grown from `i`
        again, diags = translate_module(SourceFile("printed.py", spelled))
        errors = [d for d in diags if d.severity == "error"]
        if errors and all(d.code in CHECKED_EARLY for d in errors):
            return None
        if errors or not same_tree(again, program):
            messages = [d.message for d in diags]
            return f"print_python does not read back {messages}:\n{spelled}"
    except Exception:
        return "exception in the round trip\n" + traceback.format_exc(limit=-8)
    return None


def same_tree(a: ast.Node, b: ast.Node) -> bool:
    """`a == b` as the nodes define it, in a loop: a long sum is a deep tree."""
    pending = [(a, b)]
    while pending:
        x, y = pending.pop()
        if type(x) is not type(y):
            return False
        if isinstance(x, tuple):
            if len(x) != len(y):
                return False
            pending += zip(x, y, strict=True)
        elif isinstance(x, ast.Node):
            for f in dataclasses.fields(x):
                if f.compare:
                    pending.append((getattr(x, f.name), getattr(y, f.name)))
        elif x != y:
            return False
    return True


def _cases(files: list[Path]):
    for path in files:
        yield pytest.param(path, id=_rel(path))


def _run(path: Path) -> None:
    if not path.exists():
        pytest.skip(f"{_rel(path)} went away after collection")
    kinds = sorted(MUTATORS[path.suffix])
    original = path.read_text(encoding="utf-8")
    failures = []
    for case in range(PER_FILE):
        kind = kinds[case % len(kinds)]
        text = mutant(kind, path, case)
        problem = _check(path.suffix, path.name, text)
        if problem:
            failures.append(
                f"mutant({kind!r}, ROOT / {_rel(path)!r}, {case}) {problem}"
                f"\n--- mutated text\n{text}"
            )
            if len(failures) >= 3:
                break
    # The unmutated file is a case too: it must at least not crash.
    problem = _check(path.suffix, path.name, original)
    if problem and "exception" in problem:
        failures.append(f"the original {path.name}: {problem}")
    assert not failures, "\n\n".join(failures)


@pytest.mark.parametrize("path", list(_cases(PH_FILES)))
def test_ph_mutants(path):
    _run(path)


@pytest.mark.parametrize("path", list(_cases(PY_FILES)))
def test_py_mutants(path):
    _run(path)


def test_there_is_a_corpus():
    assert len(PH_FILES) >= 4 and len(PY_FILES) >= 4


@pytest.mark.parametrize("suffix", [".ph", ".py"])
def test_degenerate_inputs(suffix):
    texts = [
        "", "\n", "\ufeff", "\x00", "\r\n\r", "\t\t", "é" * 50, "(" * 2000, "[" * 500,
        "{" * 500, "-" * 3000 + "1", "a" * 10000, "@" * 100, "kernel", "def", "@ph.kernel",
        "@ph.kernel\ndef k(", "@ph.kernel\ndef k():\n", "kernel k() {", "fn f(",
    ]  # fmt: skip
    if suffix == ".py":
        texts += [
            "import phobos.lang as ph\n@ph.kernel\ndef k():\n    x: ph.let = " + "(" * 300 + "1"
            + ")" * 300 + "\n",
            "import phobos.lang as ph\n@ph.kernel\ndef k():\n    x: ph.let = " + "-" * 3000 + "1\n",
            "import phobos.lang as ph\n@ph.kernel\ndef k():\n    x: ph.let = 1" + " + 1" * 3000 + "\n",
        ]  # fmt: skip
    else:
        texts += [
            "kernel k() { let x = " + "(" * 300 + "1" + ")" * 300 + " }",
            "kernel k() { let x = 1" + " + 1" * 3000 + " }",
            "kernel k() {" + " if x {" * 300 + " }" * 300 + " }",
        ]
    for text in texts:
        # Python's own parser has a depth limit, so these need not survive the round trip.
        problem = _check(suffix, "degenerate" + suffix, text, round_trip=False)
        assert problem is None, f"{text[:80]!r}...: {problem}"
