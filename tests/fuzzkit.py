"""Seeded mutations of Phobos sources, for the robustness and compile fuzzers.

Two families: the syntactic (`MUTATORS[suffix]`: token deletions, swaps and
duplications, truncations, random characters, line edits, and Python constructs
Phobos refuses), which mostly exercise the front ends, and the semantic
(`SEMANTIC[suffix]`: numbers, types, built-in names, ctx fields, shape and parameter
names and attribute arguments changed), whose mutants mostly still read and so reach
the checker and the lowering. Every mutator is `f(rng, text) -> text`, a function of
its `random.Random` alone, so a case is rebuilt from its seed.

    >>> import random
    >>> SEMANTIC[".ph"]["types"](random.Random(1), "kernel k(x: tensor<f32>[N]) {}")
    'kernel k(x: tensor<bool>[N]) {}'
"""

from __future__ import annotations

import functools
import re

from phobos.names import BUILTINS, CTX_FIELDS, QGEMM_FORMATS, QMMA_STAGED_FORMATS

# -- syntactic mutations ----------------------------------------------------------------

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


# -- semantic mutations -----------------------------------------------------------------

# Numbers at the edges: zero, one, minus one, 2^31 (past i32), 65536 (past a CTA, past
# 16 bits), 2^32 (past u32).
NUMBERS = ["0", "1", "-1", "2147483648", "65536", "4294967296"]
TYPES = ["f32", "f16", "bf16", "i8", "i32", "bool"]
# The built-ins a swap draws from: all but the raw-format families, one of each kept; a
# swap keeps to those of the same signature more often than not, so the call still checks.
FORMATS = {f"{f}_qgemm_t" for f in QGEMM_FORMATS} | {
    f"{f}_qmma_staged_t" for f in QMMA_STAGED_FORMATS
}
SWAPPED_BUILTINS = sorted(set(BUILTINS) - FORMATS) + ["iq1s_qgemm_t", "iq2xs_qmma_staged_t"]
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d*)?(?:[eE][+-]?\d+)?(?![\w.])")
TYPE = re.compile(rf"(?<![\w.])(?:ph\.)?({'|'.join(TYPES)})\b")
BUILTIN_CALL = re.compile(
    rf"(?<![\w])(?:ph\.)?({'|'.join(sorted(BUILTINS, key=len)[::-1])})(?=\s*[(<])"
)
CTX = re.compile(rf"\bctx\.({'|'.join(CTX_FIELDS)})\b(\.[xyz]\b)?")
SIGNATURE = re.compile(r"\b(?:kernel|fn|def)\s+\w+\s*\(")
# Attributes a mutant grows, in `.ph` spelling; `@ph.` is put in front for Python.
ADDED_ATTRIBUTES = [
    "persistent", "dynshared", "padstage", "pipeline", "tensorcore", "tensorcore('wmma')",
    "launch(1024)", "launch(33)", "launch(0)", "launch(2048)", "launch(128, 4)",
    "launch(256, 1, 32)", "registers(acc)", "cluster(2)", "aligned(N = 64)", "readonly",
    "fast_math", "pipeline(stages = 3)", "autotune(BLOCK in [16, 32])",
]  # fmt: skip
ADDED_ARGUMENTS = ["0", "1", "-1", "65536", "x", "T", "N", "'wmma'", "stages = 2", "acc"]


def _code(text: str, suffix: str) -> list[tuple[int, int]]:
    """The ranges of `text` that are Phobos code, comments cut off: every line of a
    `.ph`, and in a `.py` the lines from a `@ph.` decorator to the end of its def."""
    ranges = []
    inside = suffix == ".ph"
    at = 0
    for line in text.split("\n"):
        if suffix == ".py":
            if line.startswith("@ph."):
                inside = True
            elif line and not line[0].isspace() and not line.startswith(("def ", ")")):
                inside = False
        if inside:
            cut = line.find("//" if suffix == ".ph" else "#")
            ranges.append((at, at + (len(line) if cut < 0 else cut)))
        at += len(line) + 1
    return ranges


def _pick(rng, pattern: re.Pattern, text: str, suffix: str) -> re.Match | None:
    """A random match of `pattern` inside the code of `text`, or None."""
    ranges = _code(text, suffix)
    found = [
        m
        for m in pattern.finditer(text)
        if any(start <= m.start() and m.end() <= end for start, end in ranges)
    ]
    return rng.choice(found) if found else None


def _replace(text: str, m: re.Match, new: str, group: int = 0) -> str:
    return text[: m.start(group)] + new + text[m.end(group) :]


def _change_number(rng, text, suffix):
    m = _pick(rng, NUMBER, text, suffix)
    if m is None:
        return text
    new = rng.choice([n for n in NUMBERS if n != m.group()])
    if "." in m.group() and rng.random() < 0.5:
        new += ".0"
    return _replace(text, m, new)


def _swap_type(rng, text, suffix):
    m = _pick(rng, TYPE, text, suffix)
    if m is None:
        return text
    return _replace(text, m, rng.choice([t for t in TYPES if t != m.group(1)]), 1)


def _swap_builtin(rng, text, suffix):
    m = _pick(rng, BUILTIN_CALL, text, suffix)
    if m is None:
        return text
    name = m.group(1)
    alike = [b for b in SWAPPED_BUILTINS if BUILTINS[b][0] == BUILTINS[name][0] and b != name]
    if not alike or rng.random() < 0.4:  # one of another arity, now and then
        alike = [b for b in SWAPPED_BUILTINS if b != name]
    return _replace(text, m, rng.choice(alike), 1)


