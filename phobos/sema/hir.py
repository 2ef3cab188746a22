"""hir: the checked program, specialised to one variant.

The checker (`phobos.sema.check`) builds it from the AST; the tile interpreter
(`phobos.interp.tiles`) runs it, and the lowering will consume it. Compared with the
AST, a hir kernel has:

- every `fn` inlined at its calls, every name resolved to a `Sym` (one per binding,
  so shadowing and inlining never confuse two bindings);
- every `@autotune` constant replaced by its value in this variant, and constant
  expressions folded (`phobos.semantics`);
- a type on every expression (`Scalar`, `TensorT`, `TileT`) and a uniformity
  (`UNIFORM`, `WARP`, `VARYING`);
- every implicit conversion explicit (`Convert`), so an operator's operands share
  its type, and integer `/`, `%` and shifts follow `phobos.semantics`;
- every subscript normalised to `Sub(start, extent, point)`.

Shapes are tuples of dims: an `int` for a static extent (a literal or an @autotune
constant), a `Dyn` for an extent bound at launch (a tensor dimension name).

    >>> f32 = Scalar("f32")
    >>> x = Sym("x", 1, "let", f32)
    >>> print(dump(Binary("*", Ref(x, f32, UNIFORM), Const(2.0, f32), f32, UNIFORM)))
    (x * 2.0: f32)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from phobos.source import Span

# Uniformity lattice (SPEC.md "Per-thread values"), ordered: the join is the max.
UNIFORM = 0  # the same in every thread of the CTA
WARP = 1  # the same in every lane of a warp
VARYING = 2  # a value per lane
UNIFORMITY_NAMES = ("uniform", "warp-uniform", "varying")


# ---------------------------------------------------------------------------
# Types


@dataclass(frozen=True)
class Dyn:
    """A dimension bound at launch: the tensor dimension `name`."""

    name: str

    def __str__(self) -> str:
        return self.name


Dim = int | Dyn


@dataclass(frozen=True)
class Scalar:
    """One of SPEC.md's 11 scalar types, by name: `Scalar("f32")`."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class TensorT:
    """Global memory: a kernel parameter, or a view of one (a `let` slice)."""

    elem: Scalar
    dims: tuple[Dim, ...]

    def __str__(self) -> str:
        return f"tensor<{self.elem}>[{', '.join(map(str, self.dims))}]"


@dataclass(frozen=True)
class TileT:
    """A CTA-owned block; dims are static except where a slice runs to a dynamic end."""

    elem: Scalar
    dims: tuple[Dim, ...]

    def __str__(self) -> str:
        return f"tile<{self.elem}>[{', '.join(map(str, self.dims))}]"


Type = Scalar | TensorT | TileT


@dataclass(eq=False)
class Sym:
    """One binding. Compared by identity; `id` numbers bindings for printing."""

    name: str
    id: int
    kind: str  # "param" | "let" | "var" | "loop"
    type: Type
    uni: int = UNIFORM  # how far the binding's value may differ between threads

    def __repr__(self) -> str:
        return f"Sym({self.name}#{self.id}: {self.type})"


# ---------------------------------------------------------------------------
# Expressions: every one has a `type` and a uniformity `uni`.


@dataclass(frozen=True)
class Expr:
    span: Span | None = field(default=None, kw_only=True, compare=False, repr=False)
    # The node's number in the lowering's numbering (`number`): the key the plan's
    # decisions for it are recorded under, printed by `dump` as `#n`. None before.
    label: int | None = field(default=None, kw_only=True, compare=False, repr=False)


@dataclass(frozen=True)
class Const(Expr):
    """A folded constant: a Python int, float or bool already in `type`'s range."""

    value: Any
    type: Scalar
    uni: int = UNIFORM


@dataclass(frozen=True)
class Ref(Expr):
    """A read of a binding: a scalar's value, or a whole tensor or tile."""

    sym: Sym
    type: Type
    uni: int


@dataclass(frozen=True)
class CtxRead(Expr):
    """`ctx.block.x` is `CtxRead("block", "x")`; the constant fields are folded away."""

    field: str
    axis: str | None
    type: Scalar
    uni: int


@dataclass(frozen=True)
class Convert(Expr):
    """`value` converted to `type` (explicit `f32(x)` or inserted by the checker)."""

    value: Expr
    type: Type
    uni: int


