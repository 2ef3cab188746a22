"""The Python spelling of a Phobos program (what `ph2py` prints).

`print_python` writes a complete module in the spellings of PYTHON.md: every
`Function` as a `@ph.fn` def, every `Kernel` as a `@ph.kernel` def with its
attributes as `@ph.name(...)` decorators. The Python front end reads the module
back to a tree equal to the one printed (spans aside).

    >>> from phobos.source import SourceFile
    >>> from phobos.syntax import ast
    >>> s = SourceFile("k.ph", "").span(0, 0)
    >>> n = lambda i: ast.Name(i, span=s)
    >>> body = ast.Block((ast.Assign(n("x"), "=", ast.Unary("!", n("b"), span=s), span=s),), span=s)
    >>> prog = ast.Program((ast.Kernel((), n("k"), (), body, span=s),), span=s)
    >>> print(print_python(prog), end="")
    from __future__ import annotations
    <BLANKLINE>
    import phobos.lang as ph
    <BLANKLINE>
    <BLANKLINE>
    @ph.kernel
    def k():
        x = not b

Python ranks its operators differently from Phobos, so parentheses are placed
from Python's table, not copied from the `.ph` text:

* comparisons chain in Python (`a < b < c`, `a == b < c`), so a comparison that
  is an operand of another comparison is always parenthesized;
* Phobos `!` binds tightest, Python `not` binds looser than comparisons, so
  `!a == b` prints as `(not a) == b`;
* `s :+ (a + b)` keeps its parentheses, since `s:+a + b` reads as `(+a) + b`.

The module imports phobos.lang as `ph`, or as `ph_` when the program itself names
something `ph` (see `module_alias`). A fn of `.ph` text lists the names it reads
from its caller in `@ph.fn(uses=(...))`, found by `free_names`.

A program that Python cannot spell (a name that is a Python keyword, a positional
attribute argument after a keyword one, a keyword given twice) raises
`PySpellingError`, which carries the span of the offending node.
"""

from __future__ import annotations

import keyword
import math
import re

from phobos.diagnostics.diagnostic import Diagnostic, Label
from phobos.names import BUILTINS, SCALARS
from phobos.source import Span
from phobos.syntax import ast

INDENT = "    "
# Wrap a def's parameters one per line past this width (ruff's line length).
LINE_WIDTH = 100

HEADER = "from __future__ import annotations\n\nimport phobos.lang as ph\n"


class PySpellingError(ValueError):
    """The program has no Python spelling; `span` is the node that has none.

    `to_diagnostic()` reports it as the other stages report theirs, for `ph2py`.
    """

    def __init__(self, message: str, span: Span | None, help: str = ""):
        super().__init__(message)
        self.message = message
        self.span = span
        self.help = help

    def to_diagnostic(self, code: str | None = None) -> Diagnostic:
        label = Label(self.span, "no Python spelling") if self.span is not None else None
        return Diagnostic.error(code, self.message, label, help=self.help or ())


def print_python(program: ast.Program) -> str:
    """The Python module that spells `program`, ending in one newline.

        >>> from phobos.source import SourceFile
        >>> from phobos.syntax.parser import parse
        >>> program, _ = parse(SourceFile("f.ph", "fn f(a) = !a == W"))
        >>> print(print_python(program)[len(HEADER) + 2 :], end="")
        @ph.fn(uses=("W",))
        def f(a):
            return (not a) == W

    Raises `PySpellingError` for a program Python cannot spell (see the module doc).
    """
    own_fns = {item.name.id for item in program.items if isinstance(item, ast.Function)}
    alias = module_alias(program)
    chunks = [HEADER.replace("as ph\n", f"as {alias}\n")]
    for item in program.items:
        printer = _Printer(own_fns, alias)
        if isinstance(item, ast.Function):
            printer.function(item)
        else:
            printer.kernel(item)
        chunks.append("\n\n" + "\n".join(printer.lines) + "\n")
    return "".join(chunks)


