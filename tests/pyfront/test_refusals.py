"""Every Python construct without a Phobos counterpart is refused at its own line,
with its code and a message naming it; translation goes on past each refusal."""

from __future__ import annotations

import pytest
from pyfront_helpers import line_of, py

# (kernel body or whole module, code, message fragment). The line marked `#<` is
# where the error must be; a case that starts with `@` is a whole module body.
CASES = [
    ("y: ph.let = x ** 2  #<", "E0101", "`**` is not an operator"),
    ("y: ph.let = x @ x  #<", "E0101", "`@` is not an operator"),
    ("x **= 2.0  #<", "E0101", "`**=`"),
    ("y: ph.let = x is x  #<", "E0101", "`is` is not an operator"),
    ("y: ph.let = x is not x  #<", "E0101", "`is not` is not an operator"),
    ("y: ph.let = x in A  #<", "E0101", "`in` is not an operator"),
    ("y: ph.let = x not in A  #<", "E0101", "`not in` is not an operator"),
    ("y: ph.let = +x  #<", "E0101", "unary `+`"),
    ("y: ph.let = x if n else 0.0  #<", "E0102", "conditional expressions"),
    ("y: ph.let = lambda: 1  #<", "E0102", "lambdas"),
    ("y: ph.let = [i for i in A]  #<", "E0102", "list comprehensions"),
    ("y: ph.let = {i for i in A}  #<", "E0102", "set comprehensions"),
    ("y: ph.let = {i: i for i in A}  #<", "E0102", "dict comprehensions"),
    ("y: ph.let = ph.sum(i for i in A)  #<", "E0102", "generator expressions"),
    ("if (y := x):  #<\n    pass", "E0102", "`:=`"),
    ("y: ph.let = (x, x)  #<", "E0103", "tuples"),
    ("y: ph.let = [x, x]  #<", "E0103", "lists"),
    ("y: ph.let = {1: x}  #<", "E0103", "dicts"),
    ("y: ph.let = {x}  #<", "E0103", "sets"),
    ("y: ph.let = 'text'  #<", "E0104", "strings"),
    ("y: ph.let = f'{x}'  #<", "E0104", "f-strings"),
    ("y: ph.let = b'x'  #<", "E0104", "bytes"),
    ("y: ph.let = None  #<", "E0104", "`None`"),
    ("y: ph.let = 1j  #<", "E0104", "complex"),
    ("...  #<", "E0104", "`...`"),
    ("x = 1.0\n'a stray string'  #<", "E0104", "strings"),
    ("with open(x):  #<\n    pass", "E0105", "`with`"),
    ("try:  #<\n    pass\nexcept Exception:\n    pass", "E0105", "`try`"),
    ("raise ValueError(x)  #<", "E0105", "`raise`"),
    ("assert x  #<", "E0105", "`assert`"),
    ("del x  #<", "E0105", "`del`"),
    ("global x  #<", "E0105", "`global`"),
    ("import math  #<", "E0105", "`import` inside a kernel"),
    ("from math import exp  #<", "E0105", "`import` inside a kernel"),
    ("def inner():  #<\n    pass", "E0105", "a def inside a kernel"),
    ("class C:  #<\n    pass", "E0105", "a class inside a kernel"),
    ("for i in range(3):\n    pass\nelse:  #<\n    pass", "E0106", "`for` ... `else`"),
    ("while x < 1.0:\n    x += 1.0\nelse:  #<\n    pass", "E0106", "`while` ... `else`"),
    ("a, b = x, x  #<", "E0107", "tuple unpacking"),
    ("a = b = x  #<", "E0107", "chained assignment"),
    ("x.real = 1.0  #<", "E0107", "cannot assign to an attribute"),
    ("y: ph.f32 = x  #<", "E0108", "must be `ph.let` or `ph.var`"),
    ("y: int = 1  #<", "E0108", "must be `ph.let` or `ph.var`"),
    ("y: ph.let  #<", "E0108", "`ph.let` needs a value"),
    ("y: ph.var  #<", "E0108", "`ph.var` without a value needs a type"),
    ("A[0]: ph.let = x  #<", "E0108", "only a name can be declared"),
    ("return x  #<", "E0109", "a kernel cannot return a value"),
    ("y: ph.let = A[::2]  #<", "E0118", "slice steps"),
    ("y: ph.let = A[:+4]  #<", "E0118", "`:+` needs a start"),
    ("y: ph.let = ph.foo(x)  #<", "E0112", "`phobos.lang` has no `foo`"),
    ("y: ph.let = ph.softmax(x)  #<", "E0112", "`phobos.lang` has no `softmax`"),
    ("y: ph.let = x.real  #<", "E0113", "attribute access"),
    ("y: ph.let = ph.ctx.bogus  #<", "E0113", "`ph.ctx` has no field `bogus`"),
    ("y: ph.let = ph.ctx.block.w  #<", "E0113", "has no axis `w`"),
    ("y: ph.let = ph.ctx.lane.x  #<", "E0113", "`ph.ctx.lane` has no axes"),
    ("y: ph.let = ph.ctx.block  #<", "E0113", "is read along an axis"),
    ("y: ph.let = ph.ctx  #<", "E0119", "`ph.ctx` is read only through its fields"),
    ("y: ph.let = ph  #<", "E0119", "`ph` is the `phobos.lang` module"),
    ("y: ph.let = ph.let  #<", "E0119", "`ph.let` is not a value"),
    ("y: ph.let = ph.kernel(x)  #<", "E0119", "`ph.kernel` is not a value"),
    ("y: ph.let = ph.unroll(2, x)  #<", "E0119", "`ph.unroll` is only written in a loop header"),
    ("y: ph.let = ph.exp(x, base=2)  #<", "E0114", "`ph.exp` takes no keyword arguments"),
    ("y: ph.let = twice(x, k=2)  #<", "E0114", "`twice` takes no keyword arguments"),
    ("y: ph.let = ph.sum(x, bogus=2)  #<", "E0114", "`bogus` does not configure `ph.sum`"),
    ("y: ph.let = twice(*A)  #<", "E0102", "`*` unpacking"),
    ("y: ph.let = ph.sum(x, **opts)  #<", "E0114", "`**` unpacking"),
    ("for i in A:  #<\n    pass", "E0117", "runs over `range(...)`"),
    ("for i, j in range(3):  #<\n    pass", "E0117", "a loop variable is one name"),
    ("for i in range():  #<\n    pass", "E0117", "one to three arguments"),
    ("for i in range(1, 2, 3, 4):  #<\n    pass", "E0117", "one to three arguments"),
    ("for i in ph.unroll(range(4)):  #<\n    pass", "E0117", "`ph.unroll` takes a count"),
    ("let: ph.let = 1  #<", "E0120", "`let` is a keyword in Phobos"),
    ("ctx = 1  #<", "E0120", "`ctx` is a keyword in Phobos"),
    ("yield x  #<", "E0102", "`yield`"),
    ("for i in range(3):\n    await x  #<", "E0102", "`await`"),
    ("match x:  #<\n    case 1:\n        pass", "E0105", "`match`"),
    # parameters, decorators and items
    ("@ph.kernel\ndef k(*args):  #<\n    pass", "E0110", "`*args` parameters"),
    ("@ph.kernel\ndef k(**kw):  #<\n    pass", "E0110", "`**kw` parameters"),
    ("@ph.kernel\ndef k(a: ph.f32 = 1.0):  #<\n    pass", "E0110", "parameter defaults"),
    ("@ph.kernel\ndef k(*, a: ph.f32):  #<\n    pass", "E0110", "keyword-only"),
    ("@ph.kernel\ndef k(a: ph.f32, /):  #<\n    pass", "E0110", "positional-only"),
    ("@ph.kernel\ndef k(a):  #<\n    pass", "E0110", "kernel parameter `a` needs a type"),
    ("@ph.fn\ndef f(a: ph.f32):  #<\n    return a", "E0110", "a fn parameter takes no type"),
    ("@ph.kernel\ndef k(a: int):  #<\n    pass", "E0111", "not a Phobos type"),
    ("@ph.kernel\ndef k(a: ph.tensor[ph.f32]):  #<\n    pass", "E0111", "needs dimensions"),
    ("@ph.kernel\ndef k(a: ph.tensor[int][N]):  #<\n    pass", "E0111", "element type"),
    ("@ph.kernel\ndef k(a: ph.tensor[ph.f32][N + 1]):  #<\n    pass", "E0111", "a dimension"),
    ("@ph.kernel\ndef k(a: ph.tensr[ph.f32][N]):  #<\n    pass", "E0112", "has no `tensr`"),
    ("@ph.kernel\ndef k(a: 'ph.f32'):  #<\n    pass", "E0111", "not a Phobos type"),
    (
        "@ph.kernel\n@staticmethod  #<\ndef k():\n    pass",
        "E0115",
        "`@staticmethod` is not a Phobos",
    ),
    ("@ph.kernel\n@ph.exp  #<\ndef k():\n    pass", "E0115", "`ph.exp` is not an attribute"),
    ("@ph.kernel\n@ph.fn  #<\ndef k():\n    pass", "E0115", "either a `@ph.kernel` or a `@ph.fn`"),
    ("@ph.fn\n@ph.pipeline  #<\ndef f():\n    pass", "E0115", "a fn takes no attributes"),
    ("@ph.pipeline  #<\ndef f():\n    pass", "E0115", "applies only to a `@ph.kernel`"),
    ("@ph.kernel  #<\nclass K:\n    pass", "E0115", "applies to a function"),
    ("@ph.kernel  #<\nasync def k():\n    pass", "E0115", "cannot be `async`"),
    ("@ph.kernel(block=4)  #<\ndef k():\n    pass", "E0115", "has no option `block`"),
    ("@ph.kernel(key='M')  #<\ndef k():\n    pass", "E0115", "`key` is a tuple of names"),
    ("@ph.fn(uses=(W,))  #<\ndef f():\n    pass", "E0115", "`uses` is a tuple of names"),
    ("@ph.fn(using=('W',))  #<\ndef f():\n    pass", "E0115", "`ph.fn` has no option `using`"),
    ("@ph.kernel\n@ph.aligned(M=TILE_M)  #<\ndef k():\n    pass", "E0116", "written as a string"),
    ("@ph.kernel\n@ph.launch(2 * 128)  #<\ndef k():\n    pass", "E0116", "a literal"),
    ("@ph.kernel\n@ph.autotune(X=[32, 'a'])  #<\ndef k():\n    pass", "E0116", "lists integers"),
    ("@ph.kernel\n@ph.autotune(X=(32, 64))  #<\ndef k():\n    pass", "E0116", "lists integers"),
    ("@ph.kernel\n@ph.autotune(X=[])  #<\ndef k():\n    pass", "E0116", "lists integers"),
    ("@ph.kernel(('M',))  #<\ndef k():\n    pass", "E0115", "takes its options by keyword"),
    ("@ph.kernel\ndef fn():  #<\n    pass", "E0120", "`fn` is a keyword in Phobos"),
    (
        "@ph.fn\ndef f(a):\n    b: ph.let = a\n    return b  #<",
        "E0109",
        "a statement fn cannot return",
    ),
]


