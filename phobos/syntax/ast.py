"""The Phobos AST: one tree for `.ph` text and for `@ph.kernel` Python.

Every node is a frozen dataclass with a `span` into the file the user wrote. Spans
never take part in equality, so the tree a `.ph` file parses to and the tree its
Python spelling translates to compare equal when they spell the same program.

    >>> from phobos.source import SourceFile
    >>> s = SourceFile("x.ph", "1 + x").span(0, 5)
    >>> Binary("+", Int(1, span=s), Name("x", span=s), span=s) == Binary(
    ...     "+", Int(1, span=s), Name("x", span=s), span=s)
    True

The listing, as complete as the grammar of SPEC.md:

    program   = Program(items: (Kernel | Function)*)
    item      = Kernel(attrs, name, params, body) | Function(name, params, body, uses?)
    attribute = Attribute(name, args: (SearchDim | KeywordArg | PositionalArg)*)
    type      = ScalarType(name) | TensorType(elem, dims) | TileType(elem, dims)
    dim       = Name | Int
    stmt      = Let | Var | Assign | For | While | If | Break | Continue | Return | ExprStmt
    expr      = Int | Float | Bool | Name | Ctx | Unary | Binary | Call | Index
    subscript = Point(index) | Slice(start?, stop?) | SliceLen(start, length)
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from phobos.source import Span


@dataclass(frozen=True)
class Node:
    """Base of every node. `span` is keyword-only and ignored by `==`."""

    span: Span = field(kw_only=True, compare=False, repr=False)


# ---------------------------------------------------------------------------
# Expressions


@dataclass(frozen=True)
class Int(Node):
    """An integer literal, unsigned as written (`-1` is `Unary("-", Int(1))`)."""

    value: int


@dataclass(frozen=True)
class Float(Node):
    """A float literal. `text` keeps the spelling the user wrote, for printing."""

    value: float
    text: str = field(default="", compare=False)


@dataclass(frozen=True)
class Bool(Node):
    value: bool


@dataclass(frozen=True)
class Name(Node):
    """An identifier: a binding, a parameter, a built-in, a type or a function."""

    id: str


@dataclass(frozen=True)
class Ctx(Node):
    """`ctx.field` or `ctx.field.axis`, e.g. `ctx.block.x` is `Ctx("block", "x")`."""

    field: str
    axis: str | None = None


# Operators by their spelling in `.ph`; Python spellings are translated to these.
UNARY_OPS = ("-", "!", "~")
BINARY_OPS = (
    "||", "&&", "==", "!=", "<", "<=", ">", ">=",
    "|", "^", "&", "<<", ">>", "+", "-", "*", "/", "%",
)  # fmt: skip

# Binding power, loosest first, as SPEC.md "Operators and conversions" lists them.
PRECEDENCE: dict[str, int] = {
    "||": 1,
    "&&": 2,
    "==": 3, "!=": 3,
    "<": 4, "<=": 4, ">": 4, ">=": 4,
    "|": 5,
    "^": 6,
    "&": 7,
    "<<": 8, ">>": 8,
    "+": 9, "-": 9,
    "*": 10, "/": 10, "%": 10,
}  # fmt: skip
UNARY_PRECEDENCE = 11


@dataclass(frozen=True)
class Unary(Node):
    op: str  # one of UNARY_OPS
    operand: Expr


@dataclass(frozen=True)
class Binary(Node):
    """`left op right`.

    `spelling` is the operator as a Python source wrote it, where one Phobos operator
    has two Python spellings: `/` and `//` both become `/`, and the checker refuses
    Python's `/` of two integers and `//` of floats from it. None for `.ph` text.
    """

    op: str  # one of BINARY_OPS
    left: Expr
    right: Expr
    spelling: str | None = field(default=None, kw_only=True, compare=False)


@dataclass(frozen=True)
class ConfigItem(Node):
    """One `key value` inside angle brackets: `over ctx.lane`, `width 8`, `xor 16`."""

    key: str  # one of CONFIG_KEYS
    value: Expr


# The words that configure a collective or a shuffle; keywords only inside `<...>`.
CONFIG_KEYS = ("over", "width", "xor", "from", "down", "up")
# The built-ins that take a `<...>` configuration.
CONFIGURED_CALLS = ("sum", "max", "min", "any", "all", "argmax", "reduce", "shfl")


@dataclass(frozen=True)
class Call(Node):
    """`f(args)`, or a configured call `sum<over ctx.lane, width 8>(x)`."""

    func: Expr
    args: tuple[Expr, ...]
    config: tuple[ConfigItem, ...] = ()


@dataclass(frozen=True)
class Point(Node):
    """`A[i]`: one index; among slices it keeps its axis with extent 1."""

    index: Expr


@dataclass(frozen=True)
class Slice(Node):
    """`A[s:e]`, `A[s:]`, `A[:e]`, `A[:]`: a missing bound is None."""

    start: Expr | None
    stop: Expr | None


@dataclass(frozen=True)
class SliceLen(Node):
    """`A[s :+ n]`: indices s .. s + n - 1."""

    start: Expr
    length: Expr


Subscript = Point | Slice | SliceLen


@dataclass(frozen=True)
class Index(Node):
    """`base[subscripts]`."""

    base: Expr
    subscripts: tuple[Subscript, ...]


Expr = Int | Float | Bool | Name | Ctx | Unary | Binary | Call | Index


# ---------------------------------------------------------------------------
# Types

SCALAR_TYPES = ("f16", "bf16", "f32", "f64", "i8", "i32", "i64", "u8", "u16", "u32", "bool")


@dataclass(frozen=True)
class ScalarType(Node):
    name: str  # one of SCALAR_TYPES


@dataclass(frozen=True)
class TensorType(Node):
    """`tensor<T>[dims]`: global memory, kernel parameters only."""

    elem: ScalarType
    dims: tuple[Name | Int, ...]


@dataclass(frozen=True)
class TileType(Node):
    """`tile<T>[dims]`: a CTA-owned block."""

    elem: ScalarType
    dims: tuple[Name | Int, ...]


Type = ScalarType | TensorType | TileType


# ---------------------------------------------------------------------------
# Statements


@dataclass(frozen=True)
class Block(Node):
    stmts: tuple[Stmt, ...]


@dataclass(frozen=True)
class Let(Node):
    name: Name
    type: Type | None
    value: Expr


@dataclass(frozen=True)
class Var(Node):
    """`var x = e`, `var t: T = e` or `var t: T` (value None)."""

    name: Name
    type: Type | None
    value: Expr | None


ASSIGN_OPS = ("=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=")


@dataclass(frozen=True)
class Assign(Node):
    """`target op value`; `spelling` is Python's `/=` or `//=` for `/=`, as `Binary.spelling`."""

    target: Name | Index
    op: str  # one of ASSIGN_OPS
    value: Expr
    spelling: str | None = field(default=None, kw_only=True, compare=False)


