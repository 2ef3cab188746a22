"""What the checker needs to know of a `fn` before inlining it.

>>> from phobos.source import SourceFile
>>> from phobos.syntax.parser import parse
>>> p, _ = parse(SourceFile("f.ph", "fn f(a, t) { let x = a * W\\n t[0] = x }"))
>>> sorted(free_names(p.items[0])), sorted(written_params(p.items[0]))
(['W'], ['t'])
"""

from __future__ import annotations

from phobos.names import BUILTINS, SCALARS
from phobos.syntax import ast


def free_names(fn: ast.Function) -> dict[str, ast.Name]:
    """The names `fn`'s body reads that it does not bind, each at its first read."""
    out: dict[str, ast.Name] = {}
    bound = [set(p.id for p in fn.params)]

    def is_bound(name: str) -> bool:
        return any(name in scope for scope in bound)

    def expr(e) -> None:
        if isinstance(e, ast.Name):
            if not is_bound(e.id) and e.id not in out:
                out[e.id] = e
        elif isinstance(e, ast.Call):
            if isinstance(e.func, ast.Name):
                if is_bound(e.func.id) and e.func.id not in out:
                    pass
            else:
                expr(e.func)
            for a in e.args:
                expr(a)
            for c in e.config:
                if c.key != "over":
                    expr(c.value)
        else:
            for child in ast.children(e):
                if isinstance(child, ast.ConfigItem):
                    continue
                expr(child)

    def block(b: ast.Block) -> None:
        bound.append(set())
        for s in b.stmts:
            stmt(s)
        bound.pop()

    def stmt(s) -> None:
        if isinstance(s, (ast.Let, ast.Var)):
            if s.value is not None:
                expr(s.value)
            bound[-1].add(s.name.id)
        elif isinstance(s, ast.Assign):
            expr(s.target)
            expr(s.value)
        elif isinstance(s, ast.For):
            for e in (s.lo, s.hi, s.step, s.unroll):
                if e is not None:
                    expr(e)
            bound.append({s.var.id})
            block(s.body)
            bound.pop()
        elif isinstance(s, ast.While):
            expr(s.cond)
            block(s.body)
        elif isinstance(s, ast.If):
            expr(s.cond)
            block(s.then)
            if isinstance(s.orelse, ast.Block):
                block(s.orelse)
            elif s.orelse is not None:
                stmt(s.orelse)
        elif isinstance(s, ast.ExprStmt):
            expr(s.expr)

    if isinstance(fn.body, ast.Block):
        block(fn.body)
    else:
        expr(fn.body)
    return out


def reads_from_caller(fn: ast.Function, module_fns: set[str]) -> dict[str, ast.Name]:
    """The free names that must come from the caller: not built-ins, types or fns."""
    skip = set(BUILTINS) | set(SCALARS) | module_fns
    return {k: v for k, v in free_names(fn).items() if k not in skip}


def written_params(fn: ast.Function) -> dict[str, ast.Node]:
    """The parameters `fn`'s body indexes or assigns, each at its first such use."""
    params = {p.id for p in fn.params}
    out: dict[str, ast.Node] = {}
    if not isinstance(fn.body, ast.Block):
        return out
    for node in ast.walk(fn.body):
        if isinstance(node, ast.Assign):
            target = node.target
            base = target.base if isinstance(target, ast.Index) else target
            if isinstance(base, ast.Name) and base.id in params and base.id not in out:
                out[base.id] = target
        elif isinstance(node, ast.Index):
            if isinstance(node.base, ast.Name) and node.base.id in params:
                out.setdefault(node.base.id, node)
    return out


def is_python(node: ast.Node) -> bool:
    """Whether `node` was spelled in Python (its file is a `.py`)."""
    return node.span.source.name.endswith(".py")