def _module(case: str) -> str:
    if case.startswith("@"):
        return case + "\n"
    body = "\n".join("    " + line for line in case.splitlines())
    return "@ph.kernel\ndef k(A: ph.tensor[ph.f32][N], x: ph.f32, n: ph.i32):\n" + body + "\n"


@pytest.mark.parametrize("case, code, fragment", CASES, ids=lambda v: str(v)[:40])
def test_refused_at_its_line(case, code, fragment):
    text = _module(case)
    from pyfront_helpers import HEADER

    marked = (
        HEADER.count("\n")
        + 1
        + text.splitlines().index(next(line for line in text.splitlines() if line.endswith("#<")))
    )
    _, diags = py(text)
    hits = [d for d in diags if d.code == code and fragment in d.message]
    assert hits, [(d.code, d.message, line_of(d)) for d in diags]
    assert line_of(hits[0]) == marked, [(d.code, d.message, line_of(d)) for d in diags]
    assert all(d.severity == "error" for d in diags)
    assert all(d.help for d in hits)


HELPS = [
    ("y: ph.let = x ** 2", "use `ph.pow(a, b)`"),
    ("y: ph.let = x @ x", "use `ph.dot(a, b)`"),
    ("y: ph.let = x if n else 0.0", "use `ph.where(c, a, b)`"),
    ("y: ph.let = ph.ex(x)", "did you mean `ph.exp`?"),
    ("y: ph.let = ph.shfl(x, form_=1)", "`from_`"),
]


