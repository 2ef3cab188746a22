"""The canonical `.ph` text of an AST, and the span map of that text.

    >>> from phobos.source import SourceFile
    >>> from phobos.syntax.parser import parse
    >>> prog, _ = parse(SourceFile("k.ph", "fn f(a,b)=(a+b)*-(a)\\n"))
    >>> print(print_program(prog), end="")
    fn f(a, b) = (a + b) * -a

The canonical form: two spaces of indentation, one statement per line, one
attribute per line, a blank line between items, a space around every binary and
assignment operator, and only the parentheses the precedence needs (every binary
operator is left-associative, so a right operand of equal precedence keeps them).
Printing then parsing gives an equal AST.

Any node prints alone (an expression, a statement, a type, a subscript), which is
what a diagnostic quotes. `print_mapped` also returns, for every node it printed,
the output bytes it occupies and the node's own span: the Python front end prints
the `.ph` of a kernel this way and keeps the entries as its span map.
"""

from __future__ import annotations

import re

from phobos.source import Span
from phobos.syntax import ast

INDENT = "  "

# A float spelling the lexer reads back as a float (SPEC.md `float`).
_FLOAT_TEXT = re.compile(r"[0-9]+(\.[0-9]*([eE][+-]?[0-9]+)?|[eE][+-]?[0-9]+)\Z")

# Binding power of a postfix form (call, subscript) and of an atom: tighter than unary.
_POSTFIX = ast.UNARY_PRECEDENCE + 1
# The value inside `<...>` is read above the comparisons (see parser.CONFIG_VALUE_PREC).
_CONFIG_VALUE = ast.PRECEDENCE["|"]


def float_text(node: ast.Float) -> str:
    """The spelling of a float literal: the user's own when the lexer accepts it.

    >>> from phobos.source import SourceFile
    >>> s = SourceFile("x", "").span(0, 0)
    >>> float_text(ast.Float(1e30, span=s)), float_text(ast.Float(2.0, "2.", span=s))
    ('1e+30', '2.')
    """
    if node.text and _FLOAT_TEXT.match(node.text):
        return node.text
    text = repr(float(node.value))
    if text == "inf":
        return "1e999"  # rounds to infinity when read back
    return text


