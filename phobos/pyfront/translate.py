"""Python's `ast` of a module -> the Phobos AST of its `@ph.kernel`s and `@ph.fn`s.

Each construct of PYTHON.md "Spellings" becomes the node its `.ph` form parses to,
with a span into the `.py` file; everything else inside a kernel or fn is refused
at the Python node that spells it (the rows of `spellings.py`), and translation
goes on, so one run reports every independent error. Python outside the decorated
defs is never looked at.

    >>> from phobos.source import SourceFile
    >>> text = '''
    ... import phobos.lang as ph
    ...
    ... @ph.fn
    ... def twice(a):
    ...     return a + a
    ... '''
    >>> program, diagnostics = translate_module(SourceFile("m.py", text))
    >>> fn = program.items[0]
    >>> fn.name.id, fn.body.op, diagnostics
    ('twice', '+', [])
"""

from __future__ import annotations

import ast as py
import warnings
from dataclasses import dataclass, field, replace

from phobos.diagnostics import Diagnostic, Label
from phobos.names import ATTRIBUTES, PLANNED_ATTRIBUTES, all_names
from phobos.pyfront import spellings
from phobos.pyfront.expressions import BINARY_OPS, ExpressionTranslator, float_text, suggest
from phobos.pyfront.reader import MODULE, ImportScope, Positions
from phobos.pyfront.spellings import refuse
from phobos.source import SourceFile, Span
from phobos.syntax import ast as ph

KERNEL_OPTIONS = ("key", "reference", "rtol", "atol")


@dataclass
class ItemInfo:
    """What the front end knows of one decorated def besides its AST.

    `first_line` is the line of its first decorator and `line` that of `def`, so a
    runtime function (whose `co_firstlineno` is one of them) finds its item. `scope`
    names the defs it is nested in (empty at module level). `key` is the
    `@ph.kernel(key=(...))` option.
    """

    node: ph.Kernel | ph.Function
    kind: str  # "kernel" | "fn"
    name: str
    line: int
    first_line: int
    scope: tuple[str, ...] = ()
    key: tuple[str, ...] | None = None


@dataclass
class Translation:
    """Everything `translate` found: the program, its diagnostics, and per-item facts."""

    program: ph.Program
    diagnostics: list[Diagnostic]
    items: list[ItemInfo] = field(default_factory=list)


def translate_module(source: SourceFile) -> tuple[ph.Program, list[Diagnostic]]:
    """Every `@ph.kernel` and `@ph.fn` of a Python module, in source order.

    Never raises on bad input: a Python syntax error or a refused construct is a
    diagnostic with a span in `source`.
    """
    result = translate(source)
    return result.program, result.diagnostics


def translate(source: SourceFile) -> Translation:
    """`translate_module` with the facts the runtime needs (`ItemInfo` per item)."""
    text, shift = source.text, 0
    if text.startswith("\ufeff"):
        # Python would refuse the byte-order mark inside a str; its 3 bytes stay in spans.
        text, shift = text[1:], 3
    positions = Positions(source, shift)
    whole = source.span(0, len(source.data))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = py.parse(text, filename=source.name)
    except SyntaxError as error:
        return Translation(ph.Program((), span=whole), [_syntax_diagnostic(source, error, shift)])
    except (ValueError, RecursionError, MemoryError) as error:
        message = str(error).split("\n")[0] or "the module cannot be parsed"
        null = source.data.find(b"\x00")
        where = source.span(null, null + 1) if null >= 0 else source.span(0, 0)
        diag = spellings.syntax_error(message.rstrip(".").lower(), where)
        return Translation(ph.Program((), span=whole), [diag])
    translator = _ModuleTranslator(source, positions)
    translator.module(tree)
    program = ph.Program(tuple(info.node for info in translator.items), span=whole)
    return Translation(program, translator.diagnostics, translator.items)


