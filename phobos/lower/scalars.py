"""Scalar operations on registers: operators, conversions, math built-ins, selects.

Every function takes the builder and operand `Value`s already in registers (or
immediates) and returns the result's `Value`; a tile sweep calls the same functions
once per element, so a scalar and a tile element compute alike. The rules follow
`phobos.semantics` (SPEC.md "Operators and conversions", "Elementwise"):

| Phobos                | lir                                                              |
|-----------------------|------------------------------------------------------------------|
| `+ - *` on floats     | `add/sub/mul.f32` (f16, bf16: in f32, `cvt.rn` back)              |
| `/` on floats         | `div.rn`                                                         |
| `/ %` on integers     | `div/rem.s32` (truncating, the dividend's sign, as C)            |
| `<< >>`               | `shl.b32`, `shr.s32` (a count at or past the width shifts all out)|
| `i8` arithmetic       | in `s32`, then sign-extended from bit 7 (`shl 24`, `shr.s32 24`) |
| comparisons           | `setp` (`!=` on floats unordered: NaN != x)                      |
| `&& ||`, `!`          | `and/or/not.pred`                                                |
| `exp(x)`              | `ex2.approx(x * log2(e))`                                        |
| `log(x)`              | `lg2.approx(x) * ln(2)`                                          |
| `pow(a, b)`           | `ex2.approx(b * lg2.approx(a))`                                  |
| `sqrt rsqrt tanh sin cos` | `.approx.f32`                                                |
| `round floor ceil`    | `cvt.rni/rmi/rpi`                                                |
| float -> integer      | `cvt.rzi` (saturating; NaN is 0)                                 |

    >>> from phobos.lower.builder import Builder
    >>> b = Builder()
    >>> x = Reg("x", "f32")
    >>> y = math1(b, "exp", x, "f32")
    >>> print("\\n".join(lir.print_item(i) for i in b.finish().items))
    %f1 = mul.f32 %x, 1.4426950408889634:f32
    %f2 = ex2.approx.f32 %f1
"""

from __future__ import annotations

from phobos.lower import lir
from phobos.lower.builder import Builder, imm
from phobos.lower.errors import NotLowered
from phobos.lower.lir import Imm, Reg, Value
from phobos.lower.types import FLOATS, NARROW_FLOATS, NARROW_INTS, REG

