"""A thread's runs and the bit built-ins (SPEC.md "Collectives and shuffles",
"Operators and conversions").

A run `X[.., k :+ n]` is the thread's own `n` elements, never masked. It is read in
chunks: one vector access per chunk when the span is the last axis (pitch 1) and the
address is provably a multiple of the chunk (from the subscripts' divisors and
`@aligned`; tensors and shared tiles start 16-byte aligned), else one access per
element. A chunk is the largest power of two of bytes, at most 16, dividing both the
run's bytes and that alignment:

| element | chunk read as                                | elements from it                    |
|---------|----------------------------------------------|-------------------------------------|
| 4 or 8 bytes | `ld.v{1,2,4}` of the element type        | the registers themselves            |
| 2 bytes | `ld.v{1,2,4}.b16` (at most 8 bytes)           | the registers themselves            |
| 1 byte  | `ld.v{1,2,4}.u32` words                       | `shl`/`shr` (i8) or `shr`/`and` (u8) |

| built-in                        | lowering                                                    |
|---------------------------------|-------------------------------------------------------------|
| `sum(e)`                        | `e` per element in order, added into the result type        |
| `sum(i32(a) * i32(b))`, i8 runs | `dp4a.s32` per word of `a` and `b` (index width 32)         |
| `sum(i32(a))`, i8 run           | `dp4a.s32` of each word against `0x01010101`                |
| `elem(run, i)`                  | element `i` of the run's load; a byte or u16 read as `s32`/`u32`, widened to the index by the checker's conversion |
| `word(run, t)`                  | word `t` of the run (a `u32` load, or its 4 bytes `or`ed)   |
| `store(run, v..)`               | `st.v{1,2,4}` per chunk (bytes packed into words), else per element |
| `dp4a(x, y, acc)`               | `dp4a.s32`                                                  |
| `byteperm(x, y, sel)`           | `prmt.b32` with `sel & 0x7777` (no sign replication)        |
| `popcount(x)`                   | `popc.b32` of the low 32 bits                               |
| `f16bits(x)`                    | `cvt.u16` of the low 16 bits, reinterpreted as an `f16`     |

The integer sums wrap as the 32-bit sum does, in any order, so the dp4a forms give
exactly the element-by-element result.

    >>> chunk_bytes(16, 4, 64)
    16
    >>> chunk_bytes(12, 4, 4)
    4
"""

from __future__ import annotations

from math import gcd

from phobos.lower import lir, memory, scalars
from phobos.lower.builder import imul
from phobos.lower.errors import NotLowered
from phobos.lower.lir import Imm, Reg, Value
from phobos.lower.types import BYTES, REG, elem_of
from phobos.sema import hir
from phobos.sema.runs import ELEMENTWISE

E_RUN_EXPR = "E0532"
MATH1 = ("exp", "log", "sqrt", "tanh", "round", "floor", "ceil", "abs", "rsqrt", "sin", "cos")


def chunk_bytes(total: int, size: int, align: int) -> int:
    """The bytes one vector access of a run covers: a power of two, at most 16, at
    least an element, dividing the run's `total` bytes and its address alignment."""
    c = 16
    while c > size and (total % c or align % c):
        c //= 2
    return max(c, size)