def _swap_ctx_field(rng, text, suffix):
    m = _pick(rng, CTX, text, suffix)
    if m is None:
        return text
    field = rng.choice([f for f in CTX_FIELDS if f != m.group(1)])
    axis = f".{rng.choice('xyz')}" if CTX_FIELDS[field] else ""
    if rng.random() < 0.15:  # an axis where none goes, or none where one must
        axis = "" if axis else m.group(2) or ".x"
    return _replace(text, m, f"ctx.{field}{axis}")


def _balanced(text: str, at: int) -> str:
    """The text from the bracket at `at` to the one that closes it."""
    depth = 0
    for k in range(at, len(text)):
        depth += {"(": 1, ")": -1}.get(text[k], 0)
        if depth == 0:
            return text[at : k + 1]
    return text[at:]


def _names(text: str) -> tuple[list[str], list[str]]:
    """The parameter names and the shape names (extents, and the names an attribute
    binds) of every signature in `text`."""
    params, shapes = set(), set()
    for m in SIGNATURE.finditer(text):
        signature = _balanced(text, m.end() - 1)
        params |= set(re.findall(r"[(,]\s*(\w+)\s*:", signature))
        for extents in re.findall(r"[>\]]\s*\[([^\[\]]*)\]", signature):
            shapes |= {w for w in re.findall(r"\b[A-Za-z_]\w*\b", extents) if w != "ph"}
    shapes |= set(re.findall(r"\b([A-Z]\w*)\s*(?:in\s*\[|=\s*\[)", text))
    return sorted(params), sorted(shapes - params)


def _swap_shape_and_parameter(rng, text, suffix):
    params, shapes = _names(text)
    if not params or not shapes:
        return text
    old, new = (params, shapes) if rng.random() < 0.5 else (shapes, params)
    pattern = re.compile(rf"(?<![\w.])({'|'.join(old)})\b")
    m = _pick(rng, pattern, text, suffix)
    return text if m is None else _replace(text, m, rng.choice(new))


def _split_arguments(args: str) -> list[str]:
    """`args` cut at its top-level commas."""
    parts, depth, start = [], 0, 0
    for k, ch in enumerate(args):
        depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(args[start:k])
            start = k + 1
    return [*parts, args[start:]]


def _python_argument(arg: str) -> str:
    """An added argument as Python spells it: `stages = 2` -> `stages=2`."""
    return re.sub(r"\s*=\s*", "=", re.sub(r"(\w+) in \[", r"\1=[", arg))


def _edit_attribute(rng, text, suffix):
    prefix = "@ph." if suffix == ".py" else "@"
    pattern = re.compile(rf"^[ \t]*{re.escape(prefix)}(\w+)(?:\(([^()\n]*)\))?", re.M)
    m = _pick(rng, pattern, text, suffix)
    if m is None:
        return text
    roll = rng.random()
    if roll < 0.15 or m.group(1) in ("kernel", "fn"):  # a new attribute beside it
        grown = rng.choice(ADDED_ATTRIBUTES)
        if suffix == ".py":
            grown = re.sub(r"\((.*)\)", lambda a: f"({_python_argument(a.group(1))})", grown)
        line = prefix + grown + "\n"
        if m.group(1) == "kernel":  # `@ph.kernel` stays the outermost decorator
            end = text.index("\n", m.end()) + 1 if "\n" in text[m.end() :] else len(text)
            return text[:end] + line + text[end:]
        return text[: m.start()] + line + text[m.start() :]
    if roll < 0.25:  # gone
        end = text.find("\n", m.end())
        return text[: m.start()] + (text[end + 1 :] if end >= 0 else "")
    if m.group(2) is None:  # bare: give it arguments
        added = rng.choice(ADDED_ARGUMENTS)
        return _replace(text, m, f"{m.group(0)}({added})")
    args = m.group(2)
    if roll < 0.3:
        return _replace(text, m, "", 2)  # `@launch()`
    if roll < 0.35:
        return text[: m.start(2) - 1] + text[m.end(2) + 1 :]  # `@launch`
    parts = _split_arguments(args)
    k = rng.randrange(len(parts))
    if roll < 0.5:
        del parts[k]
    elif roll < 0.6:
        parts.insert(k, parts[k])
    elif roll < 0.7:
        added = rng.choice(ADDED_ARGUMENTS)
        parts.insert(
            rng.randint(0, len(parts)),
            " " + _python_argument(added) if suffix == ".py" else " " + added,
        )
    else:  # a number or a name inside one argument changed
        words = list(re.finditer(r"\b\w+\b", parts[k]))
        if not words:
            return text
        w = rng.choice(words)
        if w.group().isdigit() or rng.random() < 0.5:
            new = rng.choice(NUMBERS)
        else:
            params, shapes = _names(text)
            new = rng.choice([*params, *shapes, "wmma", "BLOCK", "x"])
        parts[k] = parts[k][: w.start()] + new + parts[k][w.end() :]
    return _replace(text, m, ",".join(parts).lstrip(), 2)


SEMANTIC_KINDS = {
    "numbers": _change_number,
    "types": _swap_type,
    "builtins": _swap_builtin,
    "ctx-fields": _swap_ctx_field,
    "shape-parameter": _swap_shape_and_parameter,
    "attribute": _edit_attribute,
}


def _chain(rng, text, suffix):
    """Two or three semantic mutations, one after another."""
    for _ in range(rng.randint(2, 3)):
        text = SEMANTIC_KINDS[rng.choice(sorted(SEMANTIC_KINDS))](rng, text, suffix)
    return text


SEMANTIC = {
    suffix: {
        kind: functools.partial(f, suffix=suffix)
        for kind, f in {**SEMANTIC_KINDS, "semantic-chain": _chain}.items()
    }
    for suffix in (".ph", ".py")
}