@pytest.mark.parametrize("case, help_text", HELPS)
def test_help_names_the_fix(case, help_text):
    _, diags = py(_module(case))
    assert any(help_text in h for d in diags for h in d.help), [d.help for d in diags]


def test_every_independent_error_in_one_run():
    _, diags = py(
        """
        @ph.kernel
        def k(x: ph.f32, *rest):
            a: ph.let = x ** 2 + x ** 3
            b: ph.let = x if x else lambda: 0
            with x:
                c: ph.let = 'inner'
            return x

        @ph.fn
        def f(a=1):
            return [a]
        """
    )
    codes = [d.code for d in diags]
    assert codes.count("E0101") == 2  # both `**`
    assert codes.count("E0102") == 2  # the conditional and the lambda inside it
    assert "E0105" in codes and "E0104" in codes  # `with`, and the string inside it
    assert "E0109" in codes and codes.count("E0110") == 2
    assert "E0103" in codes  # the fn's list
    # Each error at its own line: 2 (`*rest`), 3 (both `**`), 4, 5, 6, 7, 10, 11.
    assert sorted({line_of(d) - 5 for d in diags}) == [2, 3, 4, 5, 6, 7, 10, 11]


def test_bare_assignment_is_not_refused_here():
    """`x = e` on an undeclared name is an assignment; the checker refuses it later."""
    _, diags = py("@ph.kernel\ndef k():\n    undeclared = 1\n")
    assert diags == []


def test_a_refused_kernel_still_appears_with_the_others():
    program, diags = py(
        """
        @ph.kernel
        def bad():
            y: ph.let = 1 ** 2

        @ph.kernel
        def good():
            pass
        """
    )
    assert [item.name.id for item in program.items] == ["bad", "good"]
    assert [d.code for d in diags] == ["E0101"]


def test_deep_nesting_is_a_diagnostic_not_a_crash():
    expr = "-" * 3000 + "x"
    program, diags = py(f"@ph.kernel\ndef k(x: ph.f32):\n    y: ph.let = {expr}\n")
    assert diags and all(d.span is not None for d in diags)


def test_every_code_has_an_explanation():
    from phobos.diagnostics import codes
    from phobos.pyfront import spellings

    used = {row.code for row in spellings.REFUSALS.values()} | {spellings.SYNTAX}
    assert used <= set(spellings.CODES)
    for code in spellings.CODES:
        assert code in codes.known_codes(), f"{code} has no explain/{code}.md"
        assert "E0100" <= code <= "E0199"