def _syntax_diagnostic(source: SourceFile, error: SyntaxError, shift: int) -> Diagnostic:
    """Python's `SyntaxError` at its line and column (Python counts columns in characters)."""

    def offset(line: int | None, col: int | None) -> int:
        if not line:
            return len(source.data)
        index = max(0, min(line - 1, source.line_count - 1))
        chars = source.line_text(index)
        col = max(1, col or 1) - 1 + (1 if shift and index == 0 else 0)
        return source.line_start(index) + len(chars[:col].encode("utf-8"))

    start = offset(error.lineno, error.offset)
    end = start
    end_line = getattr(error, "end_lineno", None)
    end_col = getattr(error, "end_offset", None)
    if end_line and end_col and (end_line, end_col) > (error.lineno or 0, error.offset or 0):
        end = offset(end_line, end_col)
    if end == start and start < len(source.data) and source.data[start] not in b"\r\n":
        end = start + 1  # a caret under the character Python points at
    message = (error.msg or "invalid syntax").strip()
    helps: list[str] = []
    if ". " in message:  # "invalid syntax. Perhaps you forgot a comma?"
        message, rest = message.split(". ", 1)
        helps.append(rest[:1].lower() + rest[1:])
    message = message.rstrip(".")
    message = message[:1].lower() + message[1:]
    diag = spellings.syntax_error(message, source.span(start, end))
    if helps:
        diag = Diagnostic.error(diag.code, diag.message, diag.primary, help=helps)
    return diag


def _decorator_target(dec: py.expr) -> py.expr:
    return dec.func if isinstance(dec, py.Call) else dec


class _ModuleTranslator:
    """Finds the decorated defs of a module and translates each (`_ItemTranslator`)."""

    def __init__(self, source: SourceFile, positions: Positions):
        self.source = source
        self.pos = positions
        self.items: list[ItemInfo] = []
        self.diagnostics: list[Diagnostic] = []
        self.module_names: dict[str, py.AST] = {}

    def module(self, tree: py.Module) -> None:
        self.module_names = _module_bindings(tree.body, ImportScope().with_imports(tree.body))
        self.scope_body(tree.body, ImportScope(), ())

    def scope_body(self, body: list[py.stmt], parent: ImportScope, path: tuple[str, ...]) -> None:
        scope = parent.with_imports(body)
        for stmt in _own_statements(body):
            if not isinstance(stmt, (py.FunctionDef, py.AsyncFunctionDef, py.ClassDef)):
                continue
            kinds = [scope.lang_name(_decorator_target(d)) for d in stmt.decorator_list]
            item_kind = next((k for k in kinds if k in ("kernel", "fn")), None)
            if item_kind is not None and isinstance(stmt, py.FunctionDef):
                self.item(stmt, item_kind, scope, path)
                continue
            if item_kind is not None:
                bad = "async_def" if isinstance(stmt, py.AsyncFunctionDef) else "decorated_class"
                dec = next(
                    d for d, k in zip(stmt.decorator_list, kinds, strict=True) if k == item_kind
                )
                self.diagnostics.append(refuse(bad, self.pos.decorator(dec), name=item_kind))
                continue
            for dec, kind in zip(stmt.decorator_list, kinds, strict=True):
                if kind in ATTRIBUTES or kind in PLANNED_ATTRIBUTES:
                    self.diagnostics.append(refuse("no_kernel", self.pos.decorator(dec), name=kind))
            self.scope_body(stmt.body, scope, (*path, stmt.name))

    def item(self, node: py.FunctionDef, kind: str, scope: ImportScope, path) -> None:
        translator = _ItemTranslator(self.pos, scope, kind)
        try:
            result = translator.item(node)
            key = translator.key
        except RecursionError:
            name_span = self.pos.def_name(node, node.name)
            translator.diagnostics.append(refuse("nesting", name_span, item=kind))
            # An empty item stands in, so the runtime still finds the def it refused.
            name, span = ph.Name(node.name, span=name_span), self.pos.span(node)
            empty = ph.Block((), span=span)
            result = (
                ph.Kernel((), name, (), empty, span=span)
                if kind == "kernel"
                else ph.Function(name, (), empty, span=span)
            )
            key = None
        self.diagnostics.extend(translator.diagnostics)
        for used, span in translator.uses_spans.items():
            bound = self.module_names.get(used)
            if bound is not None and kind == "fn":
                diag = refuse("uses_global", span, name=used, fn=node.name)
                bspan = (
                    self.pos.def_name(bound, bound.name)
                    if isinstance(bound, (py.FunctionDef, py.AsyncFunctionDef, py.ClassDef))
                    else self.pos.span(bound)
                )
                where = Label(bspan, f"`{used}` bound here")
                self.diagnostics.append(replace(diag, secondary=(where,)))
        first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
        self.items.append(ItemInfo(result, kind, node.name, node.lineno, first, path, key))


