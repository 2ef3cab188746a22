"""Python expressions and types -> Phobos `Expr` and `Type` nodes, with refusals.

`ExpressionTranslator` is the half of an item's translation that needs no
statement context: literals, names and `ph.<name>`, `ph.ctx` fields, operators
(with `/` and `//` both Phobos's `/`, their spelling kept), chained comparisons,
calls with their collective configuration, subscripts, and the type annotations
of parameters and declarations. A refused expression is reported and replaced by
a `Name("<error>")`, so translation goes on.

    >>> import ast
    >>> from phobos.pyfront.reader import ImportScope, Positions
    >>> from phobos.source import SourceFile
    >>> text = "import phobos.lang as ph\\n0 < ph.ctx.lane < 8\\n"
    >>> tree = ast.parse(text)
    >>> t = ExpressionTranslator(Positions(SourceFile("m.py", text)), ImportScope().with_imports(tree.body))
    >>> e = t.expr(tree.body[1].value)
    >>> e.op, e.left.right, t.diagnostics
    ('&&', Ctx(field='lane', axis=None), [])
"""

from __future__ import annotations

import ast as py
import difflib

from phobos.diagnostics import Diagnostic
from phobos.diagnostics.habits import TRITON_MODULES, habit
from phobos.names import BUILTINS, CTX_AXES, CTX_FIELDS, SCALARS, all_names
from phobos.pyfront import spellings
from phobos.pyfront.reader import MODULE, ImportScope, Positions
from phobos.pyfront.spellings import refuse
from phobos.source import Span
from phobos.syntax import ast as ph

# Phobos keywords Python lets a program use as names (SPEC.md "Lexical"), and `ctx`.
RESERVED_WORDS = frozenset(("kernel", "fn", "let", "var", "true", "false", "ctx"))

BINARY_OPS: dict[type, str] = {
    py.Add: "+", py.Sub: "-", py.Mult: "*", py.Div: "/", py.FloorDiv: "/", py.Mod: "%",
    py.LShift: "<<", py.RShift: ">>", py.BitOr: "|", py.BitXor: "^", py.BitAnd: "&",
}  # fmt: skip
_COMPARE_OPS: dict[type, str] = {
    py.Eq: "==", py.NotEq: "!=", py.Lt: "<", py.LtE: "<=", py.Gt: ">", py.GtE: ">=",
}  # fmt: skip
_UNARY_OPS: dict[type, str] = {py.USub: "-", py.Invert: "~", py.Not: "!"}

ERROR_NAME = "<error>"  # stands in for a refused expression, so translation goes on