class Run:
    """One run `X[.., k :+ n]` of one thread: its address and its elements, loaded once."""

    def __init__(self, lw, s: hir.Slice):
        self.lw = lw
        span = [a for a, sub in enumerate(s.subs) if not sub.point]
        if len(span) != 1:
            raise NotLowered("a run with more than one span", s.span)
        self.axis = span[0]
        sub = s.subs[self.axis]
        if not isinstance(sub.extent, int):
            raise NotLowered("a run of a length known only at launch", s.span, code=E_RUN_EXPR)
        self.n = sub.extent
        base = memory.resolve(lw, s.base)
        self.acc = base
        self.elem = base.elem
        self.size = BYTES[self.elem]
        coords = [lw.index_value(x.start) for x in s.subs]
        self.addr = memory.address(lw, base, memory.flat_index(lw, base, coords))
        pitch = base.pitches[self.axis]
        self.pitch = pitch
        # the element alignment of the run's first element
        div = memory.BIG
        for a, x in enumerate(s.subs):
            start_div = gcd(base.divs[a], lw.divisor(x.start))
            div = gcd(div, start_div * memory.pitch_divisor(base.pitches[a]))
        contiguous = pitch == 1 and self.axis == base.rank - 1
        total = self.n * self.size
        align = min(div * self.size, 16)
        self.chunk = chunk_bytes(total, self.size, align) if contiguous else self.size
        if self.size == 1 and self.chunk < 4:
            self.chunk = 1
        self._elems: dict[int, Value] = {}
        self._words: dict[int, Value] = {}

    # -- addresses -----------------------------------------------------------

    def at(self, k: int) -> Reg:
        """The address of element `k`."""
        lw = self.lw
        if isinstance(self.pitch, int):
            return memory.offset_address(lw, self.addr, self.acc, k * self.pitch)
        if k == 0:
            return self.addr
        return memory.offset_address(lw, self.addr, self.acc, imul(lw.b, lw.idx, self.pitch, k))

    # -- reads ----------------------------------------------------------------

    def _load_chunks(self) -> None:
        b, space = self.lw.b, self.acc.space
        self.lw.note_shared(self.acc, "read", None)  # a thread's own read (barriers.py)
        if self.size == 1:
            per = self.chunk // 4
            for c in range(self.n // (4 * per)):
                words = memory.load(b, space, "u32", self.at(4 * per * c), per, None)
                for j, w in enumerate(words):
                    self._words[per * c + j] = w
            return
        per = min(self.chunk // self.size, 4)
        for c in range(self.n // per):
            regs = memory.load(b, space, self.elem, self.at(per * c), per, None)
            for j, r in enumerate(regs):
                self._elems[per * c + j] = r

    def element(self, k: int) -> Value:
        if k in self._elems:
            return self._elems[k]
        b = self.lw.b
        if self.chunk > self.size or (self.size == 1 and self.chunk >= 4):
            if not self._elems and not self._words:
                self._load_chunks()
            if k in self._elems:
                return self._elems[k]
            w = self._words[k // 4]
            shift = 8 * (k % 4)
            if self.elem == "i8":
                up = b.op("shl", "b32", w, Imm(24 - shift, "u32"), dest_type="s32")
                v = b.op("shr", "s32", up, Imm(24, "u32"))
            else:
                down = b.op("shr", "u32", w, Imm(shift, "u32")) if shift else w
                v = b.op("and", "b32", down, Imm(255, "b32"), dest_type="u32")
        else:
            self.lw.note_shared(self.acc, "read", None)
            v = memory.load(b, self.acc.space, self.elem, self.at(k), 1, None)[0]
        self._elems[k] = v
        return v

    def word(self, t: int) -> Value:
        """Bytes 4t .. 4t + 3 as a little-endian `u32`."""
        if t in self._words:
            return self._words[t]
        b = self.lw.b
        if self.chunk >= 4:
            self._load_chunks()
            return self._words[t]
        w: Value | None = None
        for j in range(4):
            x = self.element(4 * t + j)
            byte = b.op("and", "b32", x, Imm(255, "b32"), dest_type="u32")
            if j:
                byte = b.op("shl", "b32", byte, Imm(8 * j, "u32"), dest_type="u32")
                w = b.op("or", "b32", w, byte, dest_type="u32")
            else:
                w = byte
        self._words[t] = w
        return w

    # -- writes ---------------------------------------------------------------

    def store(self, values: list[Value]) -> None:
        b, space = self.lw.b, self.acc.space
        values = [scalars.materialize(b, v, self.elem) for v in values]
        self.lw.note_shared(self.acc, "write", None)
        if self.size == 1 and self.chunk >= 4:
            words = []
            for t in range(self.n // 4):
                w = None
                for j in range(4):
                    byte = b.op("and", "b32", values[4 * t + j], Imm(255, "b32"), dest_type="u32")
                    if j:
                        byte = b.op("shl", "b32", byte, Imm(8 * j, "u32"), dest_type="u32")
                        w = b.op("or", "b32", w, byte, dest_type="u32")
                    else:
                        w = byte
                words.append(w)
            per = self.chunk // 4
            for c in range(len(words) // per):
                memory.store(b, space, "u32", self.at(4 * per * c), words[per * c : per * c + per],
                             None)  # fmt: skip
            return
        per = min(self.chunk // self.size, 4) if self.size > 1 else 1
        for c in range(self.n // per):
            memory.store(b, space, self.elem, self.at(per * c), values[per * c : per * c + per],
                         None)  # fmt: skip


def lower(lw, e: hir.Builtin) -> Value:
    """One run or bit built-in call."""
    return RUNS[e.name](lw, e)


# ---------------------------------------------------------------------------
# sum(e), elem, word, store


def _runs_in(e, out: list) -> list:
    if isinstance(e, hir.Slice) and not all(s.point for s in e.subs):
        out.append(e)
        return out
    if isinstance(e.type, hir.Scalar):
        return out
    for child in _children(e):
        _runs_in(child, out)
    return out


def _children(e):
    if isinstance(e, hir.Convert):
        return (e.value,)
    if isinstance(e, hir.Unary):
        return (e.operand,)
    if isinstance(e, hir.Binary):
        return (e.left, e.right)
    if isinstance(e, hir.Builtin):
        return e.args
    return ()


def _per_element(lw, e, k: int, runs: dict, scalars_seen: dict) -> Value:
    """Element `k` of the run expression `e`."""
    b = lw.b
    if isinstance(e.type, hir.Scalar):
        if id(e) not in scalars_seen:
            scalars_seen[id(e)] = lw.value(e)
        return scalars_seen[id(e)]
    t = elem_of(e.type)
    if isinstance(e, hir.Slice):
        return runs[id(e)].element(k)
    if isinstance(e, hir.Convert):
        x = _per_element(lw, e.value, k, runs, scalars_seen)
        return scalars.convert(b, x, elem_of(e.value.type), t)
    if isinstance(e, hir.Unary):
        return scalars.unary(b, e.op, _per_element(lw, e.operand, k, runs, scalars_seen), t)
    if isinstance(e, hir.Binary):
        x = _per_element(lw, e.left, k, runs, scalars_seen)
        y = _per_element(lw, e.right, k, runs, scalars_seen)
        return scalars.binary(b, e.op, x, y, elem_of(e.left.type))
    if isinstance(e, hir.Builtin) and e.name in ELEMENTWISE:
        xs = [_per_element(lw, a, k, runs, scalars_seen) for a in e.args]
        if e.name in MATH1:
            return scalars.math1(b, e.name, xs[0], t)
        if e.name == "pow":
            return scalars.power(b, xs[0], xs[1], t)
        return scalars.minmax(b, "min" if e.name == "min" else "max", xs[0], xs[1], t)
    what = e.name if isinstance(e, hir.Builtin) else type(e).__name__
    raise NotLowered(f"`{what}` inside a run-sum", e.span, code=E_RUN_EXPR)


def _byte_run(x) -> hir.Slice | None:
    """`x` as `i32(run)` of an i8 run, else None (a single element `i32(Q[r, c])` too)."""
    if (isinstance(x, hir.Convert) and elem_of(x.type) == "i32"
            and isinstance(x.value, hir.Slice) and elem_of(x.value.type) == "i8"
            and not all(s.point for s in x.value.subs)):  # fmt: skip
        return x.value
    return None


def run_sum(lw, e: hir.Builtin) -> Value:
    b = lw.b
    x = e.args[0]
    t = elem_of(e.type)
    slices = _runs_in(x, [])
    runs = {id(s): Run(lw, s) for s in slices}
    n = next(iter(runs.values())).n
    if lw.idx == "s32" and t == "i32" and n % 4 == 0:
        if isinstance(x, hir.Binary) and x.op == "*":
            pair = (_byte_run(x.left), _byte_run(x.right))
            ok = None not in pair
        else:
            pair = (_byte_run(x), None)
            ok = pair[0] is not None
        if ok:
            ra = runs[id(pair[0])]
            rb = runs[id(pair[1])] if pair[1] is not None else None
            acc: Value = b.copy(Imm(0, "s32"), "s32", hint="dot")
            for w in range(n // 4):
                wb = rb.word(w) if rb is not None else Imm(0x01010101, "u32")
                acc = b.op("dp4a", "s32", ra.word(w), wb, acc)
            return acc
    seen: dict = {}
    acc = scalars.const(0, t)
    xt = elem_of(x.type)
    for k in range(n):
        v = scalars.convert(b, _per_element(lw, x, k, runs, seen), xt, t)
        acc = scalars.binary(b, "+", acc, v, t)
    return acc


def elem(lw, e: hir.Builtin) -> Value:
    run = Run(lw, e.args[0])
    return run.element(int(e.args[1].value))


def word(lw, e: hir.Builtin) -> Value:
    run = Run(lw, e.args[0])
    t = int(e.args[1].value) if len(e.args) > 1 else 0
    return scalars.convert(lw.b, run.word(t), "u32", elem_of(e.type))


def store(lw, e: hir.Builtin) -> Value:
    run = Run(lw, e.args[0])
    run.store([lw.value(v) for v in e.args[1:]])
    return Imm(0, REG[elem_of(e.type)])


# ---------------------------------------------------------------------------
# Bit built-ins: dp4a, byteperm, popcount, f16bits


def _low32(lw, v: Value) -> Value:
    """An index's low 32 bits as a u32 (an immediate stays one)."""
    b = lw.b
    if isinstance(v, Imm):
        return Imm(int(v.value) & 0xFFFFFFFF, "u32")
    if lir.WIDTH[v.type] == 8:
        return b.op("cvt", "u32", v, from_type=v.type)
    return b.op("mov", "b32", v, dest_type="u32")


def _index_of_u32(lw, v: Value, t: str) -> Value:
    return scalars.convert(lw.b, v, "u32", t)


def dp4a(lw, e: hir.Builtin) -> Value:
    b, t = lw.b, elem_of(e.type)
    x, y, acc = (lw.value(a) for a in e.args)
    xs = scalars.materialize(b, _low32(lw, x), "u32")
    ys = _low32(lw, y)
    if t == "i32":
        acc = scalars.materialize(b, acc, "i32")
        return b.op("dp4a", "s32", xs, ys, acc)
    zero = b.copy(Imm(0, "s32"), "s32")
    part = b.op("dp4a", "s32", xs, ys, zero)
    return scalars.binary(b, "+", scalars.convert(b, part, "i32", t), acc, t)


def byteperm(lw, e: hir.Builtin) -> Value:
    b, t = lw.b, elem_of(e.type)
    x, y, sel = (_low32(lw, lw.value(a)) for a in e.args)
    x = scalars.materialize(b, x, "u32")
    if isinstance(sel, Imm):
        sel = Imm(sel.value & 0x7777, "u32")
    else:
        sel = b.op("and", "b32", sel, Imm(0x7777, "b32"), dest_type="u32")
    out = b.op("prmt", "b32", x, y, sel, dest_type="u32")
    return _index_of_u32(lw, out, t)


def popcount(lw, e: hir.Builtin) -> Value:
    b, t = lw.b, elem_of(e.type)
    x = scalars.materialize(b, _low32(lw, lw.value(e.args[0])), "u32")
    return _index_of_u32(lw, b.op("popc", "b32", x, dest_type="u32"), t)


def f16bits(lw, e: hir.Builtin) -> Value:
    b = lw.b
    x = scalars.materialize(b, _low32(lw, lw.value(e.args[0])), "u32")
    low = b.op("cvt", "u16", x, from_type="u32")
    return b.op("bitcast", "f16", low, dest_type="f16")


def _sum(lw, e: hir.Builtin) -> Value:
    return run_sum(lw, e)


RUNS = {
    "sum": _sum,
    "elem": elem,
    "word": word,
    "store": store,
    "dp4a": dp4a,
    "byteperm": byteperm,
    "popcount": popcount,
    "f16bits": f16bits,
}