@dataclass(frozen=True)
class Unary(Expr):
    op: str  # "-", "!", "~"
    operand: Expr
    type: Type
    uni: int


@dataclass(frozen=True)
class Binary(Expr):
    """Operands already share a type; a comparison's `type` is bool.

    On tiles, operands broadcast over extent-1 axes to `type`'s shape; a scalar
    operand broadcasts to every element.
    """

    op: str
    left: Expr
    right: Expr
    type: Type
    uni: int


@dataclass(frozen=True)
class Sub:
    """One normalised subscript: indices `start .. start + extent - 1`.

    `point` marks `A[i]`; among slices it keeps its axis with extent 1. `extent` is
    None for `A[s:]` (to the end: never masked).
    """

    start: Expr
    extent: Dim | None
    point: bool = False


@dataclass(frozen=True)
class Slice(Expr):
    """`base[subs]`: a scalar when every sub is a point, else a view (`TensorT`/`TileT`)."""

    base: Expr
    subs: tuple[Sub, ...]
    type: Type
    uni: int


@dataclass(frozen=True)
class Builtin(Expr):
    """A built-in call: `name` as in phobos.names.BUILTINS or a conversion.

    `config` holds a collective's or shuffle's `<...>` words: {"over": "lane",
    "width": 8}, {"xor": Expr}. A `reduce`'s function is inlined into `fn_body`
    with `fn_params` bound to its two operands.
    """

    name: str
    args: tuple[Expr, ...]
    type: Type
    uni: int
    config: tuple[tuple[str, Any], ...] = ()
    fn_params: tuple[Sym, ...] = ()
    fn_body: Expr | None = None


# ---------------------------------------------------------------------------
# Statements


@dataclass(frozen=True)
class Stmt:
    span: Span | None = field(default=None, kw_only=True, compare=False, repr=False)
    label: int | None = field(default=None, kw_only=True, compare=False, repr=False)


@dataclass(frozen=True)
class Block(Stmt):
    stmts: tuple[Stmt, ...]


@dataclass(frozen=True)
class Let(Stmt):
    """`let`: binds a value, or a view when `value` is a tensor or tile slice."""

    sym: Sym
    value: Expr


@dataclass(frozen=True)
class VarDecl(Stmt):
    """`var`: a mutable scalar or a tile; `value` None leaves a tile uninitialised."""

    sym: Sym
    value: Expr | None


@dataclass(frozen=True)
class Assign(Stmt):
    """`target op value`; `op` is "=" or an op-assign such as "+=".

    `target` is a `Ref` (a whole binding) or a `Slice` of a tensor or tile.
    """

    target: Ref | Slice
    op: str
    value: Expr


@dataclass(frozen=True)
class For(Stmt):
    """`for<unroll n> var in range(lo, hi, step)`; `step` a positive constant or an Expr."""

    var: Sym
    lo: Expr
    hi: Expr
    step: Expr
    unroll: int | None
    body: Block


@dataclass(frozen=True)
class While(Stmt):
    cond: Expr
    body: Block


@dataclass(frozen=True)
class If(Stmt):
    cond: Expr
    then: Block
    orelse: Block | None


@dataclass(frozen=True)
class Break(Stmt):
    pass


@dataclass(frozen=True)
class Continue(Stmt):
    pass


@dataclass(frozen=True)
class Return(Stmt):
    pass


@dataclass(frozen=True)
class ExprStmt(Stmt):
    """A statement that is a call: `barrier()`, `atomic_add(..)`, `store(..)`, `attend(..)`."""

    expr: Expr


# ---------------------------------------------------------------------------
# The kernel


@dataclass(frozen=True)
class Kernel:
    """One kernel, checked and specialised to `variant` (each @autotune name's value).

    `attrs` is `phobos.sema.attributes.KernelAttributes`; `dyn_dims` the tensor
    dimension names bound at launch, in the order they first appear in `params`;
    `registers` the `var` tiles `@registers` keeps in registers (each binding).
    """

    name: str
    params: tuple[Sym, ...]
    body: Block
    attrs: Any
    variant: tuple[tuple[str, int], ...]
    dyn_dims: tuple[str, ...]
    index_width: int = 32
    threads: int = 256
    span: Span | None = field(default=None, compare=False, repr=False)
    registers: tuple[Sym, ...] = ()  # the tiles @registers keeps in registers


