"""One checking pass over one kernel's body: statements, expressions, fns, uniformity.

`phobos.sema.check` runs passes until every var's and loop's uniformity settles
(a var is as varying as anything assigned to it through every iteration); the last
pass's hir and diagnostics are the result.
"""

from __future__ import annotations

from phobos.diagnostics.diagnostic import Diagnostic, Label
from phobos.names import BUILTINS, CONVERSIONS, SCALARS
from phobos.sema import hir
from phobos.sema.declarations import positive_extent
from phobos.sema.fold import FoldError, fold_binary, fold_convert, fold_unary, round_float
from phobos.sema.inline import is_python, reads_from_caller, written_params
from phobos.sema.missing import cannot_find
from phobos.sema.ranks import rank_help
from phobos.sema.registers import kernel_registers, note_update, register_decl
from phobos.sema.scope import Binding, Scope
from phobos.sema.typing import (
    FLOATS,
    INTEGERS,
    S,
    broadcast,
    elem,
    fits,
    is_integer,
    is_shaped,
    join_names,
    operator_problem,
    shape_text,
    widens_on_read,
)
from phobos.sema.uniformity import UniformityMixin
from phobos.syntax import ast

U, W, V = hir.UNIFORM, hir.WARP, hir.VARYING
ERR = hir.Scalar("{error}")
LANES = 32


class Bail(Exception):
    """Stops checking one expression after its diagnostic."""


def err_const() -> hir.Const:
    return hir.Const(0, ERR)