ARITH = {"+": "add", "-": "sub", "*": "mul", "/": "div", "%": "rem"}
CMP = {"==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}
FLOAT_CMP = {**CMP, "!=": "neu"}  # NaN != x holds, as in C and numpy
BITWISE = {"&": "and", "|": "or", "^": "xor"}
LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453
# Math built-ins that are one approximate instruction on an f32.
APPROX = {"sqrt": "sqrt", "rsqrt": "rsqrt", "tanh": "tanh", "sin": "sin", "cos": "cos"}
# Rounding to an integral float, exact.
INTEGRAL = {"round": "rni", "floor": "rmi", "ceil": "rpi"}


def bits_type(reg_type: str) -> str:
    """The untyped bits type of a register type's width (`f16` -> `b16`)."""
    return {1: "pred", 2: "b16", 4: "b32", 8: "b64"}[lir.WIDTH[reg_type]]


# ---------------------------------------------------------------------------
# Conversions


def to_f32(b: Builder, v: Value, t: str) -> Value:
    """A narrow float (f16, bf16) widened to f32, exactly."""
    if isinstance(v, Imm):
        return Imm(float(v.value), "f32")
    return b.op("cvt", "f32", v, from_type=REG[t])


def from_f32(b: Builder, v: Value, t: str) -> Value:
    """An f32 rounded to the narrow float `t` (to nearest, ties to even)."""
    return b.op("cvt", REG[t], v, from_type="f32", rounding="rn")


def wrap_narrow(b: Builder, v: Value, t: str) -> Value:
    """A 32-bit result brought back into the narrow integer `t`'s range, as a store and
    reload would: sign-extend from bit 7 for i8, zero-extend for u8 and u16."""
    bits = NARROW_INTS.get(t)
    if bits is None:
        return v
    if t.startswith("i"):
        up = b.op("shl", "b32", v, Imm(32 - bits, "u32"), dest_type="s32")
        return b.op("shr", "s32", up, Imm(32 - bits, "u32"))
    return b.op("and", "b32", v, Imm((1 << bits) - 1, "b32"), dest_type="u32")


def convert(b: Builder, v: Value, src: str, dst: str) -> Value:
    """`v` of Phobos type `src` as a value of Phobos type `dst` (`phobos.semantics.convert`)."""
    if src == dst:
        return v
    rs, rd = REG[src], REG[dst]
    if src == "bool" or dst == "bool":
        raise NotLowered(f"a conversion from `{src}` to `{dst}`")
    v = materialize(b, v, src)
    if dst in FLOATS:
        if src in FLOATS:
            if src in NARROW_FLOATS and dst in NARROW_FLOATS:  # f16 <-> bf16, through f32
                return from_f32(b, to_f32(b, v, src), dst)
            wider = _float_bits(dst) > _float_bits(src)
            if wider:
                return b.op("cvt", rd, v, from_type=rs)
            return b.op("cvt", rd, v, from_type=rs, rounding="rn")
        return b.op("cvt", rd, v, from_type=rs, rounding="rn")  # integer -> float
    if src in FLOATS:  # float -> integer: toward zero, saturating, NaN -> 0
        if src in NARROW_FLOATS:
            v, rs = to_f32(b, v, src), "f32"
        if dst in ("i32", "i64", "u32"):
            return b.op("cvt", rd, v, from_type=rs, rounding="rzi")
        wide = "s32" if dst.startswith("i") else "u32"
        r = b.op("cvt", wide, v, from_type=rs, rounding="rzi")
        bits = NARROW_INTS[dst]
        if dst.startswith("i"):
            lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
            r = b.op("max", "s32", r, Imm(lo, "s32"))
            return b.op("min", "s32", r, Imm(hi, "s32"))
        return b.op("min", "u32", r, Imm((1 << bits) - 1, "u32"))
    # integer -> integer: keep the low bits, extend by the target's sign
    if dst in NARROW_INTS:
        if rs in ("s64", "u64"):
            v = b.op("cvt", rd, v, from_type=rs)
        elif rs != rd:
            v = b.op("mov", "b32", v, dest_type=rd)
        return wrap_narrow(b, v, dst)
    if lir.WIDTH[rs] == lir.WIDTH[rd]:
        return b.op("mov", bits_type(rd), v, dest_type=rd)
    return b.op("cvt", rd, v, from_type=rs)


def _float_bits(t: str) -> int:
    return {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}[t]


# ---------------------------------------------------------------------------
# Operators


def binary(b: Builder, op: str, x: Value, y: Value, t: str) -> Value:
    """`x op y` for operands of Phobos type `t`; a comparison gives a pred."""
    rt = REG[t]
    if op in ("&&", "||"):
        return b.op("and" if op == "&&" else "or", "pred", x, y)
    if t == "bool" and op in ("==", "!="):
        diff = b.op("xor", "pred", x, y)
        return diff if op == "!=" else b.op("not", "pred", diff)
    if op in CMP:
        if t in NARROW_FLOATS:
            x, y, rt = to_f32(b, x, t), to_f32(b, y, t), "f32"
        cmp = (FLOAT_CMP if t in FLOATS else CMP)[op]
        if t.startswith("u"):
            cmp = {"lt": "lo", "le": "ls", "gt": "hi", "ge": "hs"}.get(cmp, cmp)
        x, y = _reg_first(b, x, y, rt)
        return b.op("setp", "pred", x, y, cmp=cmp, type=rt)
    if t in FLOATS:
        if op not in ARITH or op == "%":
            raise NotLowered(f"`{op}` on `{t}`")
        if t in NARROW_FLOATS:
            r = binary(b, op, to_f32(b, x, t), to_f32(b, y, t), "f32")
            return from_f32(b, r, t)
        x, y = _reg_first(b, x, y, rt, commutes=op in "+*")
        if op == "/":
            return b.op("div", rt, x, y, rounding="rn")
        return b.op(ARITH[op], rt, x, y)
    if op in ARITH:
        x, y = _reg_first(b, x, y, rt, commutes=op in "+*")
        return wrap_narrow(b, b.op(ARITH[op], rt, x, y), t)
    if op in BITWISE:
        x, y = _reg_first(b, x, y, rt, commutes=True)
        return b.op(BITWISE[op], bits_type(rt), x, y, dest_type=rt)
    if op in ("<<", ">>"):
        count = _shift_count(b, y, rt)
        x = b.copy(x, rt) if isinstance(x, Imm) else x
        if op == "<<":
            return wrap_narrow(b, b.op("shl", bits_type(rt), x, count, dest_type=rt), t)
        return b.op("shr", rt, x, count)
    raise NotLowered(f"the operator `{op}`")


def _reg_first(b: Builder, x: Value, y: Value, rt: str, commutes: bool = False):
    """Operands with at most one immediate, and not only immediates."""
    if isinstance(x, Imm) and isinstance(y, Imm):
        return b.copy(x, rt), y
    if isinstance(x, Imm) and commutes:
        return y, x
    if isinstance(x, Imm):
        return b.copy(x, rt), y
    return x, y


def _shift_count(b: Builder, y: Value, rt: str) -> Value:
    """A shift count as the u32 PTX reads; a 64-bit count is clamped to 64 first."""
    if isinstance(y, Imm):
        count = y.value
        return Imm(count if 0 <= count < 2**32 else 2**32 - 1, "u32")
    if lir.WIDTH[rt] == 8 or lir.WIDTH[y.type] == 8:
        y = b.op("min", "u64", y, Imm(64, "u64")) if lir.WIDTH[y.type] == 8 else y
        if lir.WIDTH[y.type] == 8:
            return b.op("cvt", "u32", y, from_type="u64")
    return y


def unary(b: Builder, op: str, x: Value, t: str) -> Value:
    """`op x`: `-` negates, `!` is not on a pred, `~` the bitwise not."""
    rt = REG[t]
    if op == "!":
        return b.op("not", "pred", x)
    if isinstance(x, Imm):
        x = b.copy(x, rt)
    if op == "-":
        if t in NARROW_FLOATS:
            return from_f32(b, b.op("neg", "f32", to_f32(b, x, t)), t)
        return wrap_narrow(b, b.op("neg", rt, x), t)
    if op == "~":
        return b.op("not", bits_type(rt), x, dest_type=rt)
    raise NotLowered(f"the operator `{op}`")


def select(b: Builder, c: Value, x: Value, y: Value, t: str) -> Value:
    """`where(c, x, y)` on one value: `selp` (on preds, and/or)."""
    rt = REG[t]
    x, y = materialize(b, x, t), materialize(b, y, t)
    if rt == "pred":
        keep = b.op("and", "pred", c, x)
        other = b.op("and", "pred", b.op("not", "pred", c), y)
        return b.op("or", "pred", keep, other)
    return b.op("selp", bits_type(rt) if t in NARROW_FLOATS else rt, x, y, c, dest_type=rt)


def minmax(b: Builder, which: str, x: Value, y: Value, t: str) -> Value:
    """`min`/`max`: a NaN operand gives the other (PTX's `min.f32` does the same)."""
    rt = REG[t]
    if t in NARROW_FLOATS:
        return from_f32(b, minmax(b, which, to_f32(b, x, t), to_f32(b, y, t), "f32"), t)
    x, y = _reg_first(b, x, y, rt, commutes=True)
    return b.op(which, rt, x, y)


# ---------------------------------------------------------------------------
# Math built-ins: computed in f32 (SPEC.md "Elementwise"), f16 rounded back


def math1(b: Builder, name: str, x: Value, t: str) -> Value:
    """One math built-in on a value of Phobos type `t`."""
    if name == "abs" and t not in FLOATS:
        x = b.copy(x, REG[t]) if isinstance(x, Imm) else x
        return b.op("abs", REG[t], x)
    if t == "f64" and name in ("sqrt", "abs", "round", "floor", "ceil"):
        if isinstance(x, Imm):
            x = b.copy(x, "f64")
        if name == "sqrt":
            return b.op("sqrt", "f64", x, rounding="rn")
        if name == "abs":
            return b.op("abs", "f64", x)
        return b.op("cvt", "f64", x, from_type="f64", rounding=INTEGRAL[name])
    if t != "f32":
        if t not in FLOATS:
            raise NotLowered(f"`{name}` on `{t}`")
        wide = convert(b, x, t, "f32")
        return convert(b, math1(b, name, wide, "f32"), "f32", t)
    if isinstance(x, Imm):
        x = b.copy(x, "f32")
    if name == "exp":
        return b.op("ex2", "f32", b.op("mul", "f32", x, Imm(LOG2E, "f32")), rounding="approx")
    if name == "log":
        return b.op("mul", "f32", b.op("lg2", "f32", x, rounding="approx"), Imm(LN2, "f32"))
    if name in APPROX:
        return b.op(APPROX[name], "f32", x, rounding="approx")
    if name in INTEGRAL:
        return b.op("cvt", "f32", x, from_type="f32", rounding=INTEGRAL[name])
    if name == "abs":
        return b.op("abs", "f32", x)
    raise NotLowered(f"`{name}`")


def power(b: Builder, x: Value, y: Value, t: str) -> Value:
    """`pow(a, b)` as `ex2(b * lg2(a))`: exp(b * log(a)), approximate, for a > 0."""
    if t != "f32":
        if t not in FLOATS:
            raise NotLowered(f"`pow` on `{t}`")
        r = power(b, convert(b, x, t, "f32"), convert(b, y, t, "f32"), "f32")
        return convert(b, r, "f32", t)
    x = b.copy(x, "f32") if isinstance(x, Imm) else x
    lg = b.op("lg2", "f32", x, rounding="approx")
    return b.op("ex2", "f32", b.op("mul", "f32", lg, y), rounding="approx")


def const(value, t: str) -> Imm:
    """A hir constant as an immediate of its register type (a bool as 0 or 1 in a u32)."""
    rt = REG[t]
    if rt == "pred":
        return Imm(int(bool(value)), "u32")
    if t in NARROW_FLOATS:  # a 16-bit float immediate: its f32 value, converted where used
        return Imm(float(value), "f32")
    return imm(value, rt)


def materialize(b: Builder, v: Value, t: str) -> Value:
    """`v` as a register of `t`'s register type (an immediate is moved, a bool set)."""
    if not isinstance(v, Imm):
        return v
    rt = REG[t]
    if rt == "pred":
        one = b.copy(Imm(v.value, "u32"), "u32")
        return b.op("setp", "pred", one, Imm(0, "u32"), cmp="ne", type="u32")
    if t in NARROW_FLOATS:
        return from_f32(b, b.copy(Imm(float(v.value), "f32"), "f32"), t)
    return b.copy(v, rt)


__all__ = [
    "Reg",
    "binary",
    "const",
    "convert",
    "materialize",
    "math1",
    "minmax",
    "power",
    "select",
    "unary",
]