# ---------------------------------------------------------------------------
# Text form


def _sym(sym: Sym) -> str:
    return f"{sym.name}"


def dump(node) -> str:
    """The text form of a hir node (`phobos-compile --emit hir`)."""
    lines: list[str] = []
    _dump(node, 0, lines)
    return "\n".join(lines)


def _expr(e) -> str:
    if isinstance(e, Const):
        return repr(e.value) if not isinstance(e.value, bool) else str(e.value).lower()
    if isinstance(e, Ref):
        return _sym(e.sym)
    if isinstance(e, CtxRead):
        return f"ctx.{e.field}" + (f".{e.axis}" if e.axis else "")
    if isinstance(e, Convert):
        return f"{e.type}({_expr(e.value)})"
    if isinstance(e, Unary):
        return f"({e.op}{_expr(e.operand)}: {e.type})"
    if isinstance(e, Binary):
        return f"({_expr(e.left)} {e.op} {_expr(e.right)}: {e.type})"
    if isinstance(e, Slice):
        subs = []
        for s in e.subs:
            if s.point:
                subs.append(_expr(s.start))
            elif s.extent is None:
                subs.append(f"{_expr(s.start)}:")
            else:
                subs.append(f"{_expr(s.start)} :+ {s.extent}")
        return f"{_expr(e.base)}[{', '.join(subs)}]"
    if isinstance(e, Builtin):
        config = ", ".join(f"{k} {_expr(v) if isinstance(v, Expr) else v}" for k, v in e.config)
        head = f"{e.name}<{config}>" if config else e.name
        if e.label is not None:
            head += f"#{e.label}"
        return f"{head}({', '.join(_expr(a) for a in e.args)}): {e.type}"
    return repr(e)


def _dump(node, depth: int, out: list[str]) -> None:
    start = len(out)
    _dump_node(node, depth, out)
    if isinstance(node, Stmt) and node.label is not None and not isinstance(node, Block):
        out[start] += f"  // #{node.label}"


def _dump_node(node, depth: int, out: list[str]) -> None:
    pad = "  " * depth
    if isinstance(node, Kernel):
        params = ", ".join(f"{_sym(p)}: {p.type}" for p in node.params)
        variant = ", ".join(f"{k}={v}" for k, v in node.variant)
        out.append(f"kernel {node.name}({params})  // variant {variant or '-'}")
        out.append(f"  // threads {node.threads}, index width {node.index_width}")
        if node.registers:
            out.append(f"  // registers {', '.join(_sym(s) for s in node.registers)}")
        _dump(node.body, depth, out)
    elif isinstance(node, Block):
        out.append(pad + "{")
        for stmt in node.stmts:
            _dump(stmt, depth + 1, out)
        out.append(pad + "}")
    elif isinstance(node, Let):
        out.append(f"{pad}let {_sym(node.sym)}: {node.sym.type} = {_expr(node.value)}")
    elif isinstance(node, VarDecl):
        value = "" if node.value is None else f" = {_expr(node.value)}"
        out.append(f"{pad}var {_sym(node.sym)}: {node.sym.type}{value}")
    elif isinstance(node, Assign):
        out.append(f"{pad}{_expr(node.target)} {node.op} {_expr(node.value)}")
    elif isinstance(node, For):
        unroll = f"<unroll {node.unroll}>" if node.unroll else ""
        bounds = f"{_expr(node.lo)}, {_expr(node.hi)}, {_expr(node.step)}"
        out.append(f"{pad}for{unroll} {_sym(node.var)} in range({bounds})")
        _dump(node.body, depth, out)
    elif isinstance(node, While):
        out.append(f"{pad}while {_expr(node.cond)}")
        _dump(node.body, depth, out)
    elif isinstance(node, If):
        out.append(f"{pad}if {_expr(node.cond)}")
        _dump(node.then, depth, out)
        if node.orelse is not None:
            out.append(f"{pad}else")
            _dump(node.orelse, depth, out)
    elif isinstance(node, (Break, Continue, Return)):
        out.append(pad + type(node).__name__.lower())
    elif isinstance(node, ExprStmt):
        out.append(pad + _expr(node.expr))
    else:
        out.append(pad + _expr(node))
