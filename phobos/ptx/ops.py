"""The op -> template table: one rule per lir op, each writing one PTX instruction.

`RULES[op](e, i)` returns the instruction's text without its guard and `;`. A rule
may first write helper lines with `e.pre(...)` (conversions into fresh temporaries,
never a memory access or a write to a lir register): they run unguarded, and only the
returned instruction, which writes the lir destination, carries the guard. A lir op
or attribute combination that has no template raises `NoTemplate` naming the op: it
is a bug in the lowering, and PTX that would compute something else is never written.

Attributes read here (beyond lir's `type`, `from_type`, `space`, `vec`, `cmp`, `mode`,
`scope`, `sem`, `rounding`, `sat`, `atom`, `name`):

- `ftz` (truthy): flush f32 subnormals (`add.rn.ftz.f32`, `ex2.approx.ftz.f32`, ...);
- `nan` (truthy): `min.NaN`/`max.NaN`, a NaN operand gives NaN;
- `offset` (int): a byte offset added to a memory address, `[%rd1+16]`;
- `cache` (str): a cache operator on ld/st (`ca cg cs lu cv` / `wb cg cs wt`),
  `nc` for the read-only path (`ld.global.nc`), `volatile` for `ld.volatile`;
- `mask` (int): a shfl/vote member mask other than the full warp;
- `proxy` (str): `async` on a fence gives `fence.proxy.async` (sm_90);
- `size` (int), `cache` (`ca` or `cg`) on `cp_async`, `pending` (int) on `cp_async_wait`;
- `trans` (0 or 1) on `ldmatrix`; `shape` on `mma` and the `wmma_*` ops; `matrix` (a, b,
  c) and `layout`/`alayout`/`blayout` (row, col) on the `wmma_*` ops.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from phobos.lower import fragments, lir

if TYPE_CHECKING:
    from phobos.ptx.emit import Emitter


class PtxError(Exception):
    """Emission failed: the base of the errors below."""


class NoTemplate(PtxError):
    """A lir instruction PTX has no template for: a bug in the pass that made it."""


class TargetError(PtxError):
    """The instruction exists only on newer chips than the target: the user's program
    needs another chip. `code` and `span` let the driver render it as a diagnostic."""

    code = "E0590"

    def __init__(self, message: str, span=None):
        super().__init__(message)
        self.span = span


Rule = Callable[["Emitter", lir.Inst], str]
RULES: dict[str, Rule] = {}


def rule(*ops: str) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        for op in ops:
            RULES[op] = fn
        return fn

    return register


# ---------------------------------------------------------------------------
# Type classes

INT16 = ("s16", "u16", "b16", "s32", "u32", "b32", "s64", "u64", "b64")  # no 8-bit arithmetic
SMALL_FLOATS = ("f16", "bf16")
EIGHT = ("s8", "u8", "b8")


def bits(t: str) -> str:
    """The bit type of `t`'s width: `b32` for f32, s32, u32; `pred` stays `pred`."""
    if t == "pred":
        return t
    return f"b{lir.WIDTH[t] * 8}"


def int_as(t: str, signed: bool | None = None) -> str:
    """An integer type as PTX arithmetic spells it: b32 -> u32 (or s32 when `signed`)."""
    if t.startswith("b"):
        return ("s" if signed else "u") + t[1:]
    return t


def mem_type(t: str) -> str:
    """The type ld/st/param use: 16-bit floats move as b16."""
    return "b16" if t in SMALL_FLOATS else t


def type_of(e: Emitter, i: lir.Inst) -> str:
    t = i.attr("type")
    if t is None:
        e.fail(i, "has no `type`")
    return t


FLOAT_ROUND = ("rn", "rz", "rm", "rp")
INT_ROUND = ("rni", "rzi", "rmi", "rpi")


def float_mods(e: Emitter, i: lir.Inst, t: str, default: str | None = "rn", sat=True) -> str:
    """`.rn.ftz.sat` as an f32/f64/f16 arithmetic instruction spells them."""
    rnd = i.attr("rounding", default)
    if rnd is not None and rnd not in FLOAT_ROUND:
        e.fail(i, f"has rounding `{rnd}`, not one of {' '.join(FLOAT_ROUND)}")
    mods = f".{rnd}" if rnd else ""
    if i.attr("ftz"):
        if t not in ("f32", "f16"):
            e.fail(i, f"asks for ftz on {t}")
        mods += ".ftz"
    if i.attr("sat"):
        if not sat or t == "f64":
            e.fail(i, f"asks for sat on {t}")
        mods += ".sat"
    return mods


# ---------------------------------------------------------------------------
# 16-bit floats through f32: exact for + - * / sqrt (f32 holds 2p + 2 bits of an f16
# or bf16 result, so the second rounding never differs from a direct one) and for
# comparisons; for the approximate math it is the approximation the spec names.


def widen(e: Emitter, value: lir.Value) -> str:
    """`value` (f16 or bf16) as an f32 operand: a temporary, or an f32 immediate."""
    if isinstance(value, lir.Imm):
        return e.imm(lir.Imm(float(value.value), "f32"))
    if value.type not in SMALL_FLOATS:
        return e.operand(value)
    tmp = e.temp("f32")
    e.pre(f"cvt.f32.{value.type} {tmp}, {e.operand(value)}")
    return tmp


def via_f32(e: Emitter, i: lir.Inst, t: str, head: str, srcs=None) -> str:
    """Compute `head` (`add.rn.f32`, ...) in f32 into a temporary; round it back to `t`."""
    ops = [widen(e, s) for s in (i.srcs if srcs is None else srcs)]
    tmp = e.temp("f32")
    e.pre(f"{head} {tmp}, {', '.join(ops)}")
    return f"cvt.rn.{t}.f32 {e.dest(i)}, {tmp}"


def int_mods(e: Emitter, i: lir.Inst) -> None:
    """Integer arithmetic has no rounding and no flushing: asking for one is a bug."""
    for key in ("rounding", "ftz", "nan"):
        if i.attr(key):
            e.fail(i, f"asks for `{key}` on an integer type")


def plain(e: Emitter, i: lir.Inst, head: str) -> str:
    """`head dest, srcs...` with every operand as the emitter formats it."""
    ops = [e.dest(i), *(e.operand(s) for s in i.srcs)]
    return f"{head} {', '.join(ops)}"


def arity(e: Emitter, i: lir.Inst, n: int) -> None:
    if len(i.srcs) != n:
        e.fail(i, f"takes {n} operands, not {len(i.srcs)}")


# ---------------------------------------------------------------------------
# Arithmetic