def module_alias(program: ast.Program) -> str:
    """The name to import `phobos.lang` as: `ph`, unless the program names `ph` itself.

    A kernel parameter or a fn called `ph` would hide the module, so the import
    takes the first of `ph_`, `ph__`, ... that the program does not name.
    """
    names = {node.id for node in ast.walk(program) if isinstance(node, ast.Name)}
    for item in program.items:
        if isinstance(item, ast.Function) and item.uses:
            names.update(item.uses)
    alias = "ph"
    while alias in names:
        alias += "_"
    return alias


def print_python_expr(expr: ast.Expr, own_fns: frozenset[str] | set[str] = frozenset()) -> str:
    """One expression in its Python spelling, e.g. `ph.exp(x) / l`."""
    return _Printer(set(own_fns)).expr(expr)


# ---------------------------------------------------------------------------
# Operator ranks in Python, loosest first (the Python reference, "Operator precedence").

_PY_OR, _PY_AND, _PY_NOT, _PY_CMP = 1, 2, 3, 4
_PY_UNARY = 11  # unary - and ~
_PY_ATOM = 13  # names, literals, calls, subscripts, attribute reads

_PY_BINARY: dict[str, tuple[int, str]] = {
    "||": (_PY_OR, "or"),
    "&&": (_PY_AND, "and"),
    "==": (_PY_CMP, "=="), "!=": (_PY_CMP, "!="),
    "<": (_PY_CMP, "<"), "<=": (_PY_CMP, "<="), ">": (_PY_CMP, ">"), ">=": (_PY_CMP, ">="),
    "|": (5, "|"),
    "^": (6, "^"),
    "&": (7, "&"),
    "<<": (8, "<<"), ">>": (8, ">>"),
    "+": (9, "+"), "-": (9, "-"),
    "*": (10, "*"), "/": (10, "/"), "%": (10, "%"),
}  # fmt: skip

_INT_OPS = frozenset(("+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>"))
_INT_CONVERSIONS = frozenset(("i8", "i32", "i64"))
# A Python float literal without underscores: a point or an exponent, so never an int.
_PY_FLOAT = re.compile(r"(\d+\.\d*|\.\d+)([eE][+-]?\d+)?|\d+[eE][+-]?\d+")


def _prec(expr: ast.Expr) -> int:
    if isinstance(expr, ast.Binary):
        return _PY_BINARY[expr.op][0]
    if isinstance(expr, ast.Unary):
        return _PY_NOT if expr.op == "!" else _PY_UNARY
    return _PY_ATOM