def _module_bindings(body: list[py.stmt], scope: ImportScope) -> dict[str, py.AST]:
    """The names a module binds (assigned, imported, defined), each at its first binding.

    A `@ph.kernel` or `@ph.fn` def is left out: a fn named in `uses` is refused by
    the checker, which knows the module's fns (SPEC.md "Functions").
    """
    out: dict[str, py.AST] = {}

    def target(t: py.AST) -> None:
        if isinstance(t, py.Name):
            out.setdefault(t.id, t)
        elif isinstance(t, (py.Tuple, py.List)):
            for e in t.elts:
                target(e)
        elif isinstance(t, py.Starred):
            target(t.value)

    for stmt in _own_statements(body):
        if isinstance(stmt, py.Assign):
            for t in stmt.targets:
                target(t)
        elif isinstance(stmt, (py.AnnAssign, py.AugAssign, py.For, py.AsyncFor)):
            target(stmt.target)
        elif isinstance(stmt, (py.With, py.AsyncWith)):
            for item in stmt.items:
                if item.optional_vars is not None:
                    target(item.optional_vars)
        elif isinstance(stmt, (py.Import, py.ImportFrom)):
            for alias in stmt.names:
                if alias.name != "*":
                    out.setdefault(alias.asname or alias.name.split(".")[0], stmt)
        elif isinstance(stmt, (py.FunctionDef, py.AsyncFunctionDef, py.ClassDef)):
            kinds = {scope.lang_name(_decorator_target(d)) for d in stmt.decorator_list}
            if not kinds & {"kernel", "fn"}:
                out.setdefault(stmt.name, stmt)
    return out