ARITY = {"add": 2, "sub": 2, "mul": 2, "mul_hi": 2, "mul_wide": 2, "mad": 3, "fma": 3,
         "div": 2, "rem": 2, "neg": 1, "abs": 1, "min": 2, "max": 2}  # fmt: skip


@rule("add", "sub", "mul")
def _add_sub_mul(e: Emitter, i: lir.Inst) -> str:
    t = type_of(e, i)
    arity(e, i, 2)
    if t in INT16:
        int_mods(e, i)
        lo = ".lo" if i.op == "mul" else ""
        sat = ""
        if i.attr("sat"):
            if t != "s32" or i.op == "mul":
                e.fail(i, f"asks for sat on {i.op}.{t} (PTX saturates add/sub.s32 only)")
            sat = ".sat"
        return plain(e, i, f"{i.op}{lo}{sat}.{int_as(t)}")
    if t in ("f32", "f64", "f16"):
        # No rounding modifier unless one is asked for: ptxas may then fuse a product that
        # only feeds a sum into one fma, as SPEC.md allows ("Float a * b + c may round
        # once ... the default of CUDA's -fmad"). Round-to-nearest either way.
        return plain(e, i, f"{i.op}{float_mods(e, i, t, default=None)}.{t}")
    if t == "bf16":
        if e.target.has("bf16_math"):
            return plain(e, i, f"{i.op}{float_mods(e, i, t, sat=False)}.bf16")
        return via_f32(e, i, t, f"{i.op}{float_mods(e, i, 'f32', sat=False)}.f32")
    e.fail(i, f"has no template for type {t}")


@rule("mul_hi")
def _mul_hi(e: Emitter, i: lir.Inst) -> str:
    t = type_of(e, i)
    arity(e, i, 2)
    if t not in INT16:
        e.fail(i, f"has no template for type {t}")
    int_mods(e, i)
    return plain(e, i, f"mul.hi.{int_as(t)}")


@rule("mul_wide")
def _mul_wide(e: Emitter, i: lir.Inst) -> str:
    t = type_of(e, i)
    arity(e, i, 2)
    if t not in ("s16", "u16", "b16", "s32", "u32", "b32"):
        e.fail(i, f"has no template for type {t} (mul.wide takes 16- or 32-bit operands)")
    int_mods(e, i)
    return plain(e, i, f"mul.wide.{int_as(t)}")


@rule("mad", "fma")
def _mad_fma(e: Emitter, i: lir.Inst) -> str:
    t = type_of(e, i)
    arity(e, i, 3)
    if t in INT16 and i.op == "mad":
        int_mods(e, i)
        return plain(e, i, f"mad.lo.{int_as(t)}")
    if t in ("f32", "f64", "f16"):
        return plain(e, i, f"fma{float_mods(e, i, t)}.{t}")
    if t == "bf16":
        e.needs(i, "bf16_cvt")
        return plain(e, i, f"fma{float_mods(e, i, t, sat=False)}.bf16")
    e.fail(i, f"has no template for type {t}")


@rule("div")
def _div(e: Emitter, i: lir.Inst) -> str:
    t = type_of(e, i)
    arity(e, i, 2)
    if t in INT16:
        int_mods(e, i)
        return plain(e, i, f"div.{int_as(t)}")
    rnd = i.attr("rounding", "rn")
    ftz = ".ftz" if i.attr("ftz") else ""
    if t == "f32":
        if rnd in ("approx", "full"):
            return plain(e, i, f"div.{rnd}{ftz}.f32")
        return plain(e, i, f"div{float_mods(e, i, t)}.f32")
    if t == "f64":
        return plain(e, i, f"div{float_mods(e, i, t)}.f64")
    if t in SMALL_FLOATS:
        if rnd != "rn" or i.attr("sat") or ftz:
            e.fail(i, f"has no template for {t} with these attributes")
        return via_f32(e, i, t, "div.rn.f32")
    e.fail(i, f"has no template for type {t}")


@rule("rem")
def _rem(e: Emitter, i: lir.Inst) -> str:
    t = type_of(e, i)
    arity(e, i, 2)
    if t not in INT16:
        e.fail(i, f"has no template for type {t} (rem is integer only)")
    int_mods(e, i)
    return plain(e, i, f"rem.{int_as(t, signed=False)}")


@rule("neg", "abs")
def _neg_abs(e: Emitter, i: lir.Inst) -> str:
    t = type_of(e, i)
    arity(e, i, 1)
    if t in INT16:
        int_mods(e, i)
        if lir.is_signed(t):
            return plain(e, i, f"{i.op}.{t}")
        # Unsigned: negation wraps, and every value is its own absolute value.
        if i.op == "neg":
            return f"sub.{int_as(t)} {e.dest(i)}, 0, {e.operand(i.srcs[0])}"
        return f"mov.{bits(t)} {e.dest(i)}, {e.operand(i.srcs[0])}"
    if t in ("f32", "f64", "f16", "bf16"):
        if t == "bf16":
            e.needs(i, "bf16_cvt")
        return plain(e, i, f"{i.op}{float_mods(e, i, t, default=None, sat=False)}.{t}")
    e.fail(i, f"has no template for type {t}")


@rule("min", "max")
def _min_max(e: Emitter, i: lir.Inst) -> str:
    t = type_of(e, i)
    arity(e, i, 2)
    if t in INT16:
        int_mods(e, i)
        return plain(e, i, f"{i.op}.{int_as(t)}")
    mods = ".ftz" if i.attr("ftz") and t in ("f32", "f16") else ""
    if i.attr("nan"):
        if t == "f64":
            e.fail(i, "asks for min/max.NaN on f64, which PTX does not have")
        e.needs(i, "f16_minmax")
        mods += ".NaN"
    if t in ("f32", "f64"):
        return plain(e, i, f"{i.op}{mods}.{t}")
    if t in SMALL_FLOATS:
        e.needs(i, "f16_minmax" if t == "f16" else "bf16_cvt")
        return plain(e, i, f"{i.op}{mods}.{t}")
    e.fail(i, f"has no template for type {t}")


# ---------------------------------------------------------------------------
# Bits


@rule("and", "or", "xor", "not")
def _logic(e: Emitter, i: lir.Inst) -> str:
    t = type_of(e, i)
    arity(e, i, 1 if i.op == "not" else 2)
    if t == "pred":
        return plain(e, i, f"{i.op}.pred")
    if t in INT16 or t in EIGHT or t in SMALL_FLOATS:
        # 8-bit values live in 16-bit registers; bitwise ops keep their low byte exact.
        return plain(e, i, f"{i.op}.{bits(t) if t not in EIGHT else 'b16'}")
    e.fail(i, f"has no template for type {t}")


