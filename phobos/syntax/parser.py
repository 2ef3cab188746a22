"""The `.ph` parser: tokens to the AST of `phobos.syntax.ast`, reporting every error.

    >>> from phobos.source import SourceFile
    >>> program, diags = parse(SourceFile("k.ph", "fn twice(x) = x + x\\n"))
    >>> program.items[0].body
    Binary(op='+', left=Name(id='x'), right=Name(id='x'), spelling=None)
    >>> diags
    []

Recursive descent over SPEC.md "Grammar", one method per production; binary
operators by precedence climbing over `ast.PRECEDENCE` (all left-associative).

Newlines. A newline ends a statement (SPEC.md "Lexical"), except where a statement
cannot end: inside `( )`, `[ ]` and the `< >` of `for<unroll n>` and of a configured
call, after a binary or assignment operator, and before the `{` of a block. So a
kernel signature may span lines, and so may `a +` / `b`; a line that *starts* with an
operator starts a new statement. `else` must follow the `}` of its `if` on the same
line: a newline there ends the `if`.

Recovery. An error is reported once, where it is found, then `Sync` unwinds to the
nearest recovery point: the statement (resumes after the next newline or `;` at the
same bracket depth, or before a `}`), the comma-separated list (resumes at the next
`,`), or the item (resumes at the next `kernel`, `fn` or `@`). A compound statement
whose header is broken still has its block parsed, so errors inside it are found.
Every loop consumes a token or stops, and nesting is capped, so the parser neither
loops forever nor overflows the stack.
"""

from __future__ import annotations

import dataclasses

from phobos.diagnostics import Diagnostic, Label
from phobos.names import CTX_AXES, CTX_FIELDS
from phobos.source import SourceFile
from phobos.syntax import ast
from phobos.syntax.cursor import (
    E_UNCLOSED,
    STMT_START,
    Cursor,
    Sync,
)
from phobos.syntax.lexer import tokenize
from phobos.syntax.tokens import (
    ASSIGN_OPS,
    EOF,
    ERROR,
    FLOAT,
    IDENT,
    INT,
    NEWLINE,
    Token,
    describe,
)

# Error codes of the parser (explained in phobos/diagnostics/explain/).
E_EXPR = "E0004"  # expected an expression
E_ELSE = "E0006"  # `else` on the line after the `}`, or with no `if`
E_COND_ASSIGN = "E0007"  # `=` in an `if` or `while` condition
E_LET_VALUE = "E0008"  # `let` without a value
E_VAR_EMPTY = "E0009"  # `var` with neither type nor value
E_FOR = "E0010"  # `for` without `range(lo, hi[, step])`
E_CTX = "E0011"  # `ctx` bound or used alone
E_TARGET = "E0012"  # assignment to something not a name or an indexed name
E_CONFIG = "E0013"  # a word in `<...>` of a collective that configures nothing
E_TYPE = "E0014"  # not a type
E_ATTR = "E0015"  # a malformed attribute, or one on a `fn`
E_ITEM = "E0016"  # top-level text that is not a kernel or a function
E_FIELD = "E0018"  # `.field` on something other than `ctx`
E_CTX_FIELD = "E0019"  # `ctx.f` with no such field, or the wrong axes

# Binding power of the value in `<...>`: above the comparisons, so the `>` that
# closes the brackets is never read as an operator.
CONFIG_VALUE_PREC = ast.PRECEDENCE["|"]