class _Printer:
    """Prints one item; `lines` collects its text."""

    def __init__(self, own_fns: set[str], ph: str = "ph"):
        self.own_fns = own_fns
        self.ph = ph  # the name the module imports phobos.lang as
        self.lines: list[str] = []
        # Names this item binds only to integers, for choosing `//` (see `_is_int`).
        self.int_names: set[str] = set()

    # -- items --------------------------------------------------------------

    def function(self, fn: ast.Function) -> None:
        # A `.ph` fn reads its caller's names silently; Python lists them (PYTHON.md
        # "Spellings": `@ph.fn(uses=("W", "C"))`), so they are found from the body.
        uses = fn.uses if fn.uses is not None else free_names(fn, self.own_fns)
        if fn.uses is None and not uses:
            self.lines.append(f"@{self.ph}.fn")
        else:
            for use in uses:
                self._check_ident(use, fn.name.span)
            names = ", ".join(f'"{u}"' for u in uses)
            if len(uses) == 1:
                names += ","
            self.lines.append(f"@{self.ph}.fn(uses=({names}))")
        params = [self.ident(p) for p in fn.params]
        self._def(self.ident(fn.name), params)
        if isinstance(fn.body, ast.Block):
            self._collect_ints(fn.body, fn.params)
            self.block(fn.body, 1)
        else:
            self.lines.append(INDENT + "return " + self.expr(fn.body))

    def kernel(self, k: ast.Kernel) -> None:
        self.lines.append(f"@{self.ph}.kernel")
        for attr in k.attrs:
            self.lines.append(self.attribute(attr))
        params = [f"{self.ident(p.name)}: {self.type(p.type)}" for p in k.params]
        self._def(self.ident(k.name), params)
        self._collect_ints(k.body, (), k)
        self.block(k.body, 1)

    def _def(self, name: str, params: list[str]) -> None:
        line = f"def {name}({', '.join(params)}):"
        if len(line) <= LINE_WIDTH or not params:
            self.lines.append(line)
            return
        self.lines.append(f"def {name}(")
        self.lines.extend(f"{INDENT}{p}," for p in params)
        self.lines.append("):")

    def attribute(self, attr: ast.Attribute) -> str:
        head = f"@{self.ph}." + self.ident(attr.name)
        if attr.args is None:
            return head
        parts: list[str] = []
        seen_keyword: set[str] = set()
        for arg in attr.args:
            if isinstance(arg, ast.PositionalArg):
                if seen_keyword:
                    raise PySpellingError(
                        f"`@{attr.name.id}` has a positional argument after a keyword one, "
                        "which Python cannot spell",
                        arg.span,
                        "write the positional arguments first",
                    )
                parts.append(self.attr_literal(arg.value))
                continue
            key = self.ident(arg.name)
            if key in seen_keyword:
                raise PySpellingError(
                    f"`@{attr.name.id}` names `{key}` twice, which Python cannot spell",
                    arg.span,
                    f"give `{key}` once",
                )
            seen_keyword.add(key)
            if isinstance(arg, ast.SearchDim):
                values = ", ".join(self.expr(v) for v in arg.values)
                parts.append(f"{key}=[{values}]")
            else:
                parts.append(f"{key}={self.attr_literal(arg.value)}")
        return f"{head}({', '.join(parts)})"

    def attr_literal(self, value: ast.Expr) -> str:
        # PYTHON.md "Spellings": in an attribute, a name is a string.
        if isinstance(value, ast.Name):
            return f'"{value.id}"'
        return self.expr(value)

    # -- types --------------------------------------------------------------

    def type(self, t: ast.Type) -> str:
        if isinstance(t, ast.ScalarType):
            return f"{self.ph}.{t.name}"
        kind = "tensor" if isinstance(t, ast.TensorType) else "tile"
        dims = ", ".join(self.expr(d) for d in t.dims)
        return f"{self.ph}.{kind}[{self.ph}.{t.elem.name}][{dims}]"

    # -- statements ---------------------------------------------------------

    def block(self, block: ast.Block, depth: int) -> None:
        if not block.stmts:
            self.lines.append(INDENT * depth + "pass")
        for stmt in block.stmts:
            self.stmt(stmt, depth)

    def stmt(self, s: ast.Stmt, depth: int) -> None:
        pad = INDENT * depth
        emit = self.lines.append
        if isinstance(s, (ast.Let, ast.Var)):
            decl = f"{self.ph}.let" if isinstance(s, ast.Let) else f"{self.ph}.var"
            if s.type is not None:
                decl += f"[{self.type(s.type)}]"
            text = f"{pad}{self.ident(s.name)}: {decl}"
            if s.value is not None:
                text += " = " + self.expr(s.value)
            emit(text)
        elif isinstance(s, ast.Assign):
            op = "//=" if s.spelling == "//=" else s.op
            emit(f"{pad}{self.expr(s.target)} {op} {self.expr(s.value)}")
        elif isinstance(s, ast.For):
            bounds = [self.expr(s.lo), self.expr(s.hi)]
            if s.step is not None:
                bounds.append(self.expr(s.step))
            iterable = f"range({', '.join(bounds)})"
            if s.unroll is not None:
                iterable = f"{self.ph}.unroll({self.expr(s.unroll)}, {iterable})"
            emit(f"{pad}for {self.ident(s.var)} in {iterable}:")
            self.block(s.body, depth + 1)
        elif isinstance(s, ast.While):
            emit(f"{pad}while {self.expr(s.cond)}:")
            self.block(s.body, depth + 1)
        elif isinstance(s, ast.If):
            self._if(s, depth, "if")
        elif isinstance(s, ast.Break):
            emit(pad + "break")
        elif isinstance(s, ast.Continue):
            emit(pad + "continue")
        elif isinstance(s, ast.Return):
            emit(pad + "return")
        elif isinstance(s, ast.ExprStmt):
            emit(pad + self.expr(s.expr))
        else:
            raise TypeError(f"not a statement: {type(s).__name__}")

    def _if(self, s: ast.If, depth: int, keyword_: str) -> None:
        pad = INDENT * depth
        self.lines.append(f"{pad}{keyword_} {self.expr(s.cond)}:")
        self.block(s.then, depth + 1)
        if isinstance(s.orelse, ast.If):
            # `else if` is `elif`; an `else { if .. }` block stays `else:` + a nested `if`.
            self._if(s.orelse, depth, "elif")
        elif isinstance(s.orelse, ast.Block):
            self.lines.append(pad + "else:")
            self.block(s.orelse, depth + 1)

    # -- expressions --------------------------------------------------------

    def expr(self, e: ast.Expr) -> str:
        if isinstance(e, ast.Int):
            return str(e.value)
        if isinstance(e, ast.Float):
            return _float_text(e)
        if isinstance(e, ast.Bool):
            return "True" if e.value else "False"
        if isinstance(e, ast.Name):
            return self.ident(e)
        if isinstance(e, ast.Ctx):
            return f"{self.ph}.ctx.{e.field}" + (f".{e.axis}" if e.axis else "")
        if isinstance(e, ast.Unary):
            return self._unary(e)
        if isinstance(e, ast.Binary):
            return self._binary(e)
        if isinstance(e, ast.Call):
            return self._call(e)
        if isinstance(e, ast.Index):
            subs = ", ".join(self._subscript(s) for s in e.subscripts)
            return f"{self._operand(e.base, _PY_ATOM)}[{subs}]"
        raise TypeError(f"not an expression: {type(e).__name__}")

    def _operand(self, e: ast.Expr, least: int) -> str:
        """`e`, parenthesized unless it binds at least as tightly as `least`."""
        text = self.expr(e)
        return text if _prec(e) >= least else f"({text})"

    def _unary(self, e: ast.Unary) -> str:
        if e.op == "!":
            # `not` binds looser than comparisons: its operand needs parentheses only
            # when it is an `and` or an `or`.
            return "not " + self._operand(e.operand, _PY_NOT)
        # A unary of a unary keeps its parentheses, as the `.ph` grammar (one prefix
        # operator) writes it: `-(-x)`.
        inner = self.expr(e.operand)
        if _prec(e.operand) < _PY_ATOM:
            inner = f"({inner})"
        return e.op + inner

    def _binary(self, e: ast.Binary) -> str:
        # A left-nested run of one rank, `a + b - c + ..`, prints without parentheses
        # and is walked in a loop, so a long sum does not recurse once per term.
        rank = _PY_BINARY[e.op][0]
        spine = [e]
        while rank != _PY_CMP and isinstance(spine[-1].left, ast.Binary):
            if _PY_BINARY[spine[-1].left.op][0] != rank:
                break
            spine.append(spine[-1].left)
        text = self._binary_side(spine[-1].left, rank, left=True)
        for node in reversed(spine):
            op = _PY_BINARY[node.op][1]
            if node.op == "/" and self._floor_division(node):
                op = "//"
            text += f" {op} {self._binary_side(node.right, rank, left=False)}"
        return text

    def _binary_side(self, e: ast.Expr, rank: int, left: bool) -> str:
        if rank == _PY_CMP:
            # Python chains comparisons: `a < b < c` is not `(a < b) < c`, so any
            # comparison (or looser) operand of a comparison is parenthesized.
            return self._operand(e, _PY_CMP + 1)
        return self._operand(e, rank if left else rank + 1)

    def _floor_division(self, e: ast.Binary) -> bool:
        """Whether `/` prints as `//`.

        A tree from Python keeps the spelling its source used. A tree from `.ph` has
        none, and whether `/` divides integers is decided by types, which the printer
        does not have: it writes `//` only when both operands are plainly integers
        (literals, `ctx` fields, integer conversions, names bound only to those, loop
        variables and shape names) and `/` otherwise. Either spelling reads back to
        the same tree; a wrong `/` of integers is refused later by the compiler.
        """
        if e.spelling is not None:
            return e.spelling == "//"
        return self._is_int(e.left) and self._is_int(e.right)

    def _is_int(self, e: ast.Expr) -> bool:
        # A loop over a work list, not recursion: a long sum is a deep tree.
        pending = [e]
        while pending:
            e = pending.pop()
            if isinstance(e, (ast.Int, ast.Ctx)):
                continue
            if isinstance(e, ast.Name):
                if e.id not in self.int_names:
                    return False
            elif isinstance(e, ast.Unary) and e.op != "!":
                pending.append(e.operand)
            elif isinstance(e, ast.Binary) and e.op in _INT_OPS:
                pending += (e.left, e.right)
            elif not (
                isinstance(e, ast.Call)
                and isinstance(e.func, ast.Name)
                and e.func.id in _INT_CONVERSIONS
                and e.func.id not in self.own_fns
            ):
                return False
        return True

    def _call(self, e: ast.Call) -> str:
        if isinstance(e.func, ast.Name):
            name = self.ident(e.func)
            if name not in self.own_fns and (name in BUILTINS or name in SCALARS):
                name = f"{self.ph}.{name}"
        else:
            name = self._operand(e.func, _PY_ATOM)
        args = [self.expr(a) for a in e.args]
        if e.config and isinstance(e.func, ast.Name) and e.func.id in self.own_fns:
            # Python spells a configuration as keywords of a `ph.` built-in; a fn of the
            # program has none (the checker refuses it, but the printer must not guess).
            raise PySpellingError(
                f"the fn `{e.func.id}` is called with a `<...>` configuration, which Python "
                "cannot spell",
                e.span,
                f"drop the `<...>`, or rename the fn `{e.func.id}`",
            )
        seen: set[str] = set()
        for item in e.config:
            # `from` is a Python keyword; phobos.lang spells it `from_`.
            key = "from_" if item.key == "from" else item.key
            if key in seen:
                raise PySpellingError(
                    f"`{item.key}` is given twice, which Python cannot spell",
                    item.span,
                    f"give `{item.key}` once",
                )
            seen.add(key)
            args.append(f"{key}={self.expr(item.value)}")
        return f"{name}({', '.join(args)})"

    def _subscript(self, s: ast.Subscript) -> str:
        if isinstance(s, ast.Point):
            return self.expr(s.index)
        if isinstance(s, ast.SliceLen):
            # `:+n` is Python's slice with a unary `+` upper bound, which binds tighter
            # than any binary operator: `s:+(a + b)`, not `s:+a + b`.
            return f"{self.expr(s.start)}:+{self._operand(s.length, _PY_UNARY)}"
        start = "" if s.start is None else self.expr(s.start)
        stop = "" if s.stop is None else self.expr(s.stop)
        return f"{start}:{stop}"

    # -- names --------------------------------------------------------------

    def ident(self, name: ast.Name) -> str:
        self._check_ident(name.id, name.span)
        return name.id

    @staticmethod
    def _check_ident(text: str, span: Span | None) -> None:
        if keyword.iskeyword(text) or not text.isidentifier():
            raise PySpellingError(
                f"`{text}` is a Python keyword and cannot name anything in the Python spelling",
                span,
                f"rename `{text}`; Python reserves it",
            )

    def _collect_ints(
        self, body: ast.Block, params: tuple[ast.Name, ...], kernel: ast.Kernel | None = None
    ) -> None:
        """Fill `int_names`: names this item binds only to plain integers.

        Shape names and @autotune constants are integers; so are loop variables and
        lets/vars of an integer value. A name also bound to anything else, anywhere
        in the item, is left out: the printer does not track scopes.
        """
        ints: set[str] = set()
        others: set[str] = {p.id for p in params}
        if kernel is not None:
            for attr in kernel.attrs:
                for arg in attr.args or ():
                    if isinstance(arg, ast.SearchDim):
                        ints.add(arg.name.id)
            for p in kernel.params:
                if isinstance(p.type, ast.ScalarType) and p.type.name in _INT_CONVERSIONS:
                    ints.add(p.name.id)
                else:
                    others.add(p.name.id)
                if isinstance(p.type, (ast.TensorType, ast.TileType)):
                    ints.update(d.id for d in p.type.dims if isinstance(d, ast.Name))
        # One pass in source order: a binding's value may only read names bound before.
        for node in ast.walk(body):
            if isinstance(node, ast.For):
                ints.add(node.var.id)
            elif isinstance(node, (ast.Let, ast.Var)):
                self.int_names = ints - others
                plain = node.type is None or (
                    isinstance(node.type, ast.ScalarType) and node.type.name in _INT_CONVERSIONS
                )
                if plain and node.value is not None and self._is_int(node.value):
                    ints.add(node.name.id)
                else:
                    others.add(node.name.id)
            elif isinstance(node, ast.Assign) and isinstance(node.target, ast.Name):
                self.int_names = ints - others
                if not self._is_int(node.value):
                    others.add(node.target.id)
        self.int_names = ints - others