@rule("shl", "shr")
def _shift(e: Emitter, i: lir.Inst) -> str:
    t = type_of(e, i)
    arity(e, i, 2)
    if t not in INT16:
        e.fail(i, f"has no template for type {t}")
    # PTX shifts by a u32 amount whatever the shifted type.
    amount = e.as_u32(i.srcs[1])
    # shr.s shifts in copies of the sign bit; shr.u and shr.b shift in zeros.
    head = f"shl.{bits(t)}" if i.op == "shl" else f"shr.{t}"
    return f"{head} {e.dest(i)}, {e.operand(i.srcs[0])}, {amount}"


@rule("popc")
def _popc(e: Emitter, i: lir.Inst) -> str:
    t = type_of(e, i)
    arity(e, i, 1)
    if t not in INT16 or lir.WIDTH[t] < 4:
        e.fail(i, f"has no template for type {t} (popc counts 32- or 64-bit values)")
    if lir.WIDTH[i.dests[0].type] != 4:
        e.fail(i, "writes a 32-bit count")
    return plain(e, i, f"popc.{bits(t)}")


PRMT_MODES = ("f4e", "b4e", "rc8", "ecl", "ecr", "rc16")


@rule("prmt")
def _prmt(e: Emitter, i: lir.Inst) -> str:
    t = type_of(e, i)
    arity(e, i, 3)
    if lir.WIDTH.get(t) != 4 or lir.is_float(t):
        e.fail(i, f"has no template for type {t} (prmt permutes b32)")
    mode = i.attr("mode")
    if mode is not None and mode not in PRMT_MODES:
        e.fail(i, f"has mode `{mode}`, not one of {' '.join(PRMT_MODES)}")
    return plain(e, i, f"prmt.b32{'.' + mode if mode else ''}")


@rule("dp4a")
def _dp4a(e: Emitter, i: lir.Inst) -> str:
    t = type_of(e, i)
    arity(e, i, 3)
    if t not in ("s32", "u32"):
        e.fail(i, f"has no template for type {t} (dp4a is s32 or u32)")
    return plain(e, i, f"dp4a.{t}.{t}")


# ---------------------------------------------------------------------------
# Compare and select

INT_CMP = {"eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge"}
UINT_CMP = {"eq": "eq", "ne": "ne", "lt": "lo", "le": "ls", "gt": "hi", "ge": "hs",
            "lo": "lo", "ls": "ls", "hi": "hi", "hs": "hs"}  # fmt: skip
BIT_CMP = {"eq": "eq", "ne": "ne"}
FLOAT_CMP = {c: c for c in ("eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu",
                            "gtu", "geu", "num", "nan")}  # fmt: skip


@rule("setp")
def _setp(e: Emitter, i: lir.Inst) -> str:
    t = type_of(e, i)
    arity(e, i, 2)
    cmp = i.attr("cmp")
    if t in INT16:
        table = BIT_CMP if t[0] == "b" else UINT_CMP if t[0] == "u" else INT_CMP
    elif lir.is_float(t):
        table = FLOAT_CMP
    else:
        e.fail(i, f"has no template for type {t}")
    if cmp not in table:
        e.fail(i, f"has no comparison `{cmp}` on {t}")
    ftz = ".ftz" if i.attr("ftz") and t in ("f32", "f16") else ""
    if t == "bf16" and not e.target.has("bf16_math"):
        a, b = (widen(e, s) for s in i.srcs)
        return f"setp.{table[cmp]}.f32 {e.dest(i)}, {a}, {b}"
    return plain(e, i, f"setp.{table[cmp]}{ftz}.{t}")


@rule("selp")
def _selp(e: Emitter, i: lir.Inst) -> str:
    t = type_of(e, i)
    if t == "pred":
        e.fail(i, "has no template for type pred (select predicates with and/or)")
    a, b, c = i.srcs
    st = t if t in ("f32", "f64") else bits(t) if t not in EIGHT else "b16"
    ops = [e.dest(i), e.operand(a, imm_ok=True), e.operand(b, imm_ok=True), e.operand(c)]
    return f"selp.{st} {', '.join(ops)}"


# ---------------------------------------------------------------------------
# Conversions

CVT_NAME = {"b8": "u8", "b16": "u16", "b32": "u32", "b64": "u64"}


def _int_range(t: str) -> tuple[int, int]:
    w = lir.WIDTH[t] * 8
    return (-(1 << (w - 1)), (1 << (w - 1)) - 1) if lir.is_signed(t) else (0, (1 << w) - 1)