class ExpressionTranslator:
    """Translates the expressions and types of one item; collects its diagnostics."""

    def __init__(self, positions: Positions, scope: ImportScope):
        self.pos = positions
        self.scope = scope
        self.diagnostics: list[Diagnostic] = []

    # -- helpers -------------------------------------------------------------

    def span(self, node: py.AST) -> Span:
        return self.pos.span(node)

    def refuse(self, row: str, span: Span, **fields: str) -> None:
        self.diagnostics.append(refuse(row, span, **fields))

    def error_expr(self, span: Span) -> ph.Name:
        return ph.Name(ERROR_NAME, span=span)

    def ident(self, name: str, span: Span) -> ph.Name:
        """A name the program binds or reads, refused if Phobos reserves it."""
        if name in RESERVED_WORDS:
            self.refuse("reserved", span, name=name)
        return ph.Name(name, span=span)

    # -- types ---------------------------------------------------------------

    def type(self, node: py.expr) -> ph.Type:
        span = self.span(node)
        name = self.scope.lang_name(node)
        if name in SCALARS:
            return ph.ScalarType(name, span=span)
        if isinstance(node, py.Subscript):
            inner = node.value
            if isinstance(inner, py.Subscript):
                kind = self.scope.lang_name(inner.value)
                if kind in ("tensor", "tile"):
                    elem = self.scalar(inner.slice, kind)
                    dims = tuple(self.dim(d) for d in _elements(node.slice))
                    cls = ph.TensorType if kind == "tensor" else ph.TileType
                    return cls(elem, dims, span=span)
            kind = self.scope.lang_name(inner)
            if kind in ("tensor", "tile"):
                self.scalar(node.slice, kind)
                self.refuse("needs_dims", span, kind=kind)
                return ph.ScalarType("f32", span=span)
        base = node
        while isinstance(base, py.Subscript):
            base = base.value
        name = self.scope.lang_name(base)
        foreign = self.triton_habit(base)
        if name is not None and name != MODULE and name not in all_names():
            self.refuse("unknown", self.span(base), name=name, help=suggest(name))
        elif foreign is not None:
            self.refuse("foreign", span, name=py.unparse(base), help=foreign)
        else:
            self.refuse("not_a_type", span)
        return ph.ScalarType("f32", span=span)

    def scalar(self, node: py.expr, kind: str) -> ph.ScalarType:
        span = self.span(node)
        name = self.scope.lang_name(node)
        if name in SCALARS:
            return ph.ScalarType(name, span=span)
        self.refuse("elem_type", span, kind=kind)
        return ph.ScalarType("f32", span=span)

    def dim(self, node: py.expr) -> ph.Name | ph.Int:
        span = self.span(node)
        if isinstance(node, py.Name) and self.scope.lang_name(node) is None:
            return self.ident(node.id, span)
        if isinstance(node, py.Constant) and type(node.value) is int:
            return ph.Int(node.value, span=span)
        self.refuse("bad_dim", span)
        return ph.Int(1, span=span)

    # -- expressions ---------------------------------------------------------

    def expr(self, e: py.expr) -> ph.Expr:
        span = self.span(e)
        if isinstance(e, py.Constant):
            return self.constant(e, span)
        if isinstance(e, py.Name):
            return self.name(e, span)
        if isinstance(e, py.Attribute):
            return self.attribute_read(e, span)
        if isinstance(e, py.BinOp):
            return self.binop(e, span)
        if isinstance(e, py.UnaryOp):
            return self.unary(e, span)
        if isinstance(e, py.BoolOp):
            return self.boolop(e)
        if isinstance(e, py.Compare):
            return self.compare(e)
        if isinstance(e, py.Call):
            return self.call(e, span)
        if isinstance(e, py.Subscript):
            return self.subscript(e)
        if type(e) in spellings.COMPREHENSIONS:
            self.refuse("comprehension", span, what=spellings.COMPREHENSIONS[type(e)])
        elif isinstance(e, (py.Yield, py.YieldFrom)):
            self.refuse("yield", span, what="yield" if isinstance(e, py.Yield) else "yield from")
        elif type(e) in spellings.EXPRESSION_ROWS:
            self.refuse(spellings.EXPRESSION_ROWS[type(e)], span)
            # The parts are still read, so their own errors are reported in this run.
            for part in _parts(e):
                self.expr(part)
        else:
            self.refuse("expression", span)
        return self.error_expr(span)

    def constant(self, e: py.Constant, span: Span) -> ph.Expr:
        value = e.value
        if isinstance(value, bool):
            return ph.Bool(value, span=span)
        if isinstance(value, int):
            return ph.Int(value, span=span)
        if isinstance(value, float):
            return ph.Float(value, text=float_text(span.text), span=span)
        row = {str: "string", bytes: "bytes", complex: "complex"}.get(type(value))
        if row is None:
            row = "none" if value is None else "ellipsis"
        self.refuse(row, span)
        return self.error_expr(span)

    def name(self, e: py.Name, span: Span) -> ph.Expr:
        lang = self.scope.lang_name(e)
        if lang == MODULE:
            self.refuse("module_value", span, name=e.id)
            return self.error_expr(span)
        if lang is not None:
            return self.lang_value(lang, span)
        return self.ident(e.id, span)

    def lang_value(self, name: str, span: Span) -> ph.Expr:
        """`ph.<name>` read as a value: a built-in or a type's name is a `Name`."""
        if name in BUILTINS or name in SCALARS:
            return ph.Name(name, span=span)
        if name not in all_names():
            self.refuse("unknown", span, name=name, help=suggest(name))
        elif name == "ctx":
            self.refuse("ctx_alone", span)
        elif name == "unroll":
            self.refuse("unroll_outside", span)
        else:
            self.refuse("not_a_value", span, name=name, help=_not_a_value_help(name))
        return self.error_expr(span)

    def attribute_read(self, e: py.Attribute, span: Span) -> ph.Expr:
        lang = self.scope.lang_name(e)
        if lang == MODULE:
            self.refuse("module_value", span, name=py.unparse(e))
            return self.error_expr(span)
        if lang is not None:
            return self.lang_value(lang, span)
        if self.scope.lang_name(e.value) == "ctx":
            return self.ctx(e.attr, None, span)
        inner = e.value
        if isinstance(inner, py.Attribute) and self.scope.lang_name(inner.value) == "ctx":
            return self.ctx(inner.attr, e.attr, span)
        foreign = self.triton_habit(e)
        if foreign is not None:
            self.refuse("foreign", span, name=py.unparse(e), help=foreign)
        else:
            self.refuse("attribute", span)
        return self.error_expr(span)

    def triton_habit(self, node: py.expr) -> str | None:
        """The help for Triton's `tl.name` (or `triton.language.name`, or a bare `name`
        where Phobos reads a type), when `name` is one Triton kernels write."""
        if isinstance(node, py.Name) and self.scope.lang_name(node) is None:
            return habit(node.id, python=True, triton_only=True)
        if not isinstance(node, py.Attribute):
            return None
        base = node.value
        while isinstance(base, py.Attribute) and base.attr in TRITON_MODULES:
            base = base.value
        if isinstance(base, py.Name) and base.id in TRITON_MODULES:
            if self.scope.lang_name(base) is None:
                return habit(node.attr, python=True, triton_only=True)
        return None

    def ctx(self, name: str, axis: str | None, span: Span) -> ph.Expr:
        if name not in CTX_FIELDS:
            fields = ", ".join(f"`{f}`" for f in CTX_FIELDS)
            self.refuse("ctx_field", span, name=name, fields=fields)
        elif axis is None and CTX_FIELDS[name]:
            self.refuse("ctx_needs_axis", span, field=name)
        elif axis is not None and not CTX_FIELDS[name]:
            self.refuse("ctx_no_axis", span, field=name)
        elif axis is not None and axis not in CTX_AXES:
            self.refuse("ctx_axis", span, field=name, name=axis)
        return ph.Ctx(name, axis, span=span)

    def binop(self, e: py.BinOp, span: Span) -> ph.Expr:
        left = self.expr(e.left)
        right = self.expr(e.right)
        if isinstance(e.op, py.Pow):
            self.refuse("pow", self.pos.token_between("**", e.left, e.right))
            return self.error_expr(span)
        if isinstance(e.op, py.MatMult):
            self.refuse("matmul", self.pos.token_between("@", e.left, e.right))
            return self.error_expr(span)
        op = BINARY_OPS[type(e.op)]
        if isinstance(e.op, py.Div):
            return ph.Binary(op, left, right, spelling="/", span=span)
        if isinstance(e.op, py.FloorDiv):
            return ph.Binary(op, left, right, spelling="//", span=span)
        return ph.Binary(op, left, right, span=span)

    def unary(self, e: py.UnaryOp, span: Span) -> ph.Expr:
        operand = self.expr(e.operand)
        if isinstance(e.op, py.UAdd):
            self.refuse("uadd", self.pos.source.span(span.start, span.start + 1))
            return operand
        return ph.Unary(_UNARY_OPS[type(e.op)], operand, span=span)

    def boolop(self, e: py.BoolOp) -> ph.Expr:
        op = "&&" if isinstance(e.op, py.And) else "||"
        result = self.expr(e.values[0])
        for value in e.values[1:]:
            right = self.expr(value)
            result = ph.Binary(op, result, right, span=self.pos.between(e.values[0], value))
        return result

    def compare(self, e: py.Compare) -> ph.Expr:
        """`a < b < c` is `a < b && b < c`: each middle operand is read twice."""
        operands = [e.left, *e.comparators]
        exprs = [self.expr(o) for o in operands]
        result: ph.Expr | None = None
        for i, op in enumerate(e.ops):
            left, right = operands[i], operands[i + 1]
            span = self.pos.between(left, right)
            if type(op) in _COMPARE_OPS:
                part: ph.Expr = ph.Binary(_COMPARE_OPS[type(op)], exprs[i], exprs[i + 1], span=span)
            else:
                self.refuse_compare(op, left, right)
                part = self.error_expr(span)
            if result is None:
                result = part
            else:
                result = ph.Binary("&&", result, part, span=self.pos.between(e.left, right))
        assert result is not None
        return result

    def refuse_compare(self, op: py.cmpop, left: py.expr, right: py.expr) -> None:
        first, second, text, row = {
            py.Is: ("is", None, "is", "is"),
            py.IsNot: ("is", "not", "is not", "is"),
            py.In: ("in", None, "in", "in"),
            py.NotIn: ("not", "in", "not in", "in"),
        }[type(op)]
        span = self.pos.token_between(first, left, right, word=True)
        if second is not None:
            end = self.pos.find(second, span.end, self.span(right).start, word=True)
            if end is not None:
                span = span.to(end)
        self.refuse(row, span, op=text)

    def call(self, e: py.Call, span: Span) -> ph.Expr:
        lang = self.scope.lang_name(e.func)
        fspan = self.span(e.func)
        configured = False
        if lang is not None and lang != MODULE and (lang in BUILTINS or lang in SCALARS):
            func: ph.Expr = ph.Name(lang, span=fspan)
            callee = f"ph.{lang}"
            configured = lang in ph.CONFIGURED_CALLS
        else:
            func = self.expr(e.func)
            callee = py.unparse(e.func)
        args: list[ph.Expr] = []
        for arg in e.args:
            if isinstance(arg, py.Starred):
                self.refuse("starred", self.span(arg))
                continue
            args.append(self.expr(arg))
        config: list[ph.ConfigItem] = []
        for kw in e.keywords:
            kspan = self.span(kw)
            if kw.arg is None:
                self.refuse("kwargs", kspan)
                self.expr(kw.value)
                continue
            value = self.expr(kw.value)
            if not configured:
                self.refuse("keyword", kspan, callee=callee)
                continue
            # `from` is a Python keyword, so phobos.lang spells it `from_`.
            key = "from" if kw.arg == "from_" else kw.arg
            if key not in ph.CONFIG_KEYS or kw.arg == "from":
                keys = ", ".join(f"`{'from_' if k == 'from' else k}`" for k in ph.CONFIG_KEYS)
                self.refuse("config_key", kspan, key=kw.arg, callee=callee, keys=keys)
                continue
            config.append(ph.ConfigItem(key, value, span=kspan))
        return ph.Call(func, tuple(args), tuple(config), span=span)

    def subscript(self, e: py.Subscript) -> ph.Expr:
        base = self.expr(e.value)
        elements = _elements(e.slice)
        if not elements:
            self.refuse("tuple", self.span(e.slice))
        subs = tuple(self.subscript_part(part) for part in elements)
        return ph.Index(base, subs, span=self.span(e))

    def subscript_part(self, node: py.expr) -> ph.Subscript:
        span = self.span(node)
        if isinstance(node, py.Slice):
            if node.step is not None:
                self.refuse("slice_step", self.span(node.step))
            upper = node.upper
            if isinstance(upper, py.UnaryOp) and isinstance(upper.op, py.UAdd):
                # Python reads `s:+n` as a slice up to `+n`: that is Phobos's `s :+ n`.
                length = self.expr(upper.operand)
                if node.lower is None:
                    self.refuse("slice_len_start", span)
                    return ph.SliceLen(self.error_expr(span), length, span=span)
                return ph.SliceLen(self.expr(node.lower), length, span=span)
            lower = self.expr(node.lower) if node.lower is not None else None
            stop = self.expr(upper) if upper is not None else None
            return ph.Slice(lower, stop, span=span)
        if isinstance(node, py.Starred):
            self.refuse("starred", span)
            return ph.Point(self.error_expr(span), span=span)
        return ph.Point(self.expr(node), span=span)