@dataclass(frozen=True)
class For(Node):
    """`for<unroll n> i in range(lo, hi, step)`; `unroll` and `step` may be None."""

    var: Name
    lo: Expr
    hi: Expr
    step: Expr | None
    unroll: Expr | None
    body: Block


@dataclass(frozen=True)
class While(Node):
    cond: Expr
    body: Block


@dataclass(frozen=True)
class If(Node):
    """`if c { } else { }`; `orelse` is a Block, an `If` (for `else if`) or None."""

    cond: Expr
    then: Block
    orelse: Block | If | None


@dataclass(frozen=True)
class Break(Node):
    pass


@dataclass(frozen=True)
class Continue(Node):
    pass


@dataclass(frozen=True)
class Return(Node):
    pass


@dataclass(frozen=True)
class ExprStmt(Node):
    expr: Expr


Stmt = Let | Var | Assign | For | While | If | Break | Continue | Return | ExprStmt


# ---------------------------------------------------------------------------
# Attributes and items


@dataclass(frozen=True)
class SearchDim(Node):
    """`TILE_M in [64, 128]`: an @autotune search dimension."""

    name: Name
    values: tuple[Int, ...]


@dataclass(frozen=True)
class KeywordArg(Node):
    """`arch = sm_80`."""

    name: Name
    value: AttrLiteral


@dataclass(frozen=True)
class PositionalArg(Node):
    """`256`, `read_only`."""

    value: AttrLiteral


AttrLiteral = Int | Float | Bool | Name
AttrArg = SearchDim | KeywordArg | PositionalArg


@dataclass(frozen=True)
class Attribute(Node):
    """`@name` or `@name(args)`; `args` is None when there are no parentheses."""

    name: Name
    args: tuple[AttrArg, ...] | None