@rule("cvt")
def _cvt(e: Emitter, i: lir.Inst) -> str:
    to = type_of(e, i)
    frm = i.attr("from_type")
    arity(e, i, 1)
    src = i.srcs[0]
    rnd = i.attr("rounding")
    sat = i.attr("sat")
    if frm == to == "pred":
        return f"mov.pred {e.dest(i)}, {e.operand(src)}"
    if frm == "pred":
        kind = float if lir.is_float(to) else int
        one, zero = (e.imm(lir.Imm(kind(v), to)) for v in (1, 0))
        st = to if to in ("f32", "f64") else "b16" if lir.WIDTH[to] <= 2 else bits(to)
        return f"selp.{st} {e.dest(i)}, {one}, {zero}, {e.operand(src)}"
    if to == "pred":
        zero = e.imm(lir.Imm(0.0 if lir.is_float(frm) else 0, frm))
        cmp = "neu" if lir.is_float(frm) else "ne"
        st = frm if lir.is_float(frm) else int_as(frm) if frm not in EIGHT else "u16"
        if frm in SMALL_FLOATS:
            return f"setp.neu.f32 {e.dest(i)}, {widen(e, src)}, 0f00000000"
        return f"setp.{cmp}.{st} {e.dest(i)}, {e.operand(src)}, {zero}"
    if frm == to and not rnd and not sat:
        return f"mov.{bits(to) if to not in EIGHT else 'b16'} {e.dest(i)}, {e.operand(src)}"
    d, s = CVT_NAME.get(to, to), CVT_NAME.get(frm, frm)
    ftz = ".ftz" if i.attr("ftz") and "f32" in (to, frm) else ""
    if lir.is_int(to) and lir.is_int(frm):
        if rnd:
            e.fail(i, f"has rounding `{rnd}` on an integer conversion")
        lo, hi = _int_range(s)
        dlo, dhi = _int_range(d)
        if sat and dlo <= lo and hi <= dhi:
            sat = False  # every value fits: nothing to saturate
        return f"cvt{'.sat' if sat else ''}.{d}.{s} {e.dest(i)}, {e.operand(src)}"
    if lir.is_float(to) and lir.is_int(frm):
        rnd = rnd or "rn"
        if rnd not in FLOAT_ROUND:
            e.fail(i, f"has rounding `{rnd}`; an int-to-float conversion takes {FLOAT_ROUND}")
        if to == "bf16" and (not e.target.has("bf16_math") or frm in EIGHT):
            if lir.WIDTH[frm] > 2:  # through f32 would round twice
                e.needs(i, "bf16_math")
            tmp = e.temp("f32")
            e.pre(f"cvt.rn.f32.{s} {tmp}, {e.operand(src)}")
            return f"cvt.{rnd}{'.sat' if sat else ''}.bf16.f32 {e.dest(i)}, {tmp}"
        if to == "bf16" and sat:
            e.fail(i, "asks for sat on a conversion to bf16")
        return f"cvt.{rnd}{ftz}{'.sat' if sat else ''}.{d}.{s} {e.dest(i)}, {e.operand(src)}"
    if lir.is_int(to) and lir.is_float(frm):
        rnd = rnd or "rzi"
        rnd = {"rn": "rni", "rz": "rzi", "rm": "rmi", "rp": "rpi"}.get(rnd, rnd)
        if rnd not in INT_ROUND:
            e.fail(i, f"has rounding `{rnd}`; a float-to-int conversion takes {INT_ROUND}")
        if frm == "bf16" and (not e.target.has("bf16_math") or to in EIGHT):
            s, operand = "f32", widen(e, src)  # bf16 -> f32 is exact
        else:
            operand = e.operand(src)
        if sat and frm == "bf16" and e.target.has("bf16_math"):
            sat = False  # PTX float-to-int conversions clamp to the range anyway
        return f"cvt.{rnd}{ftz}{'.sat' if sat else ''}.{d}.{s} {e.dest(i)}, {operand}"
    # float -> float
    wider = lir.WIDTH[to] > lir.WIDTH[frm] or (to, frm) == ("f32", "bf16")
    same = to == frm
    if same:
        if rnd not in INT_ROUND and not (sat and rnd is None):
            e.fail(i, f"converts {frm} to itself with rounding `{rnd}`")
    elif wider:
        if rnd not in (None, "rn"):
            e.fail(i, f"widens {frm} to {to}, exactly; rounding `{rnd}` means nothing")
        rnd = None
    else:
        rnd = rnd or "rn"
        if rnd not in FLOAT_ROUND:
            e.fail(i, f"has rounding `{rnd}`; a narrowing float conversion takes {FLOAT_ROUND}")
    mods = (f".{rnd}" if rnd else "") + ftz + (".sat" if sat else "")
    if "bf16" in (to, frm) and (to, frm) not in (("bf16", "f32"), ("f32", "bf16")):
        if not e.target.has("bf16_math"):
            if to == "bf16" and frm == "f64":
                e.needs(i, "bf16_math")  # through f32 would round twice
            if sat:
                e.fail(i, "asks for sat on a bf16 conversion")
            if same:  # a bf16 rounded to an integer is a bf16: the second cvt is exact
                tmp = e.temp("f32")
                e.pre(f"cvt{mods}.f32.f32 {tmp}, {widen(e, src)}")
                return f"cvt.rn.bf16.f32 {e.dest(i)}, {tmp}"
            if to == "bf16":  # f16 -> f32 is exact; round once to bf16
                return f"cvt{mods}.bf16.f32 {e.dest(i)}, {widen(e, src)}"
            tmp = widen(e, src)  # bf16 -> f32 is exact
            if to == "f32":
                return f"mov.f32 {e.dest(i)}, {tmp}"
            return f"cvt{mods}.{to}.f32 {e.dest(i)}, {tmp}"
    if "bf16" in (to, frm) and sat:
        e.fail(i, "asks for sat on a bf16 conversion")
    if "bf16" in (to, frm):
        e.needs(i, "bf16_cvt")
    return f"cvt{mods}.{d}.{s} {e.dest(i)}, {e.operand(src)}"