class _Printer:
    def __init__(self):
        self.parts: list[str] = []
        self.pos = 0  # bytes written so far
        self.entries: list[tuple[int, int, Span]] = []
        self.level = 0

    def write(self, text: str) -> None:
        self.parts.append(text)
        self.pos += len(text.encode("utf-8"))

    def text(self) -> str:
        return "".join(self.parts)

    def mark(self, node: ast.Node, start: int) -> None:
        span = getattr(node, "span", None)
        if span is not None:
            self.entries.append((start, self.pos, span))

    def newline(self) -> None:
        self.write("\n" + INDENT * self.level)

    # -- dispatch ------------------------------------------------------------

    def node(self, node: ast.Node) -> None:
        """Print any node, recording its output range."""
        start = self.pos
        if isinstance(node, _EXPRS):
            self.expr(node, 0)
            return  # `expr` records its own entry
        method = getattr(self, "p_" + type(node).__name__, None)
        if method is None:
            raise TypeError(f"cannot print {type(node).__name__}")
        method(node)
        self.mark(node, start)

    def join(self, nodes, sep: str = ", ") -> None:
        for k, item in enumerate(nodes):
            if k:
                self.write(sep)
            self.node(item)

    # -- items ---------------------------------------------------------------

    def p_Program(self, node: ast.Program) -> None:
        for k, item in enumerate(node.items):
            if k:
                self.write("\n")
            self.node(item)
            self.write("\n")

    def p_Kernel(self, node: ast.Kernel) -> None:
        for attr in node.attrs:
            self.node(attr)
            self.newline()
        self.write("kernel ")
        self.node(node.name)
        self.write("(")
        self.join(node.params)
        self.write(") ")
        self.node(node.body)

    def p_Function(self, node: ast.Function) -> None:
        self.write("fn ")
        self.node(node.name)
        self.write("(")
        self.join(node.params)
        self.write(")")
        if isinstance(node.body, ast.Block):
            self.write(" ")
            self.node(node.body)
        else:
            self.write(" = ")
            self.node(node.body)

    def p_Param(self, node: ast.Param) -> None:
        self.node(node.name)
        self.write(": ")
        self.node(node.type)

    def p_Attribute(self, node: ast.Attribute) -> None:
        self.write("@")
        self.node(node.name)
        if node.args is not None:
            self.write("(")
            self.join(node.args)
            self.write(")")

    def p_SearchDim(self, node: ast.SearchDim) -> None:
        self.node(node.name)
        self.write(" in [")
        self.join(node.values)
        self.write("]")

    def p_KeywordArg(self, node: ast.KeywordArg) -> None:
        self.node(node.name)
        self.write(" = ")
        self.node(node.value)

    def p_PositionalArg(self, node: ast.PositionalArg) -> None:
        self.node(node.value)

    # -- types ---------------------------------------------------------------

    def p_ScalarType(self, node: ast.ScalarType) -> None:
        self.write(node.name)

    def _shaped(self, word: str, node) -> None:
        self.write(word + "<")
        self.node(node.elem)
        self.write(">[")
        self.join(node.dims)
        self.write("]")

    def p_TensorType(self, node: ast.TensorType) -> None:
        self._shaped("tensor", node)

    def p_TileType(self, node: ast.TileType) -> None:
        self._shaped("tile", node)

    # -- statements ----------------------------------------------------------

    def p_Block(self, node: ast.Block) -> None:
        if not node.stmts:
            self.write("{}")
            return
        self.write("{")
        self.level += 1
        for stmt in node.stmts:
            self.newline()
            self.node(stmt)
        self.level -= 1
        self.newline()
        self.write("}")

    def _declare(self, word: str, node) -> None:
        self.write(word + " ")
        self.node(node.name)
        if node.type is not None:
            self.write(": ")
            self.node(node.type)
        if node.value is not None:
            self.write(" = ")
            self.node(node.value)

    def p_Let(self, node: ast.Let) -> None:
        self._declare("let", node)

    def p_Var(self, node: ast.Var) -> None:
        self._declare("var", node)

    def p_Assign(self, node: ast.Assign) -> None:
        self.node(node.target)
        self.write(f" {node.op} ")
        self.node(node.value)

    def p_For(self, node: ast.For) -> None:
        self.write("for")
        if node.unroll is not None:
            self.write("<unroll ")
            self.expr(node.unroll, _CONFIG_VALUE)
            self.write(">")
        self.write(" ")
        self.node(node.var)
        self.write(" in range(")
        self.node(node.lo)
        self.write(", ")
        self.node(node.hi)
        if node.step is not None:
            self.write(", ")
            self.node(node.step)
        self.write(") ")
        self.node(node.body)

    def p_While(self, node: ast.While) -> None:
        self.write("while ")
        self.node(node.cond)
        self.write(" ")
        self.node(node.body)

    def p_If(self, node: ast.If) -> None:
        self.write("if ")
        self.node(node.cond)
        self.write(" ")
        self.node(node.then)
        if node.orelse is not None:
            self.write(" else ")
            self.node(node.orelse)

    def p_Break(self, node: ast.Break) -> None:
        self.write("break")

    def p_Continue(self, node: ast.Continue) -> None:
        self.write("continue")

    def p_Return(self, node: ast.Return) -> None:
        self.write("return")

    def p_ExprStmt(self, node: ast.ExprStmt) -> None:
        self.node(node.expr)

    # -- subscripts and configuration -----------------------------------------

    def p_Point(self, node: ast.Point) -> None:
        self.node(node.index)

    def p_Slice(self, node: ast.Slice) -> None:
        if node.start is not None:
            self.node(node.start)
            self.write(" : " if node.stop is not None else ":")
        else:
            self.write(":")
        if node.stop is not None:
            self.node(node.stop)

    def p_SliceLen(self, node: ast.SliceLen) -> None:
        self.node(node.start)
        self.write(" :+ ")
        self.node(node.length)

    def p_ConfigItem(self, node: ast.ConfigItem) -> None:
        self.write(node.key + " ")
        self.expr(node.value, _CONFIG_VALUE)

    # -- expressions ---------------------------------------------------------

    def expr(self, node, min_prec: int) -> None:
        """Print `node`, in parentheses when it binds looser than `min_prec`."""
        paren = _binding(node) < min_prec
        if paren:
            self.write("(")
        start = self.pos
        self._expr(node)
        self.mark(node, start)
        if paren:
            self.write(")")

    def _expr(self, node) -> None:
        if isinstance(node, ast.Int):
            self.write(str(node.value))
        elif isinstance(node, ast.Float):
            self.write(float_text(node))
        elif isinstance(node, ast.Bool):
            self.write("true" if node.value else "false")
        elif isinstance(node, ast.Name):
            self.write(node.id)
        elif isinstance(node, ast.Ctx):
            self.write("ctx." + node.field + (f".{node.axis}" if node.axis else ""))
        elif isinstance(node, ast.Unary):
            self.write(node.op)
            # One unary operator per operand in the grammar: `-(-x)`, `-(a + b)`.
            self.expr(node.operand, _POSTFIX)
        elif isinstance(node, ast.Binary):
            prec = ast.PRECEDENCE[node.op]
            self.expr(node.left, prec)
            self.write(f" {node.op} ")
            self.expr(node.right, prec + 1)
        elif isinstance(node, ast.Call):
            self.expr(node.func, _POSTFIX)
            if node.config:
                self.write("<")
                self.join(node.config)
                self.write(">")
            self.write("(")
            self.join(node.args)
            self.write(")")
        elif isinstance(node, ast.Index):
            self.expr(node.base, _POSTFIX)
            self.write("[")
            self.join(node.subscripts)
            self.write("]")
        else:
            raise TypeError(f"cannot print {type(node).__name__}")