def _own_statements(body: list[py.stmt]):
    """The statements of one scope, through `if`/`try`/... but not into defs."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (py.FunctionDef, py.AsyncFunctionDef, py.ClassDef)):
            continue
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, name, None)
            if isinstance(inner, list):
                yield from _own_statements(inner)
        for handler in getattr(stmt, "handlers", ()) or ():
            yield from _own_statements(handler.body)
        for case in getattr(stmt, "cases", ()) or ():
            yield from _own_statements(case.body)


class _ItemTranslator(ExpressionTranslator):
    """Translates one `@ph.kernel` or `@ph.fn` def: its decorators, signature and body."""

    def __init__(self, positions: Positions, scope: ImportScope, kind: str):
        super().__init__(positions, scope)
        self.kind = kind
        self.key: tuple[str, ...] | None = None
        self.uses: tuple[str, ...] | None = None
        self.uses_spans: dict[str, Span] = {}  # each `uses` name at its string

    def head(self, node: py.AST, keyword: str) -> Span:
        """The span of the keyword a compound statement starts with."""
        start = self.pos.offset(node.lineno, node.col_offset)
        return self.pos.source.span(start, start + len(keyword))

    @property
    def item_words(self) -> str:
        return "kernel" if self.kind == "kernel" else "fn"

    # -- items ---------------------------------------------------------------

    def item(self, node: py.FunctionDef) -> ph.Kernel | ph.Function:
        attrs = self.decorators(node)
        name = self.ident(node.name, self.pos.def_name(node, node.name))
        first = node.decorator_list[0] if node.decorator_list else None
        span = self.span(node)
        if first is not None:
            span = self.pos.decorator(first).to(span)
        body = list(node.body)
        if body and _is_docstring(body[0]):
            body = body[1:]
        if self.kind == "kernel":
            params = tuple(self.kernel_params(node.args))
            block = self.block(body, node)
            return ph.Kernel(tuple(attrs), name, params, block, span=span)
        fn_params = tuple(self.fn_params(node.args))
        if len(body) == 1 and isinstance(body[0], py.Return) and body[0].value is not None:
            value: ph.Expr | ph.Block = self.expr(body[0].value)
        else:
            value = self.block(body, node)
        return ph.Function(name, fn_params, value, uses=self.uses, span=span)

    def decorators(self, node: py.FunctionDef) -> list[ph.Attribute]:
        attrs: list[ph.Attribute] = []
        seen_item = False
        for dec in node.decorator_list:
            target = _decorator_target(dec)
            name = self.scope.lang_name(target)
            span = self.pos.decorator(dec)
            if name is None or name == MODULE:
                self.refuse("decorator", span, name=py.unparse(target))
            elif name in ("kernel", "fn"):
                if seen_item:
                    self.refuse("kernel_and_fn", span)
                seen_item = True
                if name == self.kind and isinstance(dec, py.Call):
                    self.item_options(dec, name)
            elif name in ATTRIBUTES or name in PLANNED_ATTRIBUTES:
                attr = self.attribute(dec, name, target)
                if self.kind == "fn":
                    self.refuse("fn_attribute", span)
                else:
                    attrs.append(attr)
            elif name not in all_names():
                self.refuse("unknown", self.span(target), name=name, help=suggest(name))
            else:
                names = ", ".join(f"`{a}`" for a in ATTRIBUTES)
                self.refuse("not_attribute", self.span(target), name=name, names=names)
        return attrs

    def item_options(self, call: py.Call, name: str) -> None:
        """`@ph.kernel(key=(...), ...)` and `@ph.fn(uses=(...))`."""
        for arg in call.args:
            example = (
                '`@ph.kernel(key=("M", "N"))`' if name == "kernel" else '`@ph.fn(uses=("W",))`'
            )
            self.refuse("positional_option", self.span(arg), name=name, help=f"write {example}")
        for kw in call.keywords:
            if kw.arg is None:
                self.refuse("kwargs", self.span(kw))
            elif name == "kernel" and kw.arg == "key":
                self.key = self.name_tuple(kw)
            elif name == "kernel" and kw.arg in KERNEL_OPTIONS:
                pass  # launch-time options: the runtime reads them, the program does not
            elif name == "fn" and kw.arg == "uses":
                self.uses = self.name_tuple(kw)
                if self.uses is not None:
                    for e in kw.value.elts:
                        self.uses_spans.setdefault(e.value, self.span(e))
            else:
                self.refuse(f"{name}_option", self.span(kw), name=kw.arg)

    def name_tuple(self, kw: py.keyword) -> tuple[str, ...] | None:
        value = kw.value
        if isinstance(value, (py.Tuple, py.List)) and all(
            isinstance(e, py.Constant) and isinstance(e.value, str) and e.value.isidentifier()
            for e in value.elts
        ):
            return tuple(e.value for e in value.elts)
        self.refuse("name_list", self.span(value), option=kw.arg)
        return None

    def attribute(self, dec: py.expr, name: str, target: py.expr) -> ph.Attribute:
        tspan = self.span(target)
        name_node = ph.Name(name, span=self.pos.source.span(tspan.end - len(name), tspan.end))
        span = self.pos.decorator(dec)
        if not isinstance(dec, py.Call):
            return ph.Attribute(name_node, None, span=span)
        parts: list[tuple[tuple[int, int], ph.AttrArg | None]] = []
        for arg in dec.args:
            where = (arg.lineno, arg.col_offset)
            if isinstance(arg, py.Starred):
                self.refuse("starred", self.span(arg))
                continue
            parts.append((where, ph.PositionalArg(self.attr_literal(arg), span=self.span(arg))))
        for kw in dec.keywords:
            if kw.arg is None:
                self.refuse("kwargs", self.span(kw))
                continue
            kspan = self.span(kw)
            key = ph.Name(kw.arg, span=self.pos.source.span(kspan.start, kspan.start + len(kw.arg)))
            where = (kw.lineno, kw.col_offset)
            if isinstance(kw.value, (py.List, py.Tuple)):
                values = self.search_values(kw)
                parts.append((where, ph.SearchDim(key, values, span=kspan)))
            else:
                value = self.attr_literal(kw.value)
                parts.append((where, ph.KeywordArg(key, value, span=kspan)))
        parts.sort(key=lambda part: part[0])
        return ph.Attribute(name_node, tuple(p for _, p in parts), span=span)

    def search_values(self, kw: py.keyword) -> tuple[ph.Int, ...]:
        value = kw.value
        ok = (
            isinstance(value, py.List)
            and bool(value.elts)
            and all(isinstance(e, py.Constant) and type(e.value) is int for e in value.elts)
        )
        if not ok:
            self.refuse("search_dim", self.span(value), name=kw.arg or "X")
            return ()
        return tuple(ph.Int(e.value, span=self.span(e)) for e in value.elts)

    def attr_literal(self, node: py.expr) -> ph.AttrLiteral:
        span = self.span(node)
        if isinstance(node, py.Constant):
            value = node.value
            if isinstance(value, bool):
                return ph.Bool(value, span=span)
            if isinstance(value, int):
                return ph.Int(value, span=span)
            if isinstance(value, float):
                return ph.Float(value, text=float_text(span.text), span=span)
            if isinstance(value, str) and value.isidentifier():
                # PYTHON.md "Spellings": in an attribute, a name is a string.
                return self.ident(value, span)
        elif isinstance(node, py.Name):
            self.refuse("attr_name", span, name=node.id)
            return ph.Name(node.id, span=span)
        self.refuse("attr_arg", span)
        return self.error_expr(span)

    def kernel_params(self, args: py.arguments):
        self.refuse_param_forms(args)
        for arg in [*args.posonlyargs, *args.args]:
            name = self.param_name(arg)
            if arg.annotation is None:
                self.refuse("param_type", name.span, name=arg.arg)
                typ: ph.Type = ph.ScalarType("f32", span=name.span)
            else:
                typ = self.type(arg.annotation)
            yield ph.Param(name, typ, span=self.span(arg))

    def fn_params(self, args: py.arguments):
        self.refuse_param_forms(args)
        for arg in [*args.posonlyargs, *args.args]:
            if arg.annotation is not None:
                self.refuse("fn_param_type", self.span(arg.annotation))
            yield self.param_name(arg)

    def param_name(self, arg: py.arg) -> ph.Name:
        start = self.span(arg).start
        return self.ident(arg.arg, self.pos.source.span(start, start + len(arg.arg.encode())))

    def refuse_param_forms(self, args: py.arguments) -> None:
        if args.posonlyargs:
            self.refuse("posonly", self.span(args.posonlyargs[-1]))
        if args.vararg is not None:
            self.refuse("varargs", self.span(args.vararg), what=f"*{args.vararg.arg}")
        for arg in args.kwonlyargs:
            self.refuse("kwonly", self.span(arg))
        if args.kwarg is not None:
            self.refuse("varargs", self.span(args.kwarg), what=f"**{args.kwarg.arg}")
        for default in [*args.defaults, *(d for d in args.kw_defaults if d is not None)]:
            self.refuse("default", self.span(default))

    # -- statements ----------------------------------------------------------

    def block(self, body: list[py.stmt], owner: py.AST) -> ph.Block:
        stmts: list[ph.Stmt] = []
        for stmt in body:
            stmts.extend(self.stmt(stmt))
        span = self.pos.between(body[0], body[-1]) if body else self.span(owner)
        return ph.Block(tuple(stmts), span=span)

    def stmt(self, s: py.stmt) -> list[ph.Stmt]:
        span = self.span(s)
        if isinstance(s, py.Expr):
            if isinstance(s.value, py.Constant) and isinstance(s.value.value, str):
                self.refuse("string", self.span(s.value))
                return []
            return [ph.ExprStmt(self.expr(s.value), span=span)]
        if isinstance(s, py.Assign):
            return [self.assign(s)]
        if isinstance(s, py.AugAssign):
            return [self.aug_assign(s)]
        if isinstance(s, py.AnnAssign):
            return self.declaration(s)
        if isinstance(s, py.For):
            return [self.for_(s)]
        if isinstance(s, py.While):
            if s.orelse:
                self.refuse("loop_else", self.else_span(s.body, s.orelse), loop="while")
            return [ph.While(self.expr(s.test), self.block(s.body, s), span=span)]
        if isinstance(s, py.If):
            return [self.if_(s)]
        if isinstance(s, py.Break):
            return [ph.Break(span=span)]
        if isinstance(s, py.Continue):
            return [ph.Continue(span=span)]
        if isinstance(s, py.Return):
            if s.value is not None:
                what = "a kernel" if self.kind == "kernel" else "a statement fn"
                self.expr(s.value)
                self.refuse("return_value", self.span(s.value), item=what)
            return [ph.Return(span=span)]
        if isinstance(s, py.Pass):
            return []
        return self.refused_stmt(s)

    def refused_stmt(self, s: py.stmt) -> list[ph.Stmt]:
        if isinstance(s, (py.Global, py.Nonlocal)):
            word = "global" if isinstance(s, py.Global) else "nonlocal"
            self.refuse("global", self.span(s), what=word)
        elif isinstance(s, (py.AsyncFor, py.AsyncWith)):
            word = "async for" if isinstance(s, py.AsyncFor) else "async with"
            self.refuse("async", self.head(s, "async"), what=word)
        elif isinstance(s, (py.FunctionDef, py.AsyncFunctionDef, py.ClassDef)):
            row = spellings.STATEMENT_ROWS[type(s)]
            self.refuse(
                row, self.pos.def_name(s, s.name).to(self.head(s, "")), item=self.item_words
            )
        elif type(s) in spellings.STATEMENT_ROWS:
            row = spellings.STATEMENT_ROWS[type(s)]
            compound = isinstance(s, (py.With, py.Try)) or row in ("try", "match")
            keyword = row if compound else ""
            where = self.head(s, keyword) if compound else self.span(s)
            self.refuse(row, where, item=self.item_words)
            # The bodies are still read, so their own errors are reported in this run.
            for name in ("body", "orelse", "finalbody"):
                inner = getattr(s, name, None)
                if isinstance(inner, list):
                    self.block(inner, s)
            for handler in getattr(s, "handlers", ()) or ():
                self.block(handler.body, handler)
        else:
            self.refuse("statement", self.span(s))
        return []

    def else_span(self, body: list[py.stmt], orelse: list[py.stmt]) -> Span:
        return self.pos.token_between("else", body[-1], orelse[0], word=True)

    def assign(self, s: py.Assign) -> ph.Assign:
        if len(s.targets) > 1:
            self.refuse("multi_target", self.pos.between(s.targets[0], s.targets[-1]))
        target = self.target(s.targets[0])
        value = self.expr(s.value)
        return ph.Assign(target, "=", value, span=self.span(s))

    def aug_assign(self, s: py.AugAssign) -> ph.Assign:
        target = self.target(s.target)
        value = self.expr(s.value)
        if isinstance(s.op, (py.Pow, py.MatMult)):
            text = "**=" if isinstance(s.op, py.Pow) else "@="
            row = "pow_assign" if isinstance(s.op, py.Pow) else "matmul_assign"
            self.refuse(row, self.pos.token_between(text, s.target, s.value))
            return ph.Assign(target, "=", value, span=self.span(s))
        op = BINARY_OPS[type(s.op)] + "="
        spelling = {py.Div: "/=", py.FloorDiv: "//="}.get(type(s.op))
        return ph.Assign(target, op, value, spelling=spelling, span=self.span(s))

    def target(self, node: py.expr) -> ph.Name | ph.Index:
        span = self.span(node)
        if isinstance(node, py.Name):
            if self.scope.lang_name(node) == MODULE:
                self.refuse("module_value", span, name=node.id)
            return self.ident(node.id, span)
        if isinstance(node, py.Subscript):
            return self.subscript(node)
        if isinstance(node, (py.Tuple, py.List)):
            self.refuse("unpack", span)
        elif isinstance(node, py.Attribute):
            self.refuse("bad_target", span, what="an attribute")
        else:
            self.refuse("bad_target", span, what="this expression")
        return self.error_expr(span)

    def declaration(self, s: py.AnnAssign) -> list[ph.Stmt]:
        span = self.span(s)
        ann = s.annotation
        decl = self.scope.lang_name(ann)
        type_node: py.expr | None = None
        if decl not in ("let", "var") and isinstance(ann, py.Subscript):
            decl = self.scope.lang_name(ann.value)
            type_node = ann.slice
        if decl not in ("let", "var"):
            self.refuse("local_annotation", self.span(ann))
            if s.value is not None:
                self.expr(s.value)
            return []
        if not isinstance(s.target, py.Name) or not s.simple:
            self.refuse("decl_target", self.span(s.target))
            return []
        name = self.ident(s.target.id, self.span(s.target))
        typ: ph.Type | None = None
        if type_node is not None:
            if isinstance(type_node, py.Tuple):
                self.refuse("decl_args", self.span(type_node), decl=decl)
            else:
                typ = self.type(type_node)
        value = self.expr(s.value) if s.value is not None else None
        if decl == "let":
            if value is None:
                self.refuse("let_needs_value", span)
                value = self.error_expr(span)
            return [ph.Let(name, typ, value, span=span)]
        if value is None and typ is None:
            self.refuse("var_needs_type", span)
        return [ph.Var(name, typ, value, span=span)]

    def for_(self, s: py.For) -> ph.For:
        span = self.span(s)
        if s.orelse:
            self.refuse("loop_else", self.else_span(s.body, s.orelse), loop="for")
        if isinstance(s.target, py.Name):
            var = self.ident(s.target.id, self.span(s.target))
        else:
            self.refuse("for_target", self.span(s.target))
            var = self.error_expr(self.span(s.target))
        unroll: ph.Expr | None = None
        header = s.iter
        if isinstance(header, py.Call) and self.scope.lang_name(header.func) == "unroll":
            if len(header.args) != 2 or header.keywords:
                self.refuse("unroll_args", self.span(header))
                header = None
            else:
                unroll = self.expr(header.args[0])
                header = header.args[1]
        lo = hi = step = None
        if header is not None:
            bounds = self.range_bounds(header)
            if bounds is not None:
                lo, hi, step = bounds
        fallback = self.span(s.iter)
        body = self.block(s.body, s)
        return ph.For(
            var,
            lo if lo is not None else self.error_expr(fallback),
            hi if hi is not None else self.error_expr(fallback),
            step,
            unroll,
            body,
            span=span,
        )

    def range_bounds(self, node: py.expr):
        """`range(hi)`, `range(lo, hi)`, `range(lo, hi, step)` -> (lo, hi, step)."""
        is_range = (
            isinstance(node, py.Call)
            and isinstance(node.func, py.Name)
            and node.func.id == "range"
            and self.scope.lang_name(node.func) is None
        )
        if not is_range:
            self.refuse("for_iter", self.span(node))
            return None
        for kw in node.keywords:
            self.refuse("keyword", self.span(kw), callee="range")
        if any(isinstance(a, py.Starred) for a in node.args):
            for a in node.args:
                if isinstance(a, py.Starred):
                    self.refuse("starred", self.span(a))
            return None
        args = [self.expr(a) for a in node.args]
        if len(args) == 1:
            # `range(hi)` counts from 0, as `.ph` writes `range(0, hi)`.
            return ph.Int(0, span=self.span(node.func)), args[0], None
        if len(args) == 2:
            return args[0], args[1], None
        if len(args) == 3:
            return args[0], args[1], args[2]
        self.refuse("range_args", self.span(node))
        return None

    def if_(self, s: py.If) -> ph.If:
        cond = self.expr(s.test)
        then = self.block(s.body, s)
        orelse: ph.Block | ph.If | None = None
        if s.orelse:
            first = s.orelse[0]
            is_elif = (
                len(s.orelse) == 1
                and isinstance(first, py.If)
                and self.span(first).text.startswith("elif")
            )
            if is_elif:
                orelse = self.if_(first)
            else:
                orelse = self.block(s.orelse, s)
        return ph.If(cond, then, orelse, span=self.span(s))


def _is_docstring(stmt: py.stmt) -> bool:
    return (
        isinstance(stmt, py.Expr)
        and isinstance(stmt.value, py.Constant)
        and isinstance(stmt.value.value, str)
    )