def _pack(e: Emitter, i: lir.Inst) -> str:
    """`mov.b32 {%lo, %hi}, %w` (unpack) and `mov.b32 %w, {%lo, %hi}` (pack): a 32-bit
    word as two 16-bit registers, the low half first; `mov.b64` likewise with 32-bit
    halves."""
    unpack = len(i.dests) == 2 and len(i.srcs) == 1
    wide, halves = (i.srcs, i.dests) if unpack else (i.dests, i.srcs)
    t = i.attr("type")
    width = {"b32": 4, "b64": 8}.get(t)
    if (
        width is None
        or len(wide) != 1
        or len(halves) != 2
        or not all(isinstance(v, lir.Reg) for v in (*wide, *halves))
        or lir.WIDTH[wide[0].type] != width
        or any(lir.WIDTH[h.type] != width // 2 or h.type == "pred" for h in halves)
    ):
        e.fail(i, "packs or unpacks something other than a b32 (b64) word and two 16-bit "
               "(32-bit) registers")  # fmt: skip
    pair = "{" + ", ".join(e.name(h) for h in halves) + "}"
    if unpack:
        return f"mov.{t} {pair}, {e.name(wide[0])}"
    return f"mov.{t} {e.name(wide[0])}, {pair}"


@rule("mov")
def _mov(e: Emitter, i: lir.Inst) -> str:
    if len(i.dests) > 1 or len(i.srcs) > 1:
        return _pack(e, i)
    t = i.attr("type") or i.dests[0].type
    arity(e, i, 1)
    src = i.srcs[0]
    if isinstance(src, lir.Reg) and lir.WIDTH[src.type] != lir.WIDTH[t]:
        e.fail(i, f"moves a {src.type} register into {t}")
    if t == "pred":
        return f"mov.pred {e.dest(i)}, {e.operand(src, imm_ok=True)}"
    st = t if t in ("f32", "f64") else "b16" if t in EIGHT else bits(t)
    return f"mov.{st} {e.dest(i)}, {e.operand(src, imm_ok=True)}"


@rule("bitcast")
def _bitcast(e: Emitter, i: lir.Inst) -> str:
    if len(i.dests) > 1 or len(i.srcs) > 1:
        return _pack(e, i)
    arity(e, i, 1)
    src, dest = i.srcs[0], i.dests[0]
    if lir.WIDTH[src.type] != lir.WIDTH[dest.type] or "pred" in (src.type, dest.type):
        e.fail(i, f"reinterprets {src.type} as {dest.type}, of another width")
    st = "b16" if dest.type in EIGHT else bits(dest.type)
    return f"mov.{st} {e.dest(i)}, {e.operand(src, imm_ok=True)}"


# ---------------------------------------------------------------------------
# Approximate math: (op, type) -> the roundings PTX has, the first being the default.
# A missing f16/bf16 entry computes in f32 and rounds back.

MATH: dict[tuple[str, str], tuple[str, ...]] = {
    ("ex2", "f32"): ("approx",), ("lg2", "f32"): ("approx",),
    ("sin", "f32"): ("approx",), ("cos", "f32"): ("approx",),
    ("tanh", "f32"): ("approx",), ("rsqrt", "f32"): ("approx",),
    ("sqrt", "f32"): ("approx", *FLOAT_ROUND), ("rcp", "f32"): ("approx", *FLOAT_ROUND),
    ("sqrt", "f64"): FLOAT_ROUND, ("rcp", "f64"): (*FLOAT_ROUND, "approx"),
    ("rsqrt", "f64"): ("approx",),
    ("ex2", "f16"): ("approx",), ("tanh", "f16"): ("approx",),
}  # fmt: skip
MATH_BF16 = {"ex2": "approx.ftz", "tanh": "approx"}  # sm_90
NO_FTZ = {("tanh", "f32"), ("rsqrt", "f64"), ("ex2", "f16"), ("tanh", "f16")}


@rule(*sorted(lir.MATH))
def _math(e: Emitter, i: lir.Inst) -> str:
    t = type_of(e, i)
    arity(e, i, 1)
    rnd = i.attr("rounding")
    if t == "bf16" and i.op in MATH_BF16 and e.target.has("bf16_math") and rnd in (None, "approx"):
        return plain(e, i, f"{i.op}.{MATH_BF16[i.op]}.bf16")
    if t in SMALL_FLOATS and (i.op, t) not in MATH:
        if rnd not in (None, "approx") or i.attr("ftz"):
            e.fail(i, f"has no template for {t} with these attributes")
        head = f"{i.op}.{MATH[(i.op, 'f32')][0]}.f32" if (i.op, "f32") in MATH else None
        if head is None:
            e.fail(i, f"has no template for type {t}")
        return via_f32(e, i, t, head)
    allowed = MATH.get((i.op, t))
    if allowed is None:
        e.fail(i, f"has no template for type {t}")
    rnd = rnd or allowed[0]
    if rnd not in allowed:
        e.fail(i, f"has rounding `{rnd}` on {t}; PTX has {' '.join(allowed)}")
    ftz = ""
    if i.attr("ftz"):
        if (i.op, t) in NO_FTZ or (t == "f64" and not (i.op == "rcp" and rnd == "approx")):
            e.fail(i, f"asks for ftz on {i.op}.{t}")
        ftz = ".ftz"
    if (i.op, t) == ("rcp", "f64") and rnd == "approx":
        ftz = ".ftz"  # PTX's only approximate f64 reciprocal flushes subnormals
    return plain(e, i, f"{i.op}.{rnd}{ftz}.{t}")


# ---------------------------------------------------------------------------
# Memory

LD_CACHE = ("ca", "cg", "cs", "lu", "cv")
ST_CACHE = ("wb", "cg", "cs", "wt")


def _sem_scope(e: Emitter, i: lir.Inst, sems: tuple[str, ...]) -> str:
    sem, scope = i.attr("sem"), i.attr("scope")
    if sem is None:
        return f".{scope}" if scope and i.op in ("atom", "red") else ""
    if sem not in sems:
        e.fail(i, f"has memory order `{sem}`; {i.op} takes {' '.join(sems)}")
    if scope not in (None, "cta", "gpu", "sys"):
        e.fail(i, f"has scope `{scope}`")
    return f".{sem}.{scope or 'sys'}"  # an order without a scope: the strongest one


def _ld_st_head(e: Emitter, i: lir.Inst) -> str:
    t = type_of(e, i)
    space = i.attr("space")
    vec = i.attr("vec", 1)
    sems = ("relaxed", "acquire") if i.op == "ld" else ("relaxed", "release")
    order = _sem_scope(e, i, sems)
    if order and vec != 1:
        e.fail(i, f"asks for a {vec}-wide access with memory order `{i.attr('sem')}`")
    cache = i.attr("cache")
    extra = ""
    if cache == "volatile":
        if order:
            e.fail(i, "is both volatile and ordered")
        order = ".volatile"
    elif cache == "nc":
        if i.op != "ld" or space != "global" or order:
            e.fail(i, "uses the read-only path (`nc`) other than for a plain global load")
        extra = ".nc"
    elif cache is not None:
        if cache not in (LD_CACHE if i.op == "ld" else ST_CACHE) or order:
            e.fail(i, f"has cache operator `{cache}`")
        extra = f".{cache}"
    v = f".v{vec}" if vec != 1 else ""
    return f"{i.op}{order}.{space}{extra}{v}.{mem_type(t)}"


@rule("ld")
def _ld(e: Emitter, i: lir.Inst) -> str:
    head = _ld_st_head(e, i)
    addr = e.address(i)
    dests = [e.operand(d) for d in i.dests]
    d = dests[0] if len(dests) == 1 else "{" + ", ".join(dests) + "}"
    return f"{head} {d}, {addr}"


@rule("st")
def _st(e: Emitter, i: lir.Inst) -> str:
    head = _ld_st_head(e, i)
    addr = e.address(i)
    values = [e.operand(v, imm_ok=True) for v in i.srcs[1:]]
    v = values[0] if len(values) == 1 else "{" + ", ".join(values) + "}"
    return f"{head} {addr}, {v}"


# (atomic op) -> {lir type: PTX type}; `red` takes the ops marked True.
ATOMS: dict[str, tuple[bool, dict[str, str]]] = {
    "add": (True, {"u32": "u32", "s32": "s32", "b32": "u32", "u64": "u64", "s64": "u64",
                   "b64": "u64", "f32": "f32", "f64": "f64", "f16": "noftz.f16",
                   "bf16": "noftz.bf16"}),
    "min": (True, {"u32": "u32", "s32": "s32", "u64": "u64", "s64": "s64"}),
    "max": (True, {"u32": "u32", "s32": "s32", "u64": "u64", "s64": "s64"}),
    "inc": (True, {"u32": "u32", "b32": "u32"}),
    "dec": (True, {"u32": "u32", "b32": "u32"}),
    "and": (True, {t: bits(t) for t in ("b32", "u32", "s32", "b64", "u64", "s64")}),
    "or": (True, {t: bits(t) for t in ("b32", "u32", "s32", "b64", "u64", "s64")}),
    "xor": (True, {t: bits(t) for t in ("b32", "u32", "s32", "b64", "u64", "s64")}),
    "exch": (False, {t: bits(t) for t in ("b32", "u32", "s32", "f32", "b64", "u64", "s64",
                                          "f64")}),
    "cas": (False, {t: bits(t) for t in ("b16", "u16", "s16", "b32", "u32", "s32", "f32",
                                         "b64", "u64", "s64", "f64")}),
}  # fmt: skip


@rule("atom", "red")
def _atom(e: Emitter, i: lir.Inst) -> str:
    t = type_of(e, i)
    op = i.attr("atom")
    if op not in ATOMS:
        e.fail(i, f"has atomic operation `{op}`, not one of {' '.join(ATOMS)}")
    reducible, types = ATOMS[op]
    if t not in types:
        e.fail(i, f"has no template for {op} on {t}")
    if t == "bf16":
        e.needs(i, "atom_add_bf16")
    if i.attr("space") not in ("global", "shared"):
        e.fail(i, f"is an atomic on `{i.attr('space')}` memory")
    if i.attr("vec", 1) != 1:
        e.fail(i, "is a vector atomic")
    want = 3 if op == "cas" else 2
    arity(e, i, want)
    kind = i.op
    if kind == "atom" and not i.dests and reducible:
        kind = "red"  # nobody reads the old value
    if kind == "red" and (i.dests or not reducible):
        e.fail(i, f"has no reduction form for {op}" if not reducible else "writes a register")
    order = _sem_scope(e, i, ("relaxed", "acquire", "release", "acq_rel"))
    head = f"{kind}{order}.{i.attr('space')}.{op}.{types[t]}"
    addr = e.address(i)
    values = [e.operand(v) for v in i.srcs[1:]]
    if kind == "red":
        return f"{head} {addr}, {', '.join(values)}"
    dest = e.dest(i) if i.dests else e.temp(t)
    return f"{head} {dest}, {addr}, {', '.join(values)}"


# ---------------------------------------------------------------------------
# Special registers, synchronization, warps


@rule("sreg")
def _sreg(e: Emitter, i: lir.Inst) -> str:
    name = i.attr("name")
    if name not in lir.SPECIAL_REGS:
        e.fail(i, f"reads unknown special register `{name}`")
    if "cluster" in name:
        e.needs(i, "cluster")
    dest = i.dests[0]
    if not lir.is_int(dest.type) or dest.type in EIGHT:
        e.fail(i, f"reads %{name} into a {dest.type} register")
    if lir.WIDTH[dest.type] == 4:
        return f"mov.u32 {e.dest(i)}, %{name}"
    tmp = e.temp("u32")
    e.pre(f"mov.u32 {tmp}, %{name}")
    return f"cvt.{int_as(dest.type)}.u32 {e.dest(i)}, {tmp}"


@rule("bar")
def _bar(e: Emitter, i: lir.Inst) -> str:
    if i.dests or len(i.srcs) > 2:
        e.fail(i, "takes a barrier number and optionally a thread count")
    ops = [e.operand(s, imm_ok=True) for s in i.srcs] or ["0"]
    # bar.arrive signals without waiting; the ISA needs its thread count.
    if i.attr("arrive"):
        if len(i.srcs) != 2:
            e.fail(i, "arrives without a thread count (bar.arrive needs one)")
        return f"bar.arrive {', '.join(ops)}"
    return f"bar.sync {', '.join(ops)}"


@rule("fence")
def _fence(e: Emitter, i: lir.Inst) -> str:
    if i.attr("proxy") is not None:
        if i.attr("proxy") != "async":
            e.fail(i, f"has proxy `{i.attr('proxy')}`")
        e.needs(i, "async_proxy")
        space = {None: "", "global": ".global", "shared": ".shared::cta"}.get(i.attr("space"))
        if space is None:
            e.fail(i, f"fences the async proxy on `{i.attr('space')}` memory")
        return f"fence.proxy.async{space}"
    sem = i.attr("sem", "acq_rel")
    if sem not in ("sc", "acq_rel"):
        e.fail(i, f"has order `{sem}`; a fence is sc or acq_rel")
    scope = i.attr("scope", "gpu")
    if scope not in ("cta", "gpu", "sys"):
        e.fail(i, f"has scope `{scope}`")
    return f"fence.{sem}.{scope}"


FULL_WARP = "0xffffffff"


def _mask(e: Emitter, i: lir.Inst, extra: tuple[lir.Value, ...]) -> str:
    if extra:
        return e.operand(extra[0], imm_ok=True)
    mask = i.attr("mask")
    return FULL_WARP if mask is None else hex(int(mask) & 0xFFFFFFFF)


@rule("shfl")
def _shfl(e: Emitter, i: lir.Inst) -> str:
    mode = i.attr("mode")
    if mode not in ("bfly", "up", "down", "idx"):
        e.fail(i, f"has mode `{mode}`")
    t = i.attr("type") or i.dests[0].type
    if lir.WIDTH.get(t) != 4 or lir.WIDTH[i.dests[0].type] != 4:
        e.fail(i, f"shuffles {t}; shfl moves 32-bit values (wider ones are split first)")
    if not 2 <= len(i.srcs) <= 4:
        e.fail(i, "takes a value, a lane, optionally a clamp and a member mask")
    value, lane, *rest = i.srcs
    # The clamp of a whole-warp shuffle: lane 31 down/bfly/idx, lane 0 up.
    clamp = e.operand(rest[0], imm_ok=True) if rest else ("0" if mode == "up" else "31")
    dests = e.dest(i)
    if len(i.dests) == 2:
        if i.dests[1].type != "pred":
            e.fail(i, "writes a value and optionally a pred")
        dests += "|" + e.operand(i.dests[1])
    mask = _mask(e, i, tuple(rest[1:]))
    ops = [e.operand(value), e.operand(lane, imm_ok=True), clamp, mask]
    return f"shfl.sync.{mode}.b32 {dests}, {', '.join(ops)}"


@rule("vote")
def _vote(e: Emitter, i: lir.Inst) -> str:
    mode = i.attr("mode")
    if mode not in ("any", "all", "uni", "ballot"):
        e.fail(i, f"has mode `{mode}`")
    if not 1 <= len(i.srcs) <= 2:
        e.fail(i, "takes a pred and optionally a member mask")
    want = 4 if mode == "ballot" else None
    dest = i.dests[0]
    if (want and lir.WIDTH[dest.type] != 4) or (not want and dest.type != "pred"):
        e.fail(i, f"writes {'a 32-bit mask' if want else 'a pred'}, not {dest.type}")
    kind = "b32" if mode == "ballot" else "pred"
    src = e.operand(i.srcs[0])
    return f"vote.sync.{mode}.{kind} {e.dest(i)}, {src}, {_mask(e, i, tuple(i.srcs[1:]))}"


@rule("trap")
def _trap(e: Emitter, i: lir.Inst) -> str:
    return "trap"


# ---------------------------------------------------------------------------
# Asynchronous copies (sm_80): cp.async, its groups and their waits


@rule("cp_async")
def _cp_async(e: Emitter, i: lir.Inst) -> str:
    e.needs(i, "cp_async")
    size = i.attr("size")
    if size not in (4, 8, 16):
        e.fail(i, f"copies {size} bytes; cp.async copies 4, 8 or 16")
    # .cg caches in L2 only and takes 16 bytes only; .ca (L1 too) takes any size.
    cache = i.attr("cache", "cg" if size == 16 else "ca")
    if cache not in ("ca", "cg") or (cache == "cg" and size != 16):
        e.fail(i, f"has cache `{cache}` on {size} bytes (`cg` copies 16 only)")
    if len(i.srcs) not in (2, 3) or not all(isinstance(v, lir.Reg) for v in i.srcs[:2]):
        e.fail(i, "takes a shared and a global address register, then optionally a source size")
    dst, src = i.srcs[:2]
    # The shared address is an offset into the CTA's window, rebased as ld/st rebase it.
    base = e.shared_base(i)
    offset = e.name(dst)
    if dst.type != "u32":
        narrow = e.temp("u32")
        e.pre(f"cvt.u32.{dst.type} {narrow}, {offset}")
        offset = narrow
    addr = e.temp("u32")
    e.pre(f"add.u32 {addr}, {offset}, {base}")
    ops = [f"[{addr}]", f"[{e.name(src)}]", str(size)]
    if len(i.srcs) == 3:
        # Bytes past the source size are written as zeros and never read.
        ops.append(e.operand(i.srcs[2], imm_ok=True))
    return f"cp.async.{cache}.shared.global {', '.join(ops)}"


@rule("cp_async_commit")
def _cp_async_commit(e: Emitter, i: lir.Inst) -> str:
    e.needs(i, "cp_async")
    arity(e, i, 0)
    return "cp.async.commit_group"


@rule("cp_async_wait")
def _cp_async_wait(e: Emitter, i: lir.Inst) -> str:
    e.needs(i, "cp_async")
    arity(e, i, 0)
    pending = i.attr("pending")
    if not isinstance(pending, int) or isinstance(pending, bool) or pending < 0:
        e.fail(i, f"waits with `pending` {pending!r}, not a count of groups from 0")
    return f"cp.async.wait_group {pending}"


# ---------------------------------------------------------------------------
# Tensor cores (sm_80): ldmatrix, mma.sync and wmma, and the packed conversion feeding them


@rule("cvt_x2")
def _cvt_x2(e: Emitter, i: lir.Inst) -> str:
    e.needs(i, "cvt_x2")
    t = type_of(e, i)
    if t not in SMALL_FLOATS or i.attr("from_type") != "f32":
        e.fail(i, f"rounds {i.attr('from_type')} to {t}; it rounds f32 to f16 or bf16")
    rnd = i.attr("rounding", "rn")
    if rnd not in ("rn", "rz"):
        e.fail(i, f"has rounding `{rnd}`; cvt.{t}x2.f32 takes rn or rz")
    arity(e, i, 2)
    if not all(isinstance(v, lir.Reg) and v.type == "f32" for v in i.srcs):
        e.fail(i, "takes two f32 registers")
    lo, hi = i.srcs
    # PTX writes its first source to the upper half: the lir order (low first) swaps.
    return f"cvt.{rnd}.{t}x2.f32 {e.dest(i)}, {e.name(hi)}, {e.name(lo)}"


def _vector(e: Emitter, regs) -> str:
    return "{" + ", ".join(e.name(r) for r in regs) + "}"


def _regs(e: Emitter, i: lir.Inst, regs, count: int, types: tuple[str, ...], what: str):
    if len(regs) != count or not all(isinstance(r, lir.Reg) and r.type in types for r in regs):
        e.fail(i, f"needs {count} {' or '.join(types)} registers for {what}")
    return _vector(e, regs)


def _shared_address(e: Emitter, i: lir.Inst, reg: lir.Value) -> str:
    """A lir shared offset (a u32 register) rebased onto the CTA's window, as ld/st do."""
    if not isinstance(reg, lir.Reg) or reg.type != "u32":
        e.fail(i, "takes a u32 shared address register")
    addr = e.temp("u32")
    e.pre(f"add.u32 {addr}, {e.name(reg)}, {e.shared_base(i)}")
    return addr


@rule("ldmatrix")
def _ldmatrix(e: Emitter, i: lir.Inst) -> str:
    e.needs(i, "tensor_cores")
    if i.attr("space") != "shared" or i.attr("type") != "b16":
        e.fail(i, "loads something other than b16 matrices from shared memory")
    n = len(i.dests)
    if n not in (1, 2, 4):
        e.fail(i, f"loads {n} matrices; ldmatrix loads 1, 2 or 4")
    trans = i.attr("trans", 0)
    if trans not in (0, 1):
        e.fail(i, f"has `trans` {trans!r}, not 0 or 1")
    dests = _regs(e, i, i.dests, n, ("b32",), "the matrices")
    arity(e, i, 1)
    addr = _shared_address(e, i, i.srcs[0])
    head = f"ldmatrix.sync.aligned.m8n8.x{n}{'.trans' if trans else ''}.shared.b16"
    return f"{head} {dests}, [{addr}]"


@rule("mma")
def _mma(e: Emitter, i: lir.Inst) -> str:
    e.needs(i, "tensor_cores")
    shape, ab, acc = i.attr("shape"), i.attr("from_type"), i.attr("type")
    form = fragments.MMA.get((shape, ab, acc))
    if form is None:
        e.fail(i, f"has no form {shape} {ab} -> {acc}")
    na, nb, nc = form.a.regs, form.b.regs, form.c.regs
    wide = ("b32",) if acc == "f16" else (acc,)
    a = _regs(e, i, i.srcs[:na], na, ("b32",), "A")
    b = _regs(e, i, i.srcs[na : na + nb], nb, ("b32",), "B")
    c = _regs(e, i, i.srcs[na + nb :], nc, wide, "C")
    d = _regs(e, i, i.dests, nc, wide, "D")
    # Only the row-major A, column-major B forms exist for these shapes.
    return f"mma.sync.aligned.{shape}.row.col.{acc}.{ab}.{ab}.{acc} {d}, {a}, {b}, {c}"


def _wmma_head(e: Emitter, i: lir.Inst, *layouts: str) -> str:
    if i.attr("shape") != "m16n16k16":
        e.fail(i, f"has shape {i.attr('shape')}; only m16n16k16 has a template")
    for key in layouts:
        if i.attr(key) not in ("row", "col"):
            e.fail(i, f"has `{key}` {i.attr(key)!r}, not row or col")
    return ".".join(i.attr(key) for key in layouts) + ".m16n16k16"


def _wmma_memory(e: Emitter, i: lir.Inst, values: int) -> tuple[str, str, str]:
    """(space, `[address]`, `, stride` or nothing) of a wmma load or store."""
    space = i.attr("space")
    if space not in ("shared", "global"):
        e.fail(i, f"accesses `{space}` memory; wmma loads and stores shared or global")
    if len(i.srcs) not in (1 + values, 2 + values):
        e.fail(i, f"takes an address, {values} registers and an optional stride")
    addr = i.srcs[0]
    if space == "shared":
        text = _shared_address(e, i, addr)
    elif isinstance(addr, lir.Reg) and addr.type == "u64":
        text = e.name(addr)
    else:
        e.fail(i, "takes a u64 global address register")
    stride = ""
    if len(i.srcs) == 2 + values:
        stride = ", " + e.operand(i.srcs[-1], imm_ok=True)
    return space, f"[{text}]", stride


@rule("wmma_load")
def _wmma_load(e: Emitter, i: lir.Inst) -> str:
    e.needs(i, "tensor_cores")
    head = _wmma_head(e, i, "layout")
    matrix, t = i.attr("matrix"), i.attr("type")
    if (matrix, t) not in (("a", "f16"), ("b", "f16"), ("c", "f32")):
        e.fail(i, f"loads matrix {matrix!r} of {t}; a and b are f16, c is f32")
    dests = _regs(e, i, i.dests, 8, ("f32",) if matrix == "c" else ("b32",), matrix.upper())
    space, addr, stride = _wmma_memory(e, i, 0)
    return f"wmma.load.{matrix}.sync.aligned.{head}.{space}.{t} {dests}, {addr}{stride}"


@rule("wmma_mma")
def _wmma_mma(e: Emitter, i: lir.Inst) -> str:
    e.needs(i, "tensor_cores")
    head = _wmma_head(e, i, "alayout", "blayout")
    if (i.attr("type"), i.attr("from_type")) != ("f32", "f16"):
        e.fail(i, "has no template but f16 multiplied into f32")
    a = _regs(e, i, i.srcs[:8], 8, ("b32",), "A")
    b = _regs(e, i, i.srcs[8:16], 8, ("b32",), "B")
    c = _regs(e, i, i.srcs[16:], 8, ("f32",), "C")
    d = _regs(e, i, i.dests, 8, ("f32",), "D")
    # The f16 multiplicands are implied: the two types are D's and C's.
    return f"wmma.mma.sync.aligned.{head}.f32.f32 {d}, {a}, {b}, {c}"


@rule("wmma_store")
def _wmma_store(e: Emitter, i: lir.Inst) -> str:
    e.needs(i, "tensor_cores")
    head = _wmma_head(e, i, "layout")
    if i.attr("type") != "f32" or i.dests:
        e.fail(i, "stores something other than D's eight f32 registers")
    values = _regs(e, i, i.srcs[1:9], 8, ("f32",), "D")
    space, addr, stride = _wmma_memory(e, i, 8)
    return f"wmma.store.d.sync.aligned.{head}.{space}.f32 {addr}, {values}{stride}"


# The attributes each op's rule reads; any other is refused rather than ignored.
_FLOAT = ("type", "rounding", "ftz")
_MEM = ("type", "space", "vec", "sem", "scope", "offset")
ATTRS: dict[str, tuple[str, ...]] = {
    "add": (*_FLOAT, "sat"), "sub": (*_FLOAT, "sat"), "mul": (*_FLOAT, "sat"),
    "mad": (*_FLOAT, "sat"), "fma": (*_FLOAT, "sat"), "div": _FLOAT,
    "mul_hi": ("type",), "mul_wide": ("type",), "rem": ("type",),
    "neg": ("type", "ftz"), "abs": ("type", "ftz"), "min": ("type", "ftz", "nan"),
    "max": ("type", "ftz", "nan"),
    "and": ("type",), "or": ("type",), "xor": ("type",), "not": ("type",), "shl": ("type",),
    "shr": ("type",), "popc": ("type",), "prmt": ("type", "mode"), "dp4a": ("type",),
    "setp": ("type", "cmp", "ftz"), "selp": ("type",),
    "cvt": ("type", "from_type", "rounding", "sat", "ftz"), "mov": ("type",),
    "bitcast": ("type", "from_type"),
    **{op: _FLOAT for op in lir.MATH},
    "ld": (*_MEM, "cache"), "st": (*_MEM, "cache"), "atom": (*_MEM, "atom"), "red": (*_MEM, "atom"),
    "sreg": ("name",), "bar": ("arrive",), "fence": ("sem", "scope", "proxy", "space"),
    "shfl": ("type", "mode", "mask"), "vote": ("mode", "mask"), "trap": (),
    "cp_async": ("size", "cache"), "cp_async_commit": (), "cp_async_wait": ("pending",),
    "cvt_x2": ("type", "from_type", "rounding"), "ldmatrix": ("type", "space", "trans"),
    "mma": ("type", "from_type", "shape"),
    "wmma_load": ("type", "space", "shape", "matrix", "layout"),
    "wmma_mma": ("type", "from_type", "shape", "alayout", "blayout"),
    "wmma_store": ("type", "space", "shape", "layout"),
}  # fmt: skip


def check_attrs(e: Emitter, i: lir.Inst) -> None:
    for key, value in i.attrs:
        if key not in ATTRS[i.op] and not (key == "vec" and value == 1):
            e.fail(i, f"has attribute `{key}`, which it does not take")


# Hopper's rules live in their own module and register themselves here.
from phobos.ptx import hopper  # noqa: E402, F401

missing = set(lir.OPS) - set(RULES)
assert not missing, f"lir ops without a PTX rule: {sorted(missing)}"
assert set(ATTRS) == set(RULES), sorted(set(ATTRS) ^ set(RULES))
