"""Helpers for the checker's tests: check a `.ph` or Python source, find a diagnostic."""

from __future__ import annotations

from phobos.pyfront.translate import translate_module
from phobos.sema import hir
from phobos.sema.check import check_kernel, check_program
from phobos.source import SourceFile
from phobos.syntax.parser import parse

PY_HEADER = "from __future__ import annotations\n\nimport phobos.lang as ph\n\n"


def program_of(source: str, name: str):
    if name.endswith(".py"):
        program, diags = translate_module(SourceFile(name, PY_HEADER + source))
    else:
        program, diags = parse(SourceFile(name, source))
    assert not diags, [d.message for d in diags]
    return program


def check(source: str, name: str = "k.ph", **kw):
    """Every kernel of `source` checked: (kernels, diagnostics)."""
    return check_program(program_of(source, name), **kw)


def check_one(source: str, kernel: str, name: str = "k.ph", **kw):
    return check_kernel(program_of(source, name), kernel, **kw)


def line_of(diag) -> int:
    return diag.primary.span.source.line_col(diag.primary.span.start)[0]


def marked_line(source: str, name: str) -> int:
    """The line (in the checked file) carrying the marker `<-` in a comment."""
    offset = PY_HEADER.count("\n") if name.endswith(".py") else 0
    for number, line in enumerate(source.split("\n"), start=1):
        if "<-" in line:
            return number + offset
    raise AssertionError("no `<-` marker in the source")


def assert_refused(source: str, code: str, fragment: str, name: str = "k.ph", **kw):
    """`source` gives an error `code` containing `fragment` on its `<-` line."""
    _, diags = check(source, name, **kw)
    want = marked_line(source, name)
    found = [(d.code, d.message, line_of(d)) for d in diags if d.primary is not None]
    assert any(c == code and fragment in m and line == want for c, m, line in found), (
        f"wanted {code} {fragment!r} at line {want}, got {found}"
    )
    return diags


def assert_clean(source: str, name: str = "k.ph", **kw):
    kernels, diags = check(source, name, **kw)
    assert not diags, [(d.code, d.message, line_of(d) if d.primary else None) for d in diags]
    return kernels


def dump(kernels) -> str:
    return "\n".join(hir.dump(k) for k in kernels)


def syms(kernel: hir.Kernel):
    """Every Sym bound in `kernel`'s body, in order."""
    out = []

    def walk(node):
        if isinstance(node, (hir.Let, hir.VarDecl)):
            out.append(node.sym)
        elif isinstance(node, hir.For):
            out.append(node.var)
            walk(node.body)
        elif isinstance(node, hir.Block):
            for s in node.stmts:
                walk(s)
        elif isinstance(node, hir.While):
            walk(node.body)
        elif isinstance(node, hir.If):
            walk(node.then)
            if node.orelse is not None:
                walk(node.orelse)

    walk(kernel.body)
    return out