class _Parser(Cursor):
    """One method per production of SPEC.md "Grammar"."""

    def program(self) -> ast.Program:
        items = []
        while True:
            self.skip_newlines()
            tok = self.toks[self.i]
            if tok.kind == EOF:
                break
            start = self.i
            try:
                item = self.item()
                if item is not None:
                    items.append(item)
            except Sync:
                self.sync_item()
            if self.i == start and self.toks[self.i].kind != EOF:
                self.i += 1
        size = len(self.source.data)
        return ast.Program(tuple(items), span=self.source.span(0, size))

    def item(self) -> ast.Kernel | ast.Function | None:
        attrs = []
        while self.at("@"):
            try:
                attrs.append(self.attribute())
            except Sync:
                self.sync_item()
            self.skip_newlines()
        tok = self.peek()
        if tok.kind == "kernel":
            return self.kernel(attrs)
        if tok.kind == "fn":
            if attrs:
                self.report(
                    E_ATTR,
                    "attributes apply only to kernels",
                    Label(attrs[0].span, "not allowed on a `fn`"),
                    help="remove the attributes, or move them to the kernel that calls this `fn`",
                )
            return self.function()
        if tok.kind == ERROR:
            raise Sync
        if attrs:
            raise self.expected("`kernel` after the attributes", E_ITEM)
        help = ()
        if tok.kind in STMT_START or tok.kind == IDENT:
            help = ("statements belong inside the `{ }` of a kernel or a `fn`",)
        self.report(
            E_ITEM,
            f"expected `kernel` or `fn`, found {describe(tok)}",
            Label(tok.span, "expected an item"),
            help=help,
        )
        raise Sync

    def attribute(self) -> ast.Attribute:
        at_tok = self.next()
        if not self.at(IDENT):
            raise self.expected("an attribute name after `@`", E_ATTR)
        name_tok = self.next()
        name = ast.Name(name_tok.text, span=name_tok.span)
        args = None
        if self.at("("):
            args = tuple(self.comma_list(self.attr_arg, self.next()))
        return ast.Attribute(name, args, span=self.span_from(at_tok.span))

    def attr_arg(self) -> ast.SearchDim | ast.KeywordArg | ast.PositionalArg:
        tok = self.peek()
        if tok.kind == IDENT and self.peek(1).kind == "in":
            name = self.name_ref()
            self.next()  # in
            if not self.at("["):
                raise self.expected("`[` and a list of values", E_ATTR)
            opener = self.next()
            empty = self.at("]")
            values = self.comma_list(self.attr_int, opener)
            if empty:
                self.report(
                    E_ATTR,
                    f"the search dimension `{name.id}` lists no values",
                    Label(self.span_from(opener.span), "expected at least one integer"),
                )
            return ast.SearchDim(name, tuple(values), span=self.span_from(tok.span))
        if tok.kind == IDENT and self.peek(1).kind == "=":
            name = self.name_ref()
            self.next()  # =
            value = self.attr_literal()
            return ast.KeywordArg(name, value, span=self.span_from(tok.span))
        value = self.attr_literal()
        return ast.PositionalArg(value, span=value.span)

    def attr_literal(self) -> ast.Int | ast.Float | ast.Bool | ast.Name:
        tok = self.peek()
        if tok.kind in (INT, FLOAT, "true", "false", IDENT):
            node = self.name_ref() if tok.kind == IDENT else self.literal()
            self.no_operator_after(
                node, E_ATTR, "an attribute value is a number, a name, `true` or `false`"
            )
            return node
        raise self.expected(
            "an attribute value",
            E_ATTR,
            help="an attribute value is a number, a name, `true` or `false`",
        )

    def attr_int(self) -> ast.Int:
        if self.at(INT):
            node = self.literal()
            self.no_operator_after(node, E_ATTR, "search values are integer literals")
            return node
        raise self.expected("an integer", E_ATTR, help="search values are integer literals")

    def kernel(self, attrs: list[ast.Attribute]) -> ast.Kernel:
        kw = self.next()
        name = self.binding_name("a kernel name")
        if not self.at("("):
            raise self.expected("`(`")
        params = self.comma_list(self.param, self.next())
        body = self.block()
        start = attrs[0].span if attrs else kw.span
        return ast.Kernel(tuple(attrs), name, tuple(params), body, span=start.to(body.span))

    def param(self) -> ast.Param:
        name = self.binding_name("a parameter name")
        if not self.at(":"):
            raise self.expected("`:`", help=f"every kernel parameter has a type: `{name.id}: f32`")
        self.next()
        type_ = self.type()
        return ast.Param(name, type_, span=name.span.to(type_.span))

    def function(self) -> ast.Function:
        kw = self.next()
        name = self.binding_name("a function name")
        if not self.at("("):
            raise self.expected("`(`")
        params = self.comma_list(lambda: self.binding_name("a parameter name"), self.next())
        if self.at("="):
            self.next()
            self.skip_newlines()
            body = self.expr()
            node = ast.Function(name, tuple(params), body, span=kw.span.to(body.span))
            self.terminator()
            return node
        self.skip_newlines()
        if not self.at("{"):
            raise self.expected("`=` or `{`")
        block = self.block()
        return ast.Function(name, tuple(params), block, span=kw.span.to(block.span))

    # -- names and types -----------------------------------------------------

    def no_operator_after(self, node, code: str, rule: str) -> None:
        """Where only a literal may stand: refuse an expression built on it."""
        tok = self.peek()
        if tok.kind in ast.PRECEDENCE or tok.kind in ("(", "["):
            self.report(
                code,
                f"expected a literal, found an expression starting with `{node.span.text}`",
                Label(node.span.to(tok.span), "not a literal"),
                notes=(rule,),
            )
            raise Sync

    def binding_name(self, what: str = "a name") -> ast.Name:
        """A name being bound (a `let`, a parameter, a loop variable)."""
        if not self.at(IDENT):
            raise self.expected(what)
        tok = self.next()
        if tok.text == "ctx":
            self.report(
                E_CTX,
                "`ctx` is reserved and cannot be bound",
                Label(tok.span, "reserved name"),
                help="choose another name",
            )
        return ast.Name(tok.text, span=tok.span)

    def name_ref(self) -> ast.Name:
        """A name used as a plain identifier (a dimension, an attribute value)."""
        tok = self.next()
        if tok.text == "ctx":
            self.report(
                E_CTX,
                "`ctx` is reserved and can only be read through its fields",
                Label(tok.span, "not a name here"),
                help="read a field, as in `ctx.thread` or `ctx.block.x`",
            )
        return ast.Name(tok.text, span=tok.span)

    def type(self) -> ast.ScalarType | ast.TensorType | ast.TileType:
        tok = self.peek()
        if tok.kind == IDENT and tok.text in ("tensor", "tile"):
            self.next()
            if not self.at("<"):
                raise self.expected(
                    f"`<` after `{tok.text}`",
                    E_TYPE,
                    help=f"write the element type and the dimensions: `{tok.text}<f32>[M, N]`",
                )
            opener = self.next()
            with self.newlines_off():
                elem = self.scalar_type()
                self.expect_close(opener)
            if not self.at("["):
                raise self.expected(
                    f"`[` and the dimensions of the {tok.text}",
                    E_TYPE,
                    help=f"write the dimensions: `{tok.text}<{elem.name}>[M, N]`",
                )
            bracket = self.next()
            empty = self.at("]")
            dims = self.comma_list(self.dim, bracket)
            if empty:
                self.report(
                    E_TYPE,
                    f"a {tok.text} needs at least one dimension",
                    Label(self.span_from(bracket.span), "no dimensions"),
                )
            cls = ast.TensorType if tok.text == "tensor" else ast.TileType
            return cls(elem, tuple(dims), span=self.span_from(tok.span))
        return self.scalar_type()

    def scalar_type(self) -> ast.ScalarType:
        tok = self.peek()
        if tok.kind == IDENT and tok.text in ast.SCALAR_TYPES:
            self.next()
            return ast.ScalarType(tok.text, span=tok.span)
        help = "the scalar types are " + ", ".join(f"`{t}`" for t in ast.SCALAR_TYPES)
        if tok.kind == IDENT:
            self.next()
            self.report(
                E_TYPE,
                f"unknown type `{tok.text}`",
                Label(tok.span, "not a type"),
                help=help,
            )
            raise Sync
        raise self.expected("a type", E_TYPE, help=help)

    def dim(self) -> ast.Name | ast.Int:
        if self.at(IDENT) or self.at(INT):
            node = self.name_ref() if self.at(IDENT) else self.literal()
            self.no_operator_after(node, E_TYPE, "a dimension is a name or an integer literal")
            return node
        raise self.expected(
            "a dimension",
            E_TYPE,
            help="a dimension is a name (`M`, `TILE_K`) or an integer literal",
        )

    # -- statements ----------------------------------------------------------

    def block(self) -> ast.Block:
        self.skip_newlines()  # a `{` may open the next line
        if not self.at("{"):
            raise self.expected("`{`")
        opener = self.next()
        stmts: list = []
        saved_nl, self.nl_off = self.nl_off, 0  # statements end at newlines again
        try:
            close = self.block_body(opener, stmts)
        finally:
            self.nl_off = saved_nl
        end = close.span if close is not None else self.span_from(opener.span)
        return ast.Block(tuple(stmts), span=opener.span.to(end))

    def block_body(self, opener: Token, stmts: list) -> Token | None:
        """The statements up to the `}`; returns the `}`, or None when unclosed."""
        with self.nested():
            while True:
                while self.toks[self.i].kind in (NEWLINE, ";"):
                    self.i += 1
                tok = self.toks[self.i]
                if tok.kind == "}":
                    return self.next()
                if tok.kind == EOF or self.item_start(tok):
                    self.unclosed_block(opener, tok)
                    return None
                start = self.i
                try:
                    if tok.kind == "else":
                        self.stray_else(stmts)
                    else:
                        stmt = self.statement()
                        if stmt is not None:
                            stmts.append(stmt)
                except Sync:
                    self.sync_stmt()
                if self.i == start:
                    self.i += 1

    def block_ahead(self) -> None:
        """After a loop or `if` header: the `{` must come next (on this line or the next)."""
        self.skip_newlines()
        if not self.at("{"):
            raise self.expected("`{`")

    def unclosed_block(self, opener: Token, tok: Token) -> None:
        where = self.where_expected(tok)
        if tok.kind == EOF:
            # One diagnostic for every `{` still open at the end, as rustc does.
            if self.eof_diag is not None:
                diag = self.diags[self.eof_diag]
                more = (*diag.secondary, Label(opener.span, "unclosed delimiter"))
                self.diags[self.eof_diag] = dataclasses.replace(diag, secondary=more)
                return
            self.eof_diag = len(self.diags)
            message = "this file contains an unclosed delimiter"
        else:
            message = f"expected `}}`, found {describe(tok)}"
        self.report(
            E_UNCLOSED,
            message,
            Label(where, "expected `}`"),
            [Label(opener.span, "unclosed delimiter")],
        )

    def statement(self):
        kind = self.peek().kind
        if kind == "let":
            return self.let_stmt()
        if kind == "var":
            return self.var_stmt()
        if kind == "for":
            return self.for_stmt()
        if kind == "while":
            return self.while_stmt()
        if kind == "if":
            return self.if_stmt()
        if kind in ("break", "continue", "return"):
            tok = self.next()
            cls = {"break": ast.Break, "continue": ast.Continue, "return": ast.Return}[kind]
            node = cls(span=tok.span)
            self.terminator(node)
            return node
        return self.simple_stmt()

    def terminator(self, stmt=None) -> None:
        """A newline or `;`; nothing is needed before `}` or the end of the file.
        A missing one is reported and the rest of the line skipped; the statement
        before it is kept."""
        tok = self.peek()
        if tok.kind in (NEWLINE, ";"):
            self.next()
            return
        if tok.kind in ("}", EOF):
            return
        help = ()
        if tok.kind == ":" and isinstance(stmt, ast.ExprStmt) and isinstance(stmt.expr, ast.Name):
            n = stmt.expr.id
            help = (f"to declare `{n}`, write `let {n}: T = ...` or `var {n}: T = ...`",)
        elif isinstance(stmt, ast.Return):
            help = ("`return` takes no value: a kernel writes its results to tensors",)
        elif tok.kind in STMT_START or tok.kind in ("kernel", "fn", "else"):
            help = ("end the statement before it with a newline or `;`",)
        self.expected("`;` or newline", help=help)
        self.sync_stmt()

    def let_stmt(self) -> ast.Let:
        kw = self.next()
        name = self.binding_name()
        type_ = None
        if self.eat(":"):
            type_ = self.type()
        if not self.at("="):
            if self.at(NEWLINE, ";", "}", EOF):
                self.report(
                    E_LET_VALUE,
                    f"`let {name.id}` has no value",
                    Label(self.span_from(kw.span), "needs `= value`"),
                    help=(
                        "a `let` binds a value and never changes; for a tile filled "
                        f"later, write `var {name.id}: tile<T>[R, C]`"
                    ),
                )
                raise Sync
            raise self.expected("`=`")
        self.next()
        self.skip_newlines()
        value = self.expr()
        node = ast.Let(name, type_, value, span=kw.span.to(value.span))
        self.terminator()
        return node

    def var_stmt(self) -> ast.Var:
        kw = self.next()
        name = self.binding_name()
        type_ = None
        value = None
        if self.eat(":"):
            type_ = self.type()
        if self.at("="):
            self.next()
            self.skip_newlines()
            value = self.expr()
        elif type_ is None:
            if self.at(NEWLINE, ";", "}", EOF):
                self.report(
                    E_VAR_EMPTY,
                    f"`var {name.id}` needs a type or a value",
                    Label(self.span_from(kw.span), "neither a type nor a value"),
                    help=f"write `var {name.id} = value` or `var {name.id}: tile<T>[R, C]`",
                )
                raise Sync
            raise self.expected("`:` or `=`")
        node = ast.Var(name, type_, value, span=self.span_from(kw.span))
        self.terminator()
        return node

    def simple_stmt(self) -> ast.Assign | ast.ExprStmt:
        target = self.expr()
        tok = self.peek()
        if tok.kind in ASSIGN_OPS:
            self.check_target(target)
            self.next()
            self.skip_newlines()
            value = self.expr()
            node = ast.Assign(target, tok.kind, value, span=target.span.to(value.span))
        else:
            node = ast.ExprStmt(target, span=target.span)
        self.terminator(node)
        return node

    def check_target(self, target) -> None:
        if isinstance(target, ast.Name):
            return
        if isinstance(target, ast.Index) and isinstance(target.base, ast.Name):
            return
        if isinstance(target, ast.Ctx):
            self.report(
                E_TARGET,
                "cannot assign to a `ctx` field",
                Label(target.span, "read only"),
            )
            return
        self.report(
            E_TARGET,
            "invalid left-hand side of assignment",
            Label(target.span, "cannot assign to this expression"),
            help="assign to a name (`x = e`) or an indexed name (`A[i, j] = e`)",
        )

    def for_stmt(self):
        kw = self.next()
        try:
            unroll = None
            if self.at("<"):
                opener = self.next()
                with self.newlines_off():
                    if not self.at_word("unroll"):
                        raise self.expected(
                            "`unroll`", help="the only loop setting is `for<unroll n> i in ...`"
                        )
                    self.next()
                    unroll = self.expr(CONFIG_VALUE_PREC)
                    self.expect_close(opener)
            var = self.binding_name("a loop variable")
            if not self.at("in"):
                raise self.expected("`in`")
            self.next()
            lo, hi, step = self.range_call(var)
            self.block_ahead()
        except Sync:
            self.skip_to_block()
            return None
        body = self.block()
        return ast.For(var, lo, hi, step, unroll, body, span=kw.span.to(body.span))

    def range_call(self, var: ast.Name):
        tok = self.peek()
        if not (tok.kind == IDENT and tok.text == "range" and self.peek(1).kind == "("):
            raise self.expected(
                "`range(...)`",
                E_FOR,
                help=f"a loop is written `for {var.id} in range(lo, hi)` or "
                f"`for {var.id} in range(lo, hi, step)`",
            )
        self.next()
        args = self.comma_list(self.expr, self.next())
        if len(args) in (2, 3):
            return args[0], args[1], args[2] if len(args) == 3 else None
        help = ()
        if len(args) == 1:
            hi = args[0].span.text
            help = (f"a range starts where you say: `range(0, {hi})`",)
        self.report(
            E_FOR,
            f"`range` takes 2 or 3 arguments, found {len(args)}",
            Label(self.span_from(tok.span), "expected `range(lo, hi)` or `range(lo, hi, step)`"),
            help=help,
        )
        raise Sync

    def while_stmt(self):
        kw = self.next()
        try:
            cond = self.condition()
            self.block_ahead()
        except Sync:
            self.skip_to_block()
            return None
        body = self.block()
        return ast.While(cond, body, span=kw.span.to(body.span))

    def if_stmt(self):
        kw = self.next()
        try:
            cond = self.condition()
            self.block_ahead()
        except Sync:
            self.skip_to_block()
            return None
        then = self.block()
        orelse = None
        if self.at("else"):  # on the line of the `}`: newlines are significant here
            self.next()
            orelse = self.else_body()
        end = orelse.span if orelse is not None else then.span
        return ast.If(cond, then, orelse, span=kw.span.to(end))

    def else_body(self):
        self.skip_newlines()
        if self.at("if"):
            node = self.if_stmt()
            if node is None:
                raise Sync
            return node
        return self.block()

    def condition(self):
        cond = self.expr()
        if self.at("="):
            eq = self.next()
            self.report(
                E_COND_ASSIGN,
                "`=` in a condition",
                Label(eq.span, "an assignment is not a value"),
                help="to compare, write `==`",
            )
            self.skip_newlines()
            right = self.expr()
            cond = ast.Binary("==", cond, right, span=cond.span.to(right.span))
        return cond

    def stray_else(self, stmts: list) -> None:
        """An `else` starting a statement: the `if` before it ended at a newline."""
        tok = self.next()
        prev = stmts[-1] if stmts else None
        innermost = prev
        while isinstance(innermost, ast.If) and isinstance(innermost.orelse, ast.If):
            innermost = innermost.orelse
        if isinstance(innermost, ast.If) and innermost.orelse is None:
            brace = innermost.then.span
            self.report(
                E_ELSE,
                "`else` must be on the same line as the `}` that closes its `if`",
                Label(tok.span, "`else` on a new line"),
                [Label(self.source.span(brace.end - 1, brace.end), "the `if` ends here")],
                help="write `} else {` on one line",
            )
            body = self.else_body()
            stmts[-1] = _attach_else(prev, body)
        else:
            self.report(
                E_ELSE,
                "`else` without an `if`",
                Label(tok.span, "no `if` before this `else`"),
            )
            self.else_body()

    # -- expressions ---------------------------------------------------------

    def expr(self, min_prec: int = 1):
        """Precedence climbing: every binary operator is left-associative."""
        with self.nested():
            left = self.unary()
            while True:
                tok = self.peek()
                prec = ast.PRECEDENCE.get(tok.kind)
                if prec is None or prec < min_prec:
                    return left
                self.next()
                self.skip_newlines()
                right = self.expr(prec + 1)
                left = ast.Binary(tok.kind, left, right, span=left.span.to(right.span))

    def unary(self):
        tok = self.peek()
        if tok.kind in ast.UNARY_OPS:
            self.next()
            with self.nested():
                operand = self.unary()
            return ast.Unary(tok.kind, operand, span=tok.span.to(operand.span))
        return self.postfix()

    def postfix(self):
        node = self.primary()
        while True:
            tok = self.peek()
            if tok.kind == "[":
                opener = self.next()
                empty = self.at("]")
                subs = self.comma_list(self.subscript, opener)
                if empty:
                    self.report(
                        E_EXPR,
                        "expected a subscript, found `]`",
                        Label(self.span_from(opener.span), "empty subscript"),
                        help="select the whole dimension with `A[:]`",
                    )
                node = ast.Index(node, tuple(subs), span=self.span_from(node.span))
            elif tok.kind == "(":
                args = self.comma_list(self.expr, self.next())
                node = ast.Call(node, tuple(args), span=self.span_from(node.span))
            elif tok.kind == ".":
                self.report(
                    E_FIELD,
                    "unexpected `.` after an expression",
                    Label(tok.span, "no fields here"),
                    help="only `ctx` has fields, as in `ctx.block.x`",
                )
                raise Sync
            else:
                return node

    def subscript(self):
        tok = self.peek()
        if tok.kind == ":":
            self.next()
            if self.at(",", "]"):
                return ast.Slice(None, None, span=tok.span)
            stop = self.expr()
            return ast.Slice(None, stop, span=tok.span.to(stop.span))
        if tok.kind == ":+":
            raise self.expected("expression", E_EXPR, help="a span needs its start: `A[s :+ n]`")
        start = self.expr()
        if self.at(":"):
            colon = self.next()
            if self.at(",", "]"):
                return ast.Slice(start, None, span=start.span.to(colon.span))
            stop = self.expr()
            return ast.Slice(start, stop, span=start.span.to(stop.span))
        if self.at(":+"):
            self.next()
            length = self.expr()
            return ast.SliceLen(start, length, span=start.span.to(length.span))
        return ast.Point(start, span=start.span)

    def literal(self):
        tok = self.next()
        if tok.kind == INT:
            return ast.Int(tok.value, span=tok.span)
        if tok.kind == FLOAT:
            return ast.Float(tok.value, tok.text, span=tok.span)
        return ast.Bool(tok.kind == "true", span=tok.span)

    def primary(self):
        tok = self.peek()
        kind = tok.kind
        if kind in (INT, FLOAT, "true", "false"):
            return self.literal()
        if kind == IDENT:
            if tok.text == "ctx":
                return self.ctx_field()
            if (
                tok.text in ast.CONFIGURED_CALLS
                and self.peek(1).kind == "<"
                and self.peek(2).kind == IDENT
                and self.peek(2).text in ast.CONFIG_KEYS
            ):
                return self.configured_call()
            self.next()
            return ast.Name(tok.text, span=tok.span)
        if kind == "(":
            opener = self.next()
            with self.newlines_off():
                inner = self.expr()
                close = self.expect_close(opener)
            # The node's span takes in the parentheses: they are its source text.
            return dataclasses.replace(inner, span=opener.span.to(close.span))
        help = ()
        if kind == "=" and self.last is not None and self.last.kind in ASSIGN_OPS:
            help = ("`==` compares; a single `=` assigns",)
        raise self.expected("expression", E_EXPR, help=help)

    def ctx_field(self):
        tok = self.next()
        if not self.at("."):
            self.report(
                E_CTX,
                "`ctx` cannot be used as a value",
                Label(tok.span, "`ctx` is read only through its fields"),
                help="read a field, as in `ctx.thread` or `ctx.block.x`",
            )
            return ast.Name("ctx", span=tok.span)
        self.next()
        if not self.at(IDENT):
            raise self.expected("a field name after `ctx.`")
        field = self.next().text
        axis = None
        if self.at(".") and self.peek(1).kind == IDENT:
            self.next()
            axis = self.next().text
        node = ast.Ctx(field, axis, span=self.span_from(tok.span))
        self.check_ctx(node)
        return node

    def check_ctx(self, node: ast.Ctx) -> None:
        """SPEC.md "Indexing and synchronization": the fields of `ctx`, and which take an axis."""
        here = Label(node.span, "not a field of `ctx`")
        if node.field not in CTX_FIELDS:
            fields = ", ".join(f"`{f}`" for f in CTX_FIELDS)
            self.report(E_CTX_FIELD, f"`ctx` has no field `{node.field}`", here,
                        help=f"the fields are {fields}")  # fmt: skip
        elif CTX_FIELDS[node.field] and node.axis is None:
            self.report(E_CTX_FIELD, f"`ctx.{node.field}` is read along an axis",
                        Label(node.span, "no axis"),
                        help=f"write `ctx.{node.field}.x`, `.y` or `.z`")  # fmt: skip
        elif not CTX_FIELDS[node.field] and node.axis is not None:
            self.report(E_CTX_FIELD, f"`ctx.{node.field}` has no axes",
                        Label(node.span, "no axis here"),
                        help=f"write `ctx.{node.field}`")  # fmt: skip
        elif node.axis is not None and node.axis not in CTX_AXES:
            self.report(E_CTX_FIELD, f"`ctx.{node.field}` has no axis `{node.axis}`",
                        Label(node.span, "not an axis"),
                        help="the axes are `x`, `y` and `z`")  # fmt: skip

    def configured_call(self):
        name_tok = self.next()
        opener = self.next()  # <
        items = []
        with self.newlines_off():
            while True:
                key = self.peek()
                if not (key.kind == IDENT and key.text in ast.CONFIG_KEYS):
                    keys = ", ".join(f"`{k}`" for k in ast.CONFIG_KEYS)
                    raise self.expected(
                        "a configuration word", E_CONFIG, help=f"the words are {keys}"
                    )
                self.next()
                value = self.expr(CONFIG_VALUE_PREC)
                items.append(ast.ConfigItem(key.text, value, span=key.span.to(value.span)))
                if not self.eat(","):
                    break
            self.expect_close(opener)
        if not self.at("("):
            raise self.expected(f"`(` and the arguments of `{name_tok.text}`")
        args = self.comma_list(self.expr, self.next())
        func = ast.Name(name_tok.text, span=name_tok.span)
        return ast.Call(func, tuple(args), tuple(items), span=self.span_from(name_tok.span))


def _attach_else(node: ast.If, orelse):
    """`node` with `orelse` hung on the last `if` of its `else if` chain."""
    if isinstance(node.orelse, ast.If):
        inner = _attach_else(node.orelse, orelse)
        return dataclasses.replace(node, orelse=inner, span=node.span.to(inner.span))
    return dataclasses.replace(node, orelse=orelse, span=node.span.to(orelse.span))


def parse(source: SourceFile) -> tuple[ast.Program, list[Diagnostic]]:
    """Parse a `.ph` file into a `Program`, with every lexical and syntax error.

    Never raises on bad input: the Program holds the items that parsed, and each
    diagnostic's spans lie inside `source`.

        >>> prog, diags = parse(SourceFile("k.ph", "kernel k() {\\n  let x = \\n}\\n"))
        >>> [d.code for d in diags], len(prog.items)
        (['E0004'], 1)
    """
    tokens, diags = tokenize(source)
    parser = _Parser(source, tokens)
    program = parser.program()
    # In source order, as a reader meets them; the lexer's come first on a tie.
    merged = sorted(diags + parser.diags, key=lambda d: d.span.start if d.span else 0)
    return program, merged
