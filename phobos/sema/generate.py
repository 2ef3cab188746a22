"""`generate(f)`: the value of a statement fn's last bare expression.

SPEC.md only names `generate`, and PYTHON.md says a statement fn's last bare
expression is "the value a generate takes". The reading here: `f` is a statement
fn of the module with no parameters whose last statement is a bare expression;
`generate(f)` runs f's other statements, spliced in before the statement that
holds the `generate` (with fresh bindings, as any inlining), and is that
expression's value. A `generate` in a `while` condition is spliced before the
`while`, so it runs once.

    >>> from phobos.sema.check import check_program
    >>> from phobos.source import SourceFile
    >>> from phobos.syntax.parser import parse
    >>> p, _ = parse(SourceFile("k.ph", '''
    ... fn three() {
    ...   let a = 1 + 2
    ...   a
    ... }
    ... kernel k(x: tensor<i32>[N]) {
    ...   x[0] = generate(three)
    ... }'''))
    >>> kernels, _ = check_program(p)
    >>> from phobos.sema import hir
    >>> print(hir.dump(kernels[0].body))
    {
      {
        let a: i32 = 3
      }
      x[0] = a
    }
"""

from __future__ import annotations

from phobos.sema import hir
from phobos.sema.scope import Scope
from phobos.syntax import ast

E_GENERATE = "E0326"


def check_generate(ck, call: ast.Call, scope) -> hir.Expr:
    """`generate(f)` for the `KernelChecker` `ck`: f's statements go to `ck.pending`."""
    from phobos.sema.body import Bail

    if call.config:
        ck.error("E0320", "`generate` takes no `<...>` configuration", call.config[0], "here")
        raise Bail
    if len(call.args) != 1:
        n = len(call.args)
        ck.error(
            "E0310",
            f"`generate` takes 1 argument but {n} {'were' if n != 1 else 'was'} given",
            call,
            f"{n} given",
            help="pass the fn whose value it takes: `generate(f)`",
        )
        raise Bail
    f = call.args[0]
    if not isinstance(f, ast.Name) or f.id not in ck.fns or scope.lookup(f.id) is not None:
        ck.error(
            E_GENERATE,
            "`generate` takes a fn of this module",
            f,
            "not a fn",
            help="name a statement fn whose last statement is a bare expression",
        )
        raise Bail
    fn = ck.fns[f.id]
    name = fn.name.id
    if not isinstance(fn.body, ast.Block):
        ck.error(
            E_GENERATE,
            f"`generate` takes a statement fn, and `{name}` is an expression fn",
            f,
            "an expression fn",
            help=f"call it directly: `{name}({', '.join(p.id for p in fn.params)})`",
        )
        raise Bail
    if fn.params:
        n = len(fn.params)
        ck.error(
            E_GENERATE,
            f"`generate` takes a fn with no parameters, and `{name}` has {n}",
            f,
            f"takes ({', '.join(p.id for p in fn.params)})",
            help="a fn reads its caller's names at the call; drop the parameters",
        )
        raise Bail
    stmts = fn.body.stmts
    if not stmts or not isinstance(stmts[-1], ast.ExprStmt):
        ck.error(
            E_GENERATE,
            f"fn `{name}` does not end in a bare expression, so `generate` has no value to take",
            f,
            "no last expression",
            help=f"end `{name}` with the expression whose value `generate({name})` is",
        )
        raise Bail
    names = [n for n, _ in ck.fn_stack]
    if name in names:
        chain = names[names.index(name) :] + [name]
        ck.error(
            "E0256",
            f"fn `{name}` calls itself" + ("" if len(chain) == 2 else " through other fns"),
            call,
            "recursive call",
            notes=[f"the call chain: {' -> '.join(f'`{n}`' for n in chain)}"],
            help="a fn is inlined at every call, so it cannot recurse; write a loop",
        )
        raise Bail
    ck.check_uses(fn)
    inner = Scope(scope)  # f's own bindings never meet the caller's
    ck.fn_stack.append((name, call))
    ck.chain = ck.chain + (id(call),)
    ck.frames.append({"loops": 0, "fn": name})
    saved = ck.pending
    try:
        body = ck.block(ast.Block(stmts[:-1], span=fn.body.span), inner)
        ck.pending = []  # a `generate` inside the last expression runs after f's statements
        value = ck.expr(stmts[-1].expr, inner)
        after = ck.pending
    finally:
        ck.pending = saved
        ck.frames.pop()
        ck.fn_stack.pop()
        ck.chain = ck.chain[:-1]
    ck.pending.append(hir.Block(body.stmts + tuple(after), span=call.span))
    return value