_EXPRS = (
    ast.Int,
    ast.Float,
    ast.Bool,
    ast.Name,
    ast.Ctx,
    ast.Unary,
    ast.Binary,
    ast.Call,
    ast.Index,
)


def _binding(node) -> int:
    """How tightly a printed expression holds together."""
    if isinstance(node, ast.Binary):
        return ast.PRECEDENCE[node.op]
    if isinstance(node, ast.Unary):
        return ast.UNARY_PRECEDENCE
    if isinstance(node, (ast.Int, ast.Float)) and node.value < 0:
        return ast.UNARY_PRECEDENCE  # prints with a sign, which reads back as unary
    return _POSTFIX


def print_program(node: ast.Node) -> str:
    """The canonical `.ph` text of `node`: a Program, or any node alone.

    A Program ends with a newline; a lone node does not.

        >>> from phobos.source import SourceFile
        >>> s = SourceFile("x", "").span(0, 0)
        >>> n = lambda i: ast.Name(i, span=s)
        >>> print_program(ast.Binary("-", n("a"), ast.Binary("-", n("b"), n("c"), span=s), span=s))
        'a - (b - c)'
    """
    printer = _Printer()
    printer.node(node)
    return printer.text()


def print_mapped(program: ast.Node) -> tuple[str, list[tuple[int, int, Span]]]:
    """`print_program`'s text and, for every node printed, its output byte range
    and its own span: `(start, end, node.span)`, outer nodes after inner ones.

        >>> from phobos.source import SourceFile
        >>> from phobos.syntax.parser import parse
        >>> prog, _ = parse(SourceFile("k.ph", "fn f(x)  =  x\\n"))
        >>> text, entries = print_mapped(prog)
        >>> [(text[a:b], span.text) for a, b, span in entries][:3]
        [('f', 'f'), ('x', 'x'), ('x', 'x')]
    """
    printer = _Printer()
    printer.node(program)
    return printer.text(), printer.entries