def free_names(
    fn: ast.Function, own_fns: set[str] | frozenset[str] = frozenset()
) -> tuple[str, ...]:
    """The names `fn` reads from its caller, in order of first use.

    Every name that is not a parameter, not bound by the body before it is read (a
    let, a var or a loop variable in an enclosing block), not a built-in called
    as one and not a fn of the program (`own_fns`).

        >>> from phobos.source import SourceFile
        >>> s = SourceFile("f.ph", "").span(0, 0)
        >>> body = ast.Binary("*", ast.Name("a", span=s), ast.Name("W", span=s), span=s)
        >>> free_names(ast.Function(ast.Name("f", span=s), (ast.Name("a", span=s),), body, span=s))
        ('W',)
    """
    found: dict[str, None] = {}

    def read(name: str, scopes: list[set[str]]) -> None:
        if name not in own_fns and not any(name in scope for scope in scopes):
            found.setdefault(name)

    def expr(e: ast.Node, scopes: list[set[str]]) -> None:
        nodes = list(ast.walk(e))
        # A built-in called by name is `ph.name`, not a name of the caller.
        callees = {
            id(n.func)
            for n in nodes
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name)
            and (n.func.id in BUILTINS or n.func.id in SCALARS)
        }
        for n in nodes:
            if isinstance(n, ast.Name) and id(n) not in callees:
                read(n.id, scopes)

    def block(b: ast.Block, scopes: list[set[str]]) -> None:
        scopes = [*scopes, set()]
        for s in b.stmts:
            if isinstance(s, (ast.Let, ast.Var)):
                for child in (s.type, s.value):
                    if child is not None:
                        expr(child, scopes)
                scopes[-1].add(s.name.id)
            elif isinstance(s, ast.For):
                for child in (s.lo, s.hi, s.step, s.unroll):
                    if child is not None:
                        expr(child, scopes)
                block(s.body, [*scopes, {s.var.id}])
            elif isinstance(s, ast.While):
                expr(s.cond, scopes)
                block(s.body, scopes)
            elif isinstance(s, ast.If):
                branch: ast.If | ast.Block | None = s
                while isinstance(branch, ast.If):
                    expr(branch.cond, scopes)
                    block(branch.then, scopes)
                    branch = branch.orelse
                if branch is not None:
                    block(branch, scopes)
            else:
                expr(s, scopes)

    params = [{p.id for p in fn.params}]
    if isinstance(fn.body, ast.Block):
        block(fn.body, params)
    else:
        expr(fn.body, params)
    return tuple(found)


def _float_text(e: ast.Float) -> str:
    """The literal as written when Python reads it to the same value, else `repr`."""
    text = e.text
    if text and _PY_FLOAT.fullmatch(text):
        try:
            if float(text) == e.value:
                return text
        except ValueError:
            pass
    if math.isinf(e.value) and e.value > 0:
        return "1e999"  # the literal past an f64: Python reads it as inf
    if not math.isfinite(e.value):
        raise PySpellingError(f"the float `{e.value}` has no literal", e.span)
    return repr(e.value)