def _elements(node: py.expr) -> list[py.expr]:
    """The parts of a subscript: `A[i, j]` has two, `A[i]` one."""
    return list(node.elts) if isinstance(node, py.Tuple) else [node]


def _parts(e: py.expr) -> list[py.expr]:
    """The sub-expressions of a refused expression, still checked for their own errors."""
    if isinstance(e, py.IfExp):
        return [e.test, e.body, e.orelse]
    if isinstance(e, (py.Tuple, py.List, py.Set)):
        return [x for x in e.elts if not isinstance(x, py.Starred)]
    if isinstance(e, py.NamedExpr):
        return [e.value]
    if isinstance(e, py.Dict):
        return [x for x in [*e.keys, *e.values] if x is not None]
    return []


def float_text(text: str) -> str:
    """A Python float literal as `.ph` writes one: no `_`, a digit before the point."""
    text = text.replace("_", "")
    return "0" + text if text.startswith(".") else text


def suggest(name: str) -> str:
    """The help for a `ph.name` that `phobos.lang` lacks: what Phobos writes for a name
    of Triton's or Python's, else the closest name it has."""
    said = habit(name, python=True)
    if said is not None:
        return said
    close = difflib.get_close_matches(name, all_names(), n=1)
    return f"did you mean `ph.{close[0]}`?" if close else ""


def _not_a_value_help(name: str) -> str:
    if name in ("let", "var"):
        return f"declare a local with an annotation: `x: ph.{name} = e`"
    if name in ("tensor", "tile"):
        return f"`ph.{name}[...]` is written only as a type annotation"
    if name in ("kernel", "fn"):
        return f"`ph.{name}` is written only as a decorator"
    return f"an attribute is written as a decorator: `@ph.{name}`"
