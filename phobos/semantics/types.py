"""The scalar types of SPEC.md "Types", their join, and which operators each one takes.

>>> join(I32, F16), join(F16, BF16), join(I8, I64)
(f16, f32, i64)
>>> operator_reason("+", U8)
'no arithmetic on `u8`: it is storage, convert it first, as in `i32(x)`'
"""

from __future__ import annotations

from dataclasses import dataclass

FLOAT = "float"
SIGNED = "signed"
UNSIGNED = "unsigned"
BOOL_KIND = "bool"


@dataclass(frozen=True)
class Scalar:
    """One of the 11 scalar types: its name, kind (`float`, `signed`, `unsigned`, `bool`)
    and width in bits.

    >>> I8.lo, I8.hi, U16.hi, F32.is_float, U8.is_integer
    (-128, 127, 65535, True, True)
    """

    name: str
    kind: str
    bits: int

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__

    @property
    def is_float(self) -> bool:
        return self.kind == FLOAT

    @property
    def is_signed(self) -> bool:
        return self.kind == SIGNED

    @property
    def is_unsigned(self) -> bool:
        return self.kind == UNSIGNED

    @property
    def is_integer(self) -> bool:
        return self.kind in (SIGNED, UNSIGNED)

    @property
    def is_bool(self) -> bool:
        return self.kind == BOOL_KIND

    @property
    def lo(self) -> int:
        """The least value of an integer type."""
        assert self.is_integer, self
        return -(1 << (self.bits - 1)) if self.is_signed else 0

    @property
    def hi(self) -> int:
        """The greatest value of an integer type."""
        assert self.is_integer, self
        return (1 << (self.bits - 1 if self.is_signed else self.bits)) - 1


F16 = Scalar("f16", FLOAT, 16)
BF16 = Scalar("bf16", FLOAT, 16)
F32 = Scalar("f32", FLOAT, 32)
F64 = Scalar("f64", FLOAT, 64)
I8 = Scalar("i8", SIGNED, 8)
I32 = Scalar("i32", SIGNED, 32)
I64 = Scalar("i64", SIGNED, 64)
U8 = Scalar("u8", UNSIGNED, 8)
U16 = Scalar("u16", UNSIGNED, 16)
U32 = Scalar("u32", UNSIGNED, 32)
BOOL = Scalar("bool", BOOL_KIND, 1)  # a predicate: compared, never stored as a number

# In SPEC.md's order, the order of `phobos.syntax.ast.SCALAR_TYPES`.
SCALARS: dict[str, Scalar] = {
    t.name: t for t in (F16, BF16, F32, F64, I8, I32, I64, U8, U16, U32, BOOL)
}


def scalar(name: str) -> Scalar:
    """The scalar type spelled `name`.

    >>> scalar("bf16").kind
    'float'
    """
    return SCALARS[name]


def index_type(width: int) -> Scalar:
    """The type of an index (an integer literal, a loop variable, a `ctx` field) in a kernel
    compiled at `width`-bit indices.

    >>> index_type(32), index_type(64)
    (i32, i64)
    """
    if width == 32:
        return I32
    if width == 64:
        return I64
    raise ValueError(f"an index is 32 or 64 bits wide, not {width}")


def join(a: Scalar, b: Scalar) -> Scalar | None:
    """The type both operands of a mixed operation convert to, or None when there is none.

    The rules, SPEC.md "Mixed types" and what it leaves open:

    1. the same type joins to itself (bool and the unsigned types included: whether the
       operator takes that type is `operator_reason`'s question);
    2. float with float: the wider; f16 with bf16: f32, which holds both exactly;
    3. integer with float: the float;
    4. signed with signed: the wider, so i8 with i32 is i32 (a choice: every signed type
       is exact in a wider one, and the index types are signed);
    5. an unsigned type meets nothing else, nor does bool: unsigned storage is converted
       first, as in `(i32(b) >> 4) & 15`, and bool has no conversion.

    >>> join(F16, F64), join(BF16, F16), join(I64, F16), join(I32, I8)
    (f64, f32, f16, i32)
    >>> join(U8, I32) is None, join(BOOL, I32) is None
    (True, True)
    """
    if a == b:  # 1
        return a
    if a.is_float and b.is_float:  # 2
        if a.bits == b.bits:
            return F32
        return a if a.bits > b.bits else b
    if a.is_float and b.is_signed:  # 3
        return a
    if a.is_signed and b.is_float:
        return b
    if a.is_signed and b.is_signed:  # 4
        return a if a.bits > b.bits else b
    return None  # 5


def takes_arithmetic(t: Scalar) -> bool:
    """Whether `+ - * / %` and unary `-` take operands of `t`: floats and signed integers.

    >>> takes_arithmetic(F16), takes_arithmetic(I8), takes_arithmetic(U32), takes_arithmetic(BOOL)
    (True, True, False, False)
    """
    return t.is_float or t.is_signed


ARITHMETIC_OPS = frozenset({"+", "-", "*", "/", "%"})
BITWISE_OPS = frozenset({"&", "|", "^", "<<", ">>"})
ORDER_OPS = frozenset({"<", "<=", ">", ">="})
EQUALITY_OPS = frozenset({"==", "!="})
LOGICAL_OPS = frozenset({"&&", "||"})
COMPARISON_OPS = ORDER_OPS | EQUALITY_OPS


def operator_reason(op: str, t: Scalar, *, unary: bool = False) -> str | None:
    """Why `op` does not take operands of type `t` (already joined), or None when it does.

    Arithmetic takes floats and signed integers; `& | ^ << >> ~` signed integers only
    (SPEC.md: "A float operand is an error"); `&& || !` bools only; `< <= > >=` what
    arithmetic takes; `== !=` those and bool.

    >>> operator_reason("&", F32)
    'no bitwise `&` on `f32`: it takes integers'
    >>> operator_reason("!", I32, unary=True)
    '`!` takes a `bool`, not `i32`'
    >>> operator_reason("==", BOOL) is None
    True
    """
    if unary:
        if op == "-":
            return None if takes_arithmetic(t) else _no_arithmetic(t)
        if op == "~":
            return None if t.is_signed else _no_bitwise(op, t)
        if op == "!":
            return None if t.is_bool else f"`!` takes a `bool`, not `{t}`"
        raise ValueError(f"unknown unary operator {op!r}")
    if op in ARITHMETIC_OPS or op in ORDER_OPS:
        return None if takes_arithmetic(t) else _no_arithmetic(t)
    if op in EQUALITY_OPS:
        return None if takes_arithmetic(t) or t.is_bool else _no_arithmetic(t)
    if op in BITWISE_OPS:
        return None if t.is_signed else _no_bitwise(op, t)
    if op in LOGICAL_OPS:
        return None if t.is_bool else f"`{op}` takes `bool` operands, not `{t}`"
    raise ValueError(f"unknown binary operator {op!r}")


def _no_arithmetic(t: Scalar) -> str:
    if t.is_unsigned:
        return f"no arithmetic on `{t}`: it is storage, convert it first, as in `i32(x)`"
    return f"no arithmetic on `{t}`"


def _no_bitwise(op: str, t: Scalar) -> str:
    if t.is_unsigned:
        return f"no bitwise `{op}` on `{t}`: it is storage, convert it first, as in `i32(x)`"
    return f"no bitwise `{op}` on `{t}`: it takes integers"