class KernelChecker(UniformityMixin):
    def __init__(self, program, kernel, setup, index_width, table):
        self.program = program
        self.kernel = kernel
        self.setup = setup
        self.width = index_width
        self.idx = S(f"i{index_width}")
        self.table = table
        self.changed = False
        self.diags: list[Diagnostic] = []
        self.next_id = 0
        self.fns = {i.name.id: i for i in program.items if isinstance(i, ast.Function)}
        self.kernels = {i.name.id for i in program.items if isinstance(i, ast.Kernel)}
        self.weak: set[int] = set()  # ids of untyped literal constants
        self.keep: list = []
        self.chain: tuple = ()  # the calls being inlined, outermost first
        self.fn_stack: list[tuple[str, ast.Call]] = []
        self.frames: list[dict] = [{"loops": 0, "fn": None}]
        self.tile_target: tuple | None = None  # dims of the tile being assigned
        self.accumulating = None  # the `dot` call of `acc += dot(..)` into an f16 tile
        self.statement = None  # the call of the expression statement being checked (`attend`)
        self.python = is_python(kernel)
        self.checked_uses: set[str] = set()
        self.dyn: dict[str, hir.Sym] = {}
        self.run_state = None  # set while a thread's runs are checked (phobos.sema.runs)
        self.pending: list = []  # statements a `generate` splices before the current one
        self.cond_depth = 0  # how many `if`s and `while`s enclose the current statement
        self.registers: dict[int, tuple] = {}  # id(sym) -> (sym, cond_depth) per @registers tile
        self.init_uniformity()

    # ------------------------------------------------------------------ utilities

    def error(self, code, message, node, label="", *, help=(), notes=()):
        span = node.span if node is not None else None
        self.diags.append(
            Diagnostic.error(
                code,
                message,
                Label(span, label) if span is not None else None,
                help=help,
                notes=notes,
            )
        )

    def sym(self, name, kind, type_, uni=U) -> hir.Sym:
        self.next_id += 1
        return hir.Sym(name, self.next_id, kind, type_, uni)

    def lit(self, value, type_, span=None) -> hir.Const:
        c = hir.Const(value, type_, span=span)
        self.weak.add(id(c))
        self.keep.append(c)
        return c

    def is_weak(self, e) -> bool:
        return isinstance(e, hir.Const) and id(e) in self.weak

    def key(self, node) -> tuple:
        return (id(node), self.chain)

    def decl_help(self, name: str) -> str:
        if self.python:
            return f"declare it first: `{name}: ph.var = ...` or `{name}: ph.let = ...`"
        return f"declare it first with `var {name} = ...` or `let {name} = ...`"

    # ------------------------------------------------------------------ the kernel

    def run(self):
        k = self.kernel
        scope = Scope()
        params = []
        dyn_order: list[str] = []
        for p in k.params:
            t = self.resolve_type(p.type, dyn_order, param=True)
            s = self.sym(p.name.id, "param", t, U)
            params.append(s)
            scope.bind(p.name.id, Binding(s, key=("param", p.name.id), origin=p))
        for name in dyn_order:
            self.dyn[name] = self.sym(name, "dim", self.idx, U)
        body = self.block(k.body, Scope(scope))
        kernel = hir.Kernel(
            k.name.id,
            tuple(params),
            body,
            self.setup.attrs,
            tuple(self.setup.variant.items()),
            tuple(dyn_order),
            self.width,
            self.setup.threads,
            span=k.span,
            registers=kernel_registers(self),
        )
        return kernel, self.diags

    def resolve_dim(self, d, dyn_order=None):
        if isinstance(d, ast.Int):
            refused = positive_extent(d)
            if refused is not None:
                self.diags.append(refused)
                return 1
            return d.value
        if d.id in self.setup.variant:
            return self.setup.variant[d.id]
        if dyn_order is not None:
            if d.id not in dyn_order:
                dyn_order.append(d.id)
            return hir.Dyn(d.id)
        if d.id in self.dyn:
            return hir.Dyn(d.id)
        self.error(
            "E0305",
            f"a tile's dimension `{d.id}` must be a literal or an `@autotune` constant",
            d,
            "not known when the kernel compiles",
        )
        return 1

    def resolve_type(self, t, dyn_order=None, param=False):
        if isinstance(t, ast.ScalarType):
            return S(t.name)
        if isinstance(t, ast.TensorType):
            if not param:
                self.error(
                    "E0308",
                    "a tensor is a kernel parameter only",
                    t,
                    "tensor type here",
                    help="declare a tile: `tile<T>[..]`, or take the tensor as a parameter",
                )
                raise Bail
            if t.elem.name == "bool":  # a bool has no width in memory to load or store
                self.error(
                    "E0330",
                    "a tensor of `bool` is not supported",
                    t.elem,
                    "no memory layout",
                    help="take a `u8` tensor and compare it: `A[i] != 0`",
                )
            return hir.TensorT(
                S(t.elem.name), tuple(self.resolve_dim(d, dyn_order) for d in t.dims)
            )
        dims = tuple(self.resolve_dim(d, dyn_order if param else None) for d in t.dims)
        return hir.TileT(S(t.elem.name), dims)

    # ------------------------------------------------------------------ statements

    def block(self, b: ast.Block, scope: Scope) -> hir.Block:
        out = []
        for s in b.stmts:
            saved, self.pending = self.pending, []
            try:
                r = self.stmt(s, scope)
            except Bail:
                continue
            finally:
                before, self.pending = self.pending, saved
            out.extend(before)  # what a `generate` in `s` runs first
            if r is not None:
                out.append(r)
        return hir.Block(tuple(out), span=b.span)

    def stmt(self, s, scope):
        if isinstance(s, ast.Let):
            return self.let_stmt(s, scope)
        if isinstance(s, ast.Var):
            return self.var_stmt(s, scope)
        if isinstance(s, ast.Assign):
            return self.assign_stmt(s, scope)
        if isinstance(s, ast.For):
            return self.for_stmt(s, scope)
        if isinstance(s, ast.While):
            return self.while_stmt(s, scope)
        if isinstance(s, ast.If):
            return self.if_stmt(s, scope)
        if isinstance(s, (ast.Break, ast.Continue)):
            return self.jump_stmt(s)
        if isinstance(s, ast.Return):
            return self.return_stmt(s)
        if isinstance(s, ast.ExprStmt):
            return self.expr_stmt(s, scope)
        return None

    def let_stmt(self, s: ast.Let, scope):
        declared = self.resolve_type(s.type) if s.type is not None else None
        tile = isinstance(declared, hir.TileT)
        value = self.bound_anyway(s, "let", declared, scope, tile)
        t = declared if declared is not None else value.type
        if (
            isinstance(value.type, hir.TileT)
            and declared is None
            and not isinstance(value, (hir.Slice, hir.Ref))
        ):
            t = value.type
        if not isinstance(value, (hir.Slice, hir.Ref)):
            self.tile_statement(s, value, self.stmt_op(s))
        base_key = self.view_key(value, scope)
        sym = self.sym(s.name.id, "let", t, value.uni if not is_shaped(t) else U)
        key = base_key if base_key is not None else self.key(s)
        scope.bind(s.name.id, Binding(sym, key=key, origin=s))
        return hir.Let(sym, value, span=s.span)

    def var_stmt(self, s: ast.Var, scope):
        declared = self.resolve_type(s.type) if s.type is not None else None
        if s.value is None:
            if not isinstance(declared, hir.TileT):
                shown = s.type.name if isinstance(s.type, ast.ScalarType) else "tile"
                self.error(
                    "E0318",
                    f"`var {s.name.id}` needs a value",
                    s,
                    "no initial value",
                    help=f"only a tile may start uninitialised; give it one: `var {s.name.id}: {shown} = ...`",
                )
                raise Bail
            sym = self.sym(s.name.id, "var", declared, U)
            scope.bind(s.name.id, Binding(sym, key=self.key(s), origin=s))
            register_decl(self, s, sym)
            return hir.VarDecl(sym, None, span=s.span)
        tile_assign = isinstance(declared, hir.TileT) or declared is None
        value = self.bound_anyway(s, "var", declared, scope, tile_assign)
        if declared is not None:
            t = declared
        elif is_shaped(value.type):
            t = hir.TileT(value.type.elem, value.type.dims)  # a copy into a tile
        else:
            t = value.type
        if t == ERR:
            raise Bail
        self.tile_statement(s, value, self.stmt_op(s))
        key = self.key(s)
        if is_shaped(t):
            uni = U
        else:
            uni = self.raise_var(key, max(value.uni, self.ctl()))
        sym = self.sym(s.name.id, "var", t, uni)
        scope.bind(s.name.id, Binding(sym, key=key, origin=s))
        register_decl(self, s, sym)
        return hir.VarDecl(sym, value, span=s.span)

    def bound_anyway(self, s, kind, declared, scope, tile_assign):
        """The checked value of declaration `s`; when it is refused, the name is still
        bound (to its declared type, or to the error type, which later uses pass over
        silently), so one mistake is reported once, not again at every use."""
        try:
            return self.value_for(s.value, scope, declared, s, tile_assign=tile_assign)
        except Bail:
            sym = self.sym(s.name.id, kind, declared if declared is not None else ERR, U)
            scope.bind(s.name.id, Binding(sym, key=self.key(s), origin=s))
            raise

    def value_for(self, e, scope, declared, stmt, *, tile_assign):
        """`e` checked as the value of a declaration or assignment of type `declared`."""
        saved = self.tile_target
        if tile_assign and isinstance(declared, hir.TileT):
            self.tile_target = declared.dims
        elif tile_assign and declared is None:
            self.tile_target = ()  # the shape comes from the value
        else:
            self.tile_target = None
        try:
            value = self.expr(e, scope)
        finally:
            self.tile_target = saved
        if declared is None or value.type == ERR:
            return value
        return self.coerce(value, declared, e)

    def coerce(self, value, target, node):
        """`value` converted to `target` where the language does so implicitly."""
        if value.type == ERR:
            return value
        te, ve = elem(target), elem(value.type)
        if is_shaped(target):
            if is_shaped(value.type) and not fits(value.type.dims, target.dims):
                ranks = rank_help(value, value.type.dims, target.dims, python=self.python)
                self.error(
                    "E0304",
                    f"a value of shape {shape_text(value.type.dims)} does not fit "
                    f"{shape_text(target.dims)}",
                    node,
                    f"shape {shape_text(value.type.dims)}",
                    help=ranks or "tiles broadcast only over axes of extent 1",
                )
                raise Bail
        elif is_shaped(value.type):
            self.error(
                "E0309",
                f"expected `{target}`, found `{value.type}`",
                node,
                "a tile, not a scalar",
            )
            raise Bail
        read = self.narrow_read(value)
        if read is not None and elem(read.type) == te:
            # an element read stored back as its own type: the bytes it read, not an index
            return read
        if ve != te:
            if self.is_weak(value):
                return self.literal_as(value, te, node)
            j = join_names(ve.name, te.name)
            if j != te.name:
                self.error(
                    "E0309",
                    f"expected `{te}`, found `{ve}`",
                    node,
                    f"`{ve}` here",
                    help=f"convert it: `{te}(...)`"
                    if te.name in CONVERSIONS and ve.name != "bool"
                    else (),
                )
                raise Bail
            return self.convert(value, te)
        return value

    def literal_as(self, c: hir.Const, t: hir.Scalar, node):
        v = c.value
        if t.name == "bool" or isinstance(v, bool):
            self.error(
                "E0309",
                f"expected `{t}`, found `{c.type}`",
                node,
                "no conversion to or from `bool`",
            )
            raise Bail
        if isinstance(v, float) and t.name in INTEGERS:
            self.error(
                "E0309",
                f"expected `{t}`, found a float literal",
                node,
                "a float",
                help=f"convert it: `{t}(...)`" if t.name in CONVERSIONS else (),
            )
            raise Bail
        if t.name in INTEGERS:
            if not self.int_fits(v, t.name):
                self.error(
                    "E0450", f"literal `{v}` does not fit in `{t}`", node, f"out of range for `{t}`"
                )
                raise Bail
            return hir.Const(v, t)
        return hir.Const(round_float(float(v), t.name), t)

    def as_index(self, value: int) -> int:
        """An exactly folded constant as the run-time index it becomes: it wraps."""
        from phobos.sema.fold import wrap

        return wrap(value, self.idx.name)

    def int_fits(self, v: int, t: str) -> bool:
        bits = int(t[1:])
        if t.startswith("u"):
            return 0 <= v < 1 << bits
        return -(1 << (bits - 1)) <= v < 1 << (bits - 1)

    def convert(self, e, t: hir.Scalar):
        if elem(e.type) == t:
            return e
        if isinstance(e, hir.Const):
            try:
                return hir.Const(fold_convert(e.value, t.name), t, span=e.span)
            except FoldError:
                pass
        nt = type(e.type)(t, e.type.dims) if is_shaped(e.type) else t
        if isinstance(nt, hir.TensorT):
            nt = hir.TileT(t, e.type.dims)
        return hir.Convert(e, nt, e.uni, span=e.span)

    def view_key(self, value, scope):
        """The buffer a `let` view reads, for the store-then-read rule."""
        if isinstance(value, hir.Slice) and is_shaped(value.type):
            return self.buffer_key(value.base)
        if isinstance(value, hir.Ref) and is_shaped(value.type):
            return self.buffer_key(value)
        return None

    def lookup_assign_target(self, name: ast.Name, scope, *, indexed: bool):
        b = scope.lookup(name.id)
        if b is None:
            if name.id in self.setup.variant or name.id in self.dyn:
                what = (
                    "an `@autotune` constant"
                    if name.id in self.setup.variant
                    else "a tensor dimension"
                )
                self.error(
                    "E0264", f"cannot assign to `{name.id}`, {what}", name, "fixed for the launch"
                )
                raise Bail
            self.error(
                "E0251",
                f"cannot assign to `{name.id}`: it is not declared",
                name,
                "assigned before any declaration",
                help=self.decl_help(name.id),
            )
            raise Bail
        if b.alias is not None:
            self.error(
                "E0259",
                f"cannot assign to `{name.id}`: the fn was passed an expression for it",
                name,
                "not a name at the call",
                help="pass a name for a parameter the fn indexes or assigns",
            )
            raise Bail
        sym = b.sym
        if not indexed:
            if sym.kind == "let":
                self.error(
                    "E0252",
                    f"cannot assign twice to immutable `{name.id}`",
                    name,
                    "declared with `let`",
                    help=f"make it mutable: `{name.id}: ph.var = ...`"
                    if self.python
                    else f"make it mutable: `var {name.id} = ...`",
                )
                raise Bail
            if sym.kind == "param":
                self.error(
                    "E0252",
                    f"cannot assign to parameter `{name.id}`",
                    name,
                    "a parameter is immutable",
                    help=f"copy it into a `var` first: `var {name.id}2 = {name.id}`",
                )
                raise Bail
            if sym.kind == "loop":
                self.error(
                    "E0254",
                    f"cannot assign to loop variable `{name.id}`",
                    name,
                    "the loop sets it",
                    help="use a `while` loop and a `var` to step it by hand",
                )
                raise Bail
        return b

    def assign_stmt(self, s: ast.Assign, scope):
        target_ast = s.target
        if isinstance(target_ast, ast.Name):
            b = self.lookup_assign_target(target_ast, scope, indexed=False)
            sym = b.sym
            target = hir.Ref(sym, sym.type, self.read_uni(b), span=target_ast.span)
        else:
            base = target_ast.base
            if not isinstance(base, ast.Name):
                self.error("E0259", "only a name can be indexed and assigned", base, "not a name")
                raise Bail
            b = self.lookup_assign_target(base, scope, indexed=True)
            if b.sym is not None and not is_shaped(b.sym.type):
                self.error(
                    "E0315",
                    f"cannot index `{base.id}`, a scalar `{b.sym.type}`",
                    target_ast,
                    "not a tensor or a tile",
                )
                raise Bail
            target = self.index(target_ast, scope)
        ttype = target.type
        if s.spelling == "/=" or s.spelling == "//=":
            self.check_division_spelling(s.spelling[:-1], elem(ttype), s)
        tile = is_shaped(ttype)
        saved = self.tile_target
        self.tile_target = ttype.dims if tile else None
        # `acc += dot(a, b)` into an f16 tile: under @tensorcore the product accumulates in
        # f16 (ours; `phobos.sema.builtins`), where it would otherwise be an f32 value.
        call = s.value if isinstance(s.value, ast.Call) else None
        if (s.op == "+=" and tile and elem(ttype).name == "f16" and call is not None
                and isinstance(call.func, ast.Name) and call.func.id in ("dot", "dot_t")):  # fmt: skip
            self.accumulating = s.value
        try:
            value = self.expr(s.value, scope)
        finally:
            self.tile_target = saved
            self.accumulating = None
        if value.type == ERR or ttype == ERR:
            raise Bail
        if s.op != "=":
            op = s.op[:-1]
            probe = self.binary_typed(op, target, value, s)
            if elem(probe.type) != elem(ttype):
                value = self.coerce(value, elem(ttype) if not tile else ttype, s.value)
            elif is_shaped(value.type) or not tile:
                value = self.coerce(value, ttype if tile else elem(ttype), s.value)
            else:
                value = self.coerce(value, elem(ttype), s.value)
        else:
            value = self.coerce(value, ttype if tile else elem(ttype), s.value)
        note_update(self, target, s)
        op_name = self.stmt_op(s)
        if tile or is_shaped(value.type):
            self.tile_statement(s, value, op_name, target=target)
        # uniformity of what the assignment writes
        level = max(value.uni, self.ctl())
        if isinstance(target, hir.Ref) and not tile:
            self.raise_var(b.key, level)
        elif isinstance(target, hir.Slice):
            sub_level = max([level] + [sub.start.uni for sub in target.subs])
            if not is_shaped(ttype) and sub_level > U:
                self.mark_dirty(target.base, base.id)
        return hir.Assign(target, s.op, value, span=s.span)

    def for_stmt(self, s: ast.For, scope):
        lo = self.index_expr(s.lo, scope, "a loop bound")
        hi = self.index_expr(s.hi, scope, "a loop bound")
        if s.step is not None:
            step = self.index_expr(s.step, scope, "a loop step")
            if isinstance(step, hir.Const) and step.value <= 0:
                self.error(
                    "E0453",
                    f"a loop's step must be positive, not `{step.value}`",
                    s.step,
                    "not positive",
                )
                raise Bail
        else:
            step = hir.Const(1, self.idx)
        unroll = None
        if s.unroll is not None:
            u = self.expr(s.unroll, scope)
            if (
                not isinstance(u, hir.Const)
                or not isinstance(u.value, int)
                or isinstance(u.value, bool)
                or u.value < 1
            ):
                self.error(
                    "E0453",
                    "`unroll` takes a positive constant",
                    s.unroll,
                    "not a positive constant",
                    help="write a literal or an `@autotune` constant",
                )
                raise Bail
            unroll = u.value
        bound_uni = max(lo.uni, hi.uni, step.uni)
        return self.loop(
            s,
            scope,
            bound_uni,
            lambda inner, level: self.sym(s.var.id, "loop", self.idx, level),
            lambda var, body: hir.For(var, lo, hi, step, unroll, body, span=s.span),
        )

    def while_stmt(self, s: ast.While, scope):
        cond = self.condition(s.cond, scope)
        self.cond_depth += 1
        try:
            return self.loop(
                s, scope, cond.uni, None, lambda _, body: hir.While(cond, body, span=s.span)
            )
        finally:
            self.cond_depth -= 1

    def loop(self, s, scope, bound_uni, make_var, build):
        key = ("loop",) + self.key(s)
        saved = self.enter_loop(key, bound_uni)
        self.frames[-1]["loops"] += 1
        try:
            inner = Scope(scope)
            var = None
            if make_var is not None:
                var = make_var(inner, self.ctl())
                inner.bind(s.var.id, Binding(var, key=self.key(s), origin=s))
            body = self.block(s.body, inner)
        finally:
            self.frames[-1]["loops"] -= 1
            self.leave_loop(key, saved)
        return build(var, body)

    def if_stmt(self, s: ast.If, scope):
        cond = self.condition(s.cond, scope)
        saved = self.enter_branch(cond.uni)
        self.cond_depth += 1
        try:
            then = self.block(s.then, Scope(scope))
            mid = self.between_branches(saved)
            orelse = None
            if isinstance(s.orelse, ast.Block):
                orelse = self.block(s.orelse, Scope(scope))
            elif isinstance(s.orelse, ast.If):
                try:
                    inner = self.if_stmt(s.orelse, Scope(scope))
                    orelse = hir.Block((inner,), span=s.orelse.span)
                except Bail:
                    orelse = None
        finally:
            self.cond_depth -= 1
            self.leave_branch(saved, locals().get("mid"))
        return hir.If(cond, then, orelse, span=s.span)

    def condition(self, e, scope):
        c = self.expr(e, scope)
        if c.type == ERR:
            raise Bail
        if c.type != S("bool"):
            self.error(
                "E0319",
                f"a condition must be a `bool`, found `{c.type}`",
                e,
                "not a `bool`",
                help="compare it, as in `x != 0`" if not is_shaped(c.type) else (),
            )
            raise Bail
        return c

    def jump_stmt(self, s):
        word = "break" if isinstance(s, ast.Break) else "continue"
        frame = self.frames[-1]
        if frame["loops"] == 0:
            where = f"the body of fn `{frame['fn']}`" if frame["fn"] else "a loop"
            self.error(
                "E0258",
                f"`{word}` outside of a loop"
                if not frame["fn"]
                else f"`{word}` outside the loops of {where}",
                s,
                "no enclosing loop here",
                help="a fn body may only leave its own loops" if frame["fn"] else (),
            )
            raise Bail
        self.jump_under_control()
        return hir.Break(span=s.span) if word == "break" else hir.Continue(span=s.span)

    def return_stmt(self, s):
        frame = self.frames[-1]
        if frame["fn"]:
            self.error(
                "E0257",
                f"`return` in the statement body of fn `{frame['fn']}`",
                s,
                "a fn body is spliced into its caller",
                help="restructure it with `if`; a statement fn may not return",
            )
            raise Bail
        self.return_under_control()
        return hir.Return(span=s.span)

    def expr_stmt(self, s: ast.ExprStmt, scope):
        e = s.expr
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id in self.fns:
            fn = self.fns[e.func.id]
            if isinstance(fn.body, ast.Block) and scope.lookup(e.func.id) is None:
                return self.splice(fn, e, scope)
        saved, self.statement = self.statement, e
        try:
            value = self.expr(e, scope)
        finally:
            self.statement = saved
        if value.type == ERR:
            raise Bail
        return hir.ExprStmt(value, span=s.span)

    def stmt_op(self, s) -> str:
        text = s.span.text.splitlines()[0].strip() if s.span is not None else "statement"
        return text if len(text) <= 48 else text[:45] + "..."

    # ------------------------------------------------------------------ fns

    def fn_checks(self, fn: ast.Function, call: ast.Call):
        if len(call.args) != len(fn.params):
            self.error(
                "E0255",
                f"fn `{fn.name.id}` takes {len(fn.params)} argument{'s' if len(fn.params) != 1 else ''} "
                f"but {len(call.args)} {'were' if len(call.args) != 1 else 'was'} given",
                call,
                f"{len(call.args)} given",
                help=f"`{fn.name.id}` is defined with ({', '.join(p.id for p in fn.params)})",
            )
            raise Bail
        names = [n for n, _ in self.fn_stack]
        if fn.name.id in names:
            chain = names[names.index(fn.name.id) :] + [fn.name.id]
            self.error(
                "E0256",
                f"fn `{fn.name.id}` calls itself"
                + ("" if len(chain) == 2 else " through other fns"),
                call,
                "recursive call",
                notes=[f"the call chain: {' -> '.join(f'`{n}`' for n in chain)}"],
                help="a fn is inlined at every call, so it cannot recurse; write a loop",
            )
            raise Bail
        self.check_uses(fn)

    def check_uses(self, fn: ast.Function):
        if fn.name.id in self.checked_uses:
            return
        self.checked_uses.add(fn.name.id)
        if fn.uses is None and not is_python(fn):
            return
        uses = tuple(fn.uses or ())
        module_fns = set(self.fns)
        for name in uses:
            if name in module_fns:
                self.error(
                    "E0261",
                    f"`{name}` in `uses` of fn `{fn.name.id}` is a fn of this module",
                    fn.name,
                    f"lists `{name}`",
                    help="a fn of the module is called by name; take it out of `uses`",
                )
        free = reads_from_caller(fn, module_fns)
        for name, node in free.items():
            if name not in uses:
                listed = ", ".join(f'"{n}"' for n in (*uses, name))
                comma = "," if len(uses) == 0 else ""
                self.error(
                    "E0260",
                    f"fn `{fn.name.id}` reads `{name}` from its caller, but `uses` does not list it",
                    node,
                    "read from the caller",
                    help=f"list it: `@ph.fn(uses=({listed}{comma}))`",
                )

    def bind_params(self, fn, call, scope, *, statement: bool):
        inner = Scope(scope)
        written = written_params(fn) if statement else {}
        for p, a in zip(fn.params, call.args, strict=True):
            if (
                isinstance(a, ast.Name)
                and scope.lookup(a.id) is not None
                and scope.lookup(a.id).sym is not None
            ):
                inner.bind(p.id, scope.lookup(a.id))  # a name aliases the caller's binding
                continue
            if p.id in written:
                self.error(
                    "E0259",
                    f"fn `{fn.name.id}` indexes or assigns `{p.id}`, so it must be passed a name",
                    a,
                    "not a name",
                    help=f"bind it first: `let {p.id} = ...`, and pass `{p.id}`",
                )
                raise Bail
            value = self.expr(a, scope)
            inner.bind(p.id, Binding(alias=value, origin=a))
        return inner

    def inline_expr_fn(self, fn, call, scope):
        self.fn_checks(fn, call)
        if isinstance(fn.body, ast.Block):
            self.error(
                "E0263",
                f"fn `{fn.name.id}` has a statement body, so it has no value",
                call,
                "used as a value",
                help=f"call it as a statement: `{fn.name.id}(...)` on its own line",
            )
            raise Bail
        inner = self.bind_params(fn, call, scope, statement=False)
        self.fn_stack.append((fn.name.id, call))
        self.chain = self.chain + (id(call),)
        try:
            value = self.expr(fn.body, inner)
        finally:
            self.fn_stack.pop()
            self.chain = self.chain[:-1]
        return value

    def splice(self, fn, call, scope):
        self.fn_checks(fn, call)
        inner = self.bind_params(fn, call, scope, statement=True)
        self.fn_stack.append((fn.name.id, call))
        self.chain = self.chain + (id(call),)
        self.frames.append({"loops": 0, "fn": fn.name.id})
        try:
            body = self.block(fn.body, inner)
        finally:
            self.frames.pop()
            self.fn_stack.pop()
            self.chain = self.chain[:-1]
        return hir.Block(body.stmts, span=call.span)

    # ------------------------------------------------------------------ expressions

    def index_expr(self, e, scope, what):
        v = self.expr(e, scope)
        if v.type == ERR:
            raise Bail
        if is_shaped(v.type) or not is_integer(v.type):
            self.error("E0307", f"{what} must be an index, found `{v.type}`", e, "not an integer")
            raise Bail
        if elem(v.type).name in ("u8", "u16", "u32") or (
            elem(v.type) != self.idx and not self.is_weak(v)
        ):
            return self.convert(v, self.idx)
        if self.is_weak(v):
            return hir.Const(v.value, self.idx)
        return v

    def expr(self, e, scope) -> hir.Expr:
        if isinstance(e, ast.Int):
            return self.int_literal(e)
        if isinstance(e, ast.Float):
            v = round_float(e.value, "f32")
            if v in (float("inf"), float("-inf")):
                self.error(
                    "E0452",
                    f"float literal `{e.text or e.value}` is out of range for `f32`",
                    e,
                    "too large",
                )
                raise Bail
            return self.lit(v, S("f32"), e.span)
        if isinstance(e, ast.Bool):
            return hir.Const(e.value, S("bool"), span=e.span)
        if isinstance(e, ast.Name):
            return self.name(e, scope)
        if isinstance(e, ast.Ctx):
            return self.ctx(e)
        if isinstance(e, ast.Unary):
            return self.unary(e, scope)
        if isinstance(e, ast.Binary):
            return self.binary(e, scope)
        if isinstance(e, ast.Index):
            return self.scalar_read(self.index(e, scope))
        if isinstance(e, ast.Call):
            return self.call(e, scope)
        raise Bail

    def scalar_read(self, read):
        """A point read or an `elem` as the value it gives: an i8, u8, u16 or u32 element
        is an index, sign- or zero-extended (SPEC.md "Types"). A tile read keeps its type."""
        if not widens_on_read(read.type):
            return read
        return hir.Convert(read, self.idx, read.uni, span=read.span)

    def narrow_read(self, value):
        """The element read that `value` widens, or None: `scalar_read`'s inverse."""
        if (
            isinstance(value, hir.Convert)
            and value.type == self.idx
            and widens_on_read(value.value.type)
            and (
                isinstance(value.value, hir.Slice)
                or isinstance(value.value, hir.Builtin)
                and value.value.name == "elem"
            )
        ):
            return value.value
        return None

    def int_literal(self, e: ast.Int):
        v = e.value
        limit = (1 << self.width) - 1
        if v > limit:
            self.error(
                "E0450",
                f"integer literal `{v}` is too large for a {self.width}-bit index",
                e,
                f"past {limit}",
                help="compile at 64-bit indices" if self.width == 32 else (),
            )
            raise Bail
        if v >= 1 << (self.width - 1):
            v -= 1 << self.width  # read as its bits
        c = self.lit(v, self.idx, e.span)
        return c

    def name(self, e: ast.Name, scope):
        b = scope.lookup(e.id)
        if b is not None:
            if b.alias is not None:
                return b.alias
            sym = b.sym
            return hir.Ref(sym, sym.type, self.read_uni(b), span=e.span)
        if e.id in self.setup.variant:
            return hir.Const(self.setup.variant[e.id], self.idx, span=e.span)
        if e.id in self.dyn:
            return hir.Ref(self.dyn[e.id], self.idx, U, span=e.span)
        if e.id in self.fns or e.id in BUILTINS or e.id in SCALARS:
            what = "fn" if e.id in self.fns else "built-in" if e.id in BUILTINS else "type"
            self.error(
                "E0262",
                f"`{e.id}` is a {what}, not a value",
                e,
                f"a {what}",
                help=f"call it: `{e.id}(...)`" if what != "type" else (),
            )
            raise Bail
        candidates = scope.visible() | set(self.setup.variant) | set(self.dyn)
        self.diags.append(cannot_find(e.id, e.span, candidates, call=False))
        raise Bail

    def ctx(self, e: ast.Ctx):
        f = e.field
        if f == "lanes":
            return hir.Const(LANES, self.idx, span=e.span)
        if f == "threads":
            return hir.Const(self.setup.threads, self.idx, span=e.span)
        if f == "warps":
            if self.setup.threads % LANES:
                self.error(
                    "E0453",
                    f"`ctx.warps` needs whole warps, but the CTA has {self.setup.threads} threads",
                    e,
                    "not a whole number of warps",
                )
                raise Bail
            return hir.Const(self.setup.threads // LANES, self.idx, span=e.span)
        uni = {"block": U, "blocks": U, "warp": W, "thread": V, "lane": V}.get(f, U)
        return hir.CtxRead(f, e.axis, self.idx, uni, span=e.span)

    def unary(self, e: ast.Unary, scope):
        v = self.expr(e.operand, scope)
        if v.type == ERR:
            return v
        t = elem(v.type)
        if e.op == "!" and is_shaped(v.type):
            self.error("E0301", "`!` takes a scalar `bool`, not a tile", e, "a tile")
            raise Bail
        why = operator_problem(e.op, t.name, unary=True)
        if why is not None:
            self.error("E0301", why, e, f"`{t}` here")
            raise Bail
        rtype = hir.TileT(t, v.type.dims) if is_shaped(v.type) else t
        if isinstance(v, hir.Const):
            try:
                value = fold_unary(e.op, v.value, t.name, exact=t == self.idx and self.is_weak(v))
                if self.is_weak(v) and t == self.idx:
                    return self.lit(self.as_index(value), t)
                return self.lit(value, t) if self.is_weak(v) else hir.Const(value, t, span=e.span)
            except FoldError as exc:
                self.error("E0451", str(exc), e, "here")
                raise Bail from None
        return hir.Unary(e.op, v, rtype, v.uni, span=e.span)

    def check_division_spelling(self, spelling, t, node):
        if spelling == "/" and t.name in INTEGERS:
            self.error(
                "E0302",
                f"`/` of two integers (`{t}`) divides as integers in Phobos",
                node,
                "Python's `/` gives a float",
                help="write `//`, or convert an operand",
            )
            raise Bail
        if spelling == "//" and t.name in FLOATS:
            self.error(
                "E0303",
                f"`//` of floats (`{t}`) is not floor division in Phobos",
                node,
                "no floor division",
                help="write `/`, or `ph.floor` of it",
            )
            raise Bail

    def binary(self, e: ast.Binary, scope):
        left = self.expr(e.left, scope)
        right = self.expr(e.right, scope)
        if left.type == ERR or right.type == ERR:
            return err_const()
        result = self.binary_typed(e.op, left, right, e)
        return result

    def binary_typed(self, op, left, right, node):
        lt, rt = elem(left.type), elem(right.type)
        shaped = is_shaped(left.type) or is_shaped(right.type)
        # an untyped literal takes the type of the operand it meets
        if self.is_weak(left) and not self.is_weak(right) and lt != rt:
            left, lt = self.adopt(left, rt, node), elem(self.adopt(left, rt, node).type)
        elif self.is_weak(right) and not self.is_weak(left) and lt != rt:
            right, rt = self.adopt(right, lt, node), elem(self.adopt(right, lt, node).type)
        j = join_names(lt.name, rt.name)
        if j is None:
            self.error(
                "E0300",
                f"mismatched types `{lt}` and `{rt}` for `{op}`",
                node,
                f"`{lt}` {op} `{rt}`",
                help="convert an operand first, as in `i32(x)`"
                if "bool" not in (lt.name, rt.name)
                else "a `bool` has no conversion; compare instead",
            )
            raise Bail
        why = operator_problem(op, j)
        if why is not None:
            self.error("E0301", why, node, f"`{j}` operands")
            raise Bail
        spelling = getattr(node, "spelling", None)
        if op == "/" and spelling in ("/", "//"):
            self.check_division_spelling(spelling, S(j), node)
        jt = S(j)
        left, right = self.convert(left, jt), self.convert(right, jt)
        comparison = op in ("==", "!=", "<", "<=", ">", ">=")
        if shaped:
            ld = left.type.dims if is_shaped(left.type) else None
            rd = right.type.dims if is_shaped(right.type) else None
            if ld is not None and rd is not None:
                dims = broadcast(ld, rd)
                if dims is None:
                    ranks = rank_help(left, ld, rd, python=self.python) or rank_help(
                        right, rd, ld, python=self.python
                    )
                    self.error(
                        "E0304",
                        f"shapes {shape_text(ld)} and {shape_text(rd)} do not broadcast",
                        node,
                        f"{shape_text(ld)} {op} {shape_text(rd)}",
                        help=ranks or "tiles broadcast only over axes of extent 1",
                    )
                    raise Bail
            else:
                dims = ld if ld is not None else rd
            if (comparison or op in ("&&", "||")) and not self.in_where:
                self.error(
                    "E0312",
                    f"`{op}` of tiles is only allowed inside `where`",
                    node,
                    "there is no bool tile",
                    help="select with `where(a < b, x, y)`",
                )
                raise Bail
            rtype = hir.TileT(S("bool") if comparison else jt, dims)
        else:
            rtype = S("bool") if comparison else jt
        if isinstance(left, hir.Const) and isinstance(right, hir.Const):
            exact = jt == self.idx and self.is_weak(left) and self.is_weak(right)
            try:
                value = fold_binary(op, left.value, right.value, j, exact=exact)
            except FoldError as exc:
                self.error("E0451", str(exc), node, "in this constant")
                raise Bail from None
            if exact and not comparison:
                return self.lit(self.as_index(value), jt)
            return hir.Const(value, rtype, span=node.span)
        return hir.Binary(op, left, right, rtype, max(left.uni, right.uni), span=node.span)

    def adopt(self, c, t: hir.Scalar, node):
        v = c.value
        if isinstance(v, bool) or t.name == "bool":
            return c
        if isinstance(v, int) and t.name in INTEGERS:
            if not self.int_fits(v, t.name):
                at = c if c.span is not None else node  # the literal itself: the smallest span
                self.error(
                    "E0450", f"literal `{v}` does not fit in `{t}`", at, f"out of range for `{t}`"
                )
                raise Bail
            return hir.Const(v, t)
        if t.name in FLOATS and (isinstance(v, int) or t.name == "f64"):
            return hir.Const(round_float(float(v), t.name), t)
        return c

    in_where = False

    def index(self, e: ast.Index, scope):
        base = self.expr(e.base, scope)
        if base.type == ERR:
            return base
        bt = base.type
        if not is_shaped(bt):
            self.error("E0315", f"cannot index a scalar `{bt}`", e.base, "not a tensor or a tile")
            raise Bail
        if len(e.subscripts) != len(bt.dims):
            self.error(
                "E0305",
                f"`{self.text(e.base)}` has {len(bt.dims)} dimension{'s' if len(bt.dims) != 1 else ''} "
                f"but {len(e.subscripts)} subscript{'s were' if len(e.subscripts) != 1 else ' was'} given",
                e,
                f"{len(e.subscripts)} subscripts",
                help="give one subscript per dimension; `:` takes a whole one",
            )
            raise Bail
        subs, dims, uni = [], [], base.uni
        for sub, dim in zip(e.subscripts, bt.dims, strict=True):
            s = self.subscript(sub, dim, scope)
            subs.append(s)
            uni = max(uni, s.start.uni)
            if not s.point:
                dims.append(s.extent if s.extent is not None else self.rest_dim(dim, s.start))
        if all(s.point for s in subs):
            rtype = bt.elem
        else:
            dims = [s.extent if not s.point else 1 for s in subs]
            dims = [
                d if d is not None else self.rest_dim(bd, s.start)
                for d, bd, s in zip(dims, bt.dims, subs, strict=True)
            ]
            rtype = type(bt)(bt.elem, tuple(dims))
        out = hir.Slice(base, tuple(subs), rtype, uni, span=e.span)
        if self.run_state is not None and is_shaped(rtype):
            from phobos.sema.runs import run_slice

            return run_slice(self, e, out)
        return out

    def rest_dim(self, dim, start):
        if isinstance(start, hir.Const) and isinstance(dim, int):
            return dim - start.value
        if isinstance(start, hir.Const) and start.value == 0:
            return dim
        return hir.Dyn(f"{dim}-{hir._expr(start)}")

    def subscript(self, sub, dim, scope) -> hir.Sub:
        if isinstance(sub, ast.Point):
            return hir.Sub(self.index_expr(sub.index, scope, "a subscript"), 1, True)
        if isinstance(sub, ast.SliceLen):
            start = self.index_expr(sub.start, scope, "a slice offset")
            n = self.index_expr(sub.length, scope, "a slice length")
            if not isinstance(n, hir.Const):
                self.error(
                    "E0306",
                    "the length after `:+` must be a constant",
                    sub.length,
                    "not known when the kernel compiles",
                    help="use a literal or an `@autotune` constant",
                )
                raise Bail
            if n.value <= 0:
                self.error(
                    "E0306",
                    f"a slice length must be positive, not `{n.value}`",
                    sub.length,
                    "not positive",
                )
                raise Bail
            return hir.Sub(start, n.value)
        start = (
            self.index_expr(sub.start, scope, "a slice offset")
            if sub.start is not None
            else hir.Const(0, self.idx)
        )
        if sub.stop is None:
            if sub.start is None:
                return hir.Sub(start, dim)
            return hir.Sub(start, None)
        stop = self.index_expr(sub.stop, scope, "a slice end")
        if isinstance(stop, hir.Const) and isinstance(start, hir.Const):
            extent = stop.value - start.value
        else:
            extent = self.constant_difference(stop, start)
        if extent is None:
            self.error(
                "E0306",
                "the extent of a slice `s:e` must be a constant",
                sub,
                "`e - s` is not known when the kernel compiles",
                help="write `s :+ n` with a constant `n`",
            )
            raise Bail
        if extent <= 0:
            self.error(
                "E0306", f"a slice's extent must be positive, not `{extent}`", sub, "empty slice"
            )
            raise Bail
        return hir.Sub(start, extent)

    def constant_difference(self, stop, start):
        """`stop - start` when it folds: `s + 16` minus `s` is 16."""
        if isinstance(stop, hir.Binary) and stop.op == "+" and isinstance(stop.right, hir.Const):
            if stop.left == start or (
                isinstance(stop.left, hir.Ref)
                and isinstance(start, hir.Ref)
                and stop.left.sym is start.sym
            ):
                return stop.right.value
        return None

    def text(self, node) -> str:
        return node.span.text if node.span is not None else "this"

    # ------------------------------------------------------------------ calls

    def call(self, e: ast.Call, scope):
        if not isinstance(e.func, ast.Name):
            self.error("E0262", "only a fn or a built-in can be called", e.func, "not callable")
            raise Bail
        name = e.func.id
        b = scope.lookup(name)
        if b is None and name in self.fns:
            if e.config:
                self.error("E0262", f"fn `{name}` takes no `<...>` configuration", e, "configured")
                raise Bail
            return self.inline_expr_fn(self.fns[name], e, scope)
        if b is None and name in self.kernels:
            self.error(
                "E0262", f"`{name}` is a kernel, and a kernel cannot be called", e.func, "a kernel"
            )
            raise Bail
        if b is None and (name in BUILTINS or name in SCALARS):
            from phobos.sema.builtins import check_builtin

            return check_builtin(self, name, e, scope)
        if b is not None:
            self.error("E0262", f"`{name}` is a value, not a fn", e.func, "not callable")
            raise Bail
        candidates = set(self.fns) | set(BUILTINS) | set(CONVERSIONS)
        self.diags.append(cannot_find(name, e.func.span, candidates, call=True))
        raise Bail