@dataclass(frozen=True)
class Param(Node):
    name: Name
    type: Type


@dataclass(frozen=True)
class Kernel(Node):
    attrs: tuple[Attribute, ...]
    name: Name
    params: tuple[Param, ...]
    body: Block


@dataclass(frozen=True)
class Function(Node):
    """`fn f(a, b) = e` (body an Expr) or `fn f(a, b) { .. }` (body a Block).

    `uses` is the Python spelling's `@ph.fn(uses=(...))`: the names the body reads
    from its caller. None for a `.ph` function, which does not list them; it is not
    part of equality since the `.ph` form cannot spell it.
    """

    name: Name
    params: tuple[Name, ...]
    body: Expr | Block
    uses: tuple[str, ...] | None = field(default=None, kw_only=True, compare=False)


Item = Kernel | Function


@dataclass(frozen=True)
class Program(Node):
    items: tuple[Item, ...]


# ---------------------------------------------------------------------------
# Walking


def children(node: Node):
    """The direct child nodes of `node`, in source order."""
    for f in fields(node):
        if f.name == "span":
            continue
        value = getattr(node, f.name)
        if isinstance(value, Node):
            yield value
        elif isinstance(value, tuple):
            for item in value:
                if isinstance(item, Node):
                    yield item


def walk(node: Node):
    """`node` and every node below it, depth first, in source order."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(list(children(current))))


# ---------------------------------------------------------------------------
# Text form


def dump(node: Node) -> str:
    """An indented text form of `node` and everything below it (`--emit ast`).

    A node is its class name, then its plain fields as `key=value`; a field that can
    only hold a name is written inline as the name. Child nodes follow, indented, as
    `field: Node` or `field[i]: Node`. A field at its default value is left out.
    Spans are not shown, so the text depends only on what `==` compares (and on
    the spellings kept for printing, such as `spelling=//`).

        >>> from phobos.source import SourceFile
        >>> s = SourceFile("x.ph", "").span(0, 0)
        >>> print(dump(Let(Name("y", span=s), None, Binary("+", Name("x", span=s),
        ...     Int(1, span=s), span=s), span=s)))
        Let name=y type=None
          value: Binary op=+
            left: Name x
            right: Int 1
    """
    lines: list[str] = []
    _dump_into(node, "", 0, lines)
    return "\n".join(lines) + "\n"


def _dump_into(node: Node, prefix: str, depth: int, lines: list[str]) -> None:
    from dataclasses import MISSING

    inline: list[str] = []
    kids: list[tuple[str, Node]] = []
    shown = [f for f in fields(node) if f.name != "span"]
    for f in shown:
        value = getattr(node, f.name)
        if f.default is not MISSING and value == f.default and not isinstance(value, Node):
            continue
        if f.type == "Name" and isinstance(value, Name):
            inline.append(f"{f.name}={value.id}")
        elif f.type.startswith("tuple[Name,") and isinstance(value, tuple):
            inline.append(f"{f.name}=[{', '.join(n.id for n in value)}]")
        elif isinstance(value, Node):
            kids.append((f.name, value))
        elif isinstance(value, tuple) and value and isinstance(value[0], Node):
            kids.extend((f"{f.name}[{i}]", item) for i, item in enumerate(value))
        elif isinstance(value, tuple):
            inline.append(f"{f.name}=[{', '.join(_dump_scalar(v) for v in value)}]")
        else:
            inline.append(f"{f.name}={_dump_scalar(value)}")
    head = type(node).__name__
    # A node with one plain field and nothing else reads best as `Int 1`, `Name x`.
    single = getattr(node, shown[0].name) if len(shown) == 1 else None
    if len(shown) == 1 and not kids and len(inline) == 1 and not isinstance(single, tuple):
        head += " " + inline[0].split("=", 1)[1]
    elif isinstance(node, Float) and inline and inline[0].startswith("value="):
        head += " " + " ".join([inline[0].split("=", 1)[1], *inline[1:]])
    elif inline:
        head += " " + " ".join(inline)
    lines.append("  " * depth + prefix + head)
    for name, child in kids:
        _dump_into(child, f"{name}: ", depth + 1, lines)


def _dump_scalar(value: object) -> str:
    if isinstance(value, str):
        # Plain words and operators as they are; anything with spaces or quotes quoted.
        return value if value and value.isprintable() and " " not in value else repr(value)
    return repr(value)
