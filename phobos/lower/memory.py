"""Tensor and shared-tile addressing: a slice as a base, per-axis starts and bounds.

A tensor is row-major and contiguous: its pitch along axis `a` is the product of the
extents after `a` (a dynamic extent is its `.entry` slot). An element's address is the
base pointer plus its flat index times the element size: at index width 32 the flat
index is computed in `s32` and widened to bytes with `mul_wide.s32`, at 64 in `s64`.
A slice (or a `let` view, or a slice of one) is an `Access`: the absolute start of its
origin on each axis and the upper bounds an index must stay below to be read or
written (SPEC.md "Bounds and masking": past the end reads 0 and skips the store).

An axis needs no mask when the bound is provably never reached: the slice's start
and extent are constants inside a static extent, or the dimension is `@aligned`.

    >>> Access("global", None, "f32", (Imm(0, "s32"),), ((),), (16,), (1,), (1,)).masked(0)
    False
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from math import gcd

from phobos.lower import lir, swizzle
from phobos.lower.builder import Builder, iadd, imul
from phobos.lower.errors import NotLowered
from phobos.lower.lir import Imm, Reg, Value
from phobos.lower.types import BYTES, MEM, REG, elem_of
from phobos.sema import hir

log = logging.getLogger("phobos.lower")
BIG = 1 << 20  # the divisor of 0: a multiple of every vector width


@dataclass
class Access:
    """A window of a tensor (global) or of a shared tile.

    `base` is the tensor's `u64` pointer, or the tile's byte offset in shared memory;
    `starts[a]` the index of the view's origin on axis `a`; `bounds[a]` the limits an
    index must stay below (empty: never masked); `shape` the view's extents (an int, or
    a Value for an extent bound at launch); `pitches[a]` the flat-index step of axis `a`
    (int or Value); `divs[a]` a number every start on axis `a` is a multiple of.
    `buffer` names the shared tile (for the barrier pass); `swizzle` the bytes of its
    row where its 16-byte chunks are XOR-swizzled (`phobos.lower.swizzle`): an address
    is then the swizzle of the whole offset, never an address moved by a constant.
    """

    space: str
    base: Value | None
    elem: str
    starts: tuple[Value, ...]
    bounds: tuple[tuple[Value, ...], ...]
    shape: tuple
    pitches: tuple
    divs: tuple[int, ...]
    buffer: object = None
    key: int = field(default_factory=lambda: next(_ids))
    swizzle: int | None = None
    panels: int | None = None  # a swizzled tile's rows, where stored as 128-byte panels

    def masked(self, axis: int) -> bool:
        return bool(self.bounds[axis])

    @property
    def rank(self) -> int:
        return len(self.starts)


def _counter():
    n = 0
    while True:
        n += 1
        yield n


_ids = _counter()


def pitch_divisor(p) -> int:
    """A number the pitch `p` is a multiple of: itself when static, else 4 (the ABI:
    every tensor extent is a multiple of 4)."""
    return p if isinstance(p, int) else 4


def whole_tensor(lw, sym: hir.Sym) -> Access:
    """A tensor parameter as an access over all of it."""
    t = sym.type
    dims = tuple(d if isinstance(d, int) else lw.dim_value(d) for d in t.dims)
    pitches = []
    for a in range(len(dims)):
        p = 1
        for d in t.dims[a + 1 :]:
            p = _mul_dim(lw, p, d)
        pitches.append(p)
    idx = lw.idx
    return Access(
        "global",
        lw.env[sym],
        t.elem.name,
        tuple(Imm(0, idx) for _ in dims),
        tuple(() for _ in dims),
        dims,
        tuple(pitches),
        tuple(BIG for _ in dims),
    )


def _mul_dim(lw, p, d):
    """`p * d` for a pitch `p` and a dimension `d` (static or bound at launch)."""
    if isinstance(p, int) and isinstance(d, int):
        return p * d
    return lw.once_index(("pitch", p if isinstance(p, int) else p.name, str(d)),
                         lambda: imul(lw.b, lw.idx, p, lw.dim_value(d)))  # fmt: skip


def resolve(lw, e: hir.Expr) -> Access:
    """The access an expression of tensor type (or a shared tile, or a slice of one) reads."""
    if isinstance(e, hir.Ref):
        bound = lw.env.get(e.sym)
        if isinstance(bound, Access):
            return bound
        if isinstance(e.sym.type, hir.TensorT) and e.sym.kind == "param":
            return whole_tensor(lw, e.sym)
        tile = lw.tiles.get(e.sym)
        if tile is not None and tile.place == "shared":
            return tile.access()
        raise NotLowered(f"reading `{e.sym.name}` here", e.span)
    if isinstance(e, hir.Slice):
        return slice_of(lw, resolve(lw, e.base), e)
    raise NotLowered("this view", e.span)


def slice_of(lw, parent: Access, e: hir.Slice) -> Access:
    """`parent[subs]`: starts add up, bounds narrow to the parent's window."""
    b, idx = lw.b, lw.idx
    starts, bounds, shape, divs = [], [], [], []
    for a, sub in enumerate(e.subs):
        s = lw.index_value(sub.start)
        start = iadd(b, idx, parent.starts[a], s)
        extent = 1 if sub.point else sub.extent
        div = gcd(parent.divs[a], lw.divisor(sub.start))
        limits = list(parent.bounds[a])
        p_extent = parent.shape[a]
        if extent is None:  # to the end: never masked
            ext = isub_extent(lw, p_extent, s)
            starts.append(start)
            bounds.append(tuple(limits))
            shape.append(ext)
            divs.append(div)
            continue
        ext = extent if isinstance(extent, int) else lw.dim_value(extent)
        # The parent's own end, unless this slice provably stays inside it.
        if not _inside(s, extent, p_extent) and not proven_inside(
            lw, sub, parent.starts[a], p_extent
        ):
            limits.append(iadd(b, idx, parent.starts[a], p_extent))
        starts.append(start)
        bounds.append(tuple(limits))
        shape.append(ext)
        divs.append(div)
    acc = Access(parent.space, parent.base, parent.elem, tuple(starts), tuple(bounds),
                 tuple(shape), parent.pitches, tuple(divs), parent.buffer)  # fmt: skip
    return lw.drop_proven_bounds(acc)


def proven_inside(lw, sub, parent_start, parent_extent) -> bool:
    from phobos.lower.loopsplit import proven_inside as inside

    return inside(lw, sub, parent_start, parent_extent)


def isub_extent(lw, extent, s):
    from phobos.lower.builder import isub

    return (
        isub(lw.b, lw.idx, extent, s)
        if not isinstance(extent, int) or not isinstance(s, Imm)
        else extent - s.value
    )


def _inside(s: Value, extent, p_extent) -> bool:
    """Whether `[s, s + extent)` provably lies in `[0, p_extent)`."""
    if isinstance(s, Imm) and isinstance(extent, int) and isinstance(p_extent, int):
        return 0 <= s.value and s.value + extent <= p_extent
    return False


# ---------------------------------------------------------------------------
# Addresses, loads and stores


def flat_index(lw, acc: Access, coords) -> Value:
    """The flat element index of `acc`'s origin moved by `coords` (Values), an index."""
    b, idx = lw.b, lw.idx
    total: Value = Imm(0, idx)
    for a in range(acc.rank):
        i = iadd(b, idx, acc.starts[a], coords[a])
        p = acc.pitches[a]
        total = iadd(b, idx, total, imul(b, idx, i, p if isinstance(p, int) else p))
    return total


def address(lw, acc: Access, flat: Value) -> Reg:
    """The address of flat element `flat` of `acc`'s array."""
    b = lw.b
    size = BYTES[acc.elem]
    if acc.space == "shared":
        off = imul(b, lw.idx, flat, size)
        if acc.swizzle:
            if lw.idx == "s64" and not isinstance(off, Imm):
                off = b.op("cvt", "u32", off, from_type="s64")
            off = swizzle.emit(b, off if isinstance(off, Imm) else _u32(b, off), acc.swizzle,
                               acc.panels)  # fmt: skip
        if isinstance(acc.base, Reg):  # a ring's stage, chosen turn by turn
            if isinstance(off, Imm):
                return b.op("add", "u32", acc.base, Imm(off.value, "u32"), hint="s")
            if lw.idx == "s64":
                off = b.op("cvt", "u32", off, from_type="s64")
            return b.op("add", "u32", off, acc.base, hint="s")
        if isinstance(off, Imm):
            return b.copy(Imm(off.value + acc.base.value, "u32"), "u32", hint="s")
        if lw.idx == "s64":
            off = b.op("cvt", "u32", off, from_type="s64")
        return b.op("add", "u32", off, Imm(acc.base.value, "u32"), hint="s")
    if isinstance(flat, Imm):
        if flat.value == 0:
            return acc.base
        return b.op("add", "u64", acc.base, Imm(flat.value * size, "u64"), hint="a")
    return b.op("add", "u64", acc.base, byte_offset(lw, flat, size), hint="a")


def _u32(b: Builder, off: Reg) -> Reg:
    return off if off.type == "u32" else b.op("mov", "b32", off, dest_type="u32")


def byte_offset(lw, flat: Reg, size: int) -> Reg:
    """`flat * size` as a u64 byte offset (`mul_wide.s32` at index width 32)."""
    b = lw.b
    if lw.idx == "s32":
        return b.op("mul_wide", "s32", flat, Imm(size, "s32"), dest_type="u64", hint="o")
    return b.op("mul", "s64", flat, Imm(size, "s64"), dest_type="u64", hint="o")


def offset_address(lw, addr: Reg, acc: Access, delta) -> Reg:
    """`addr` moved by `delta` elements (an int, or an index Value)."""
    b = lw.b
    size = BYTES[acc.elem]
    if acc.swizzle and (
        acc.panels
        or not (isinstance(delta, int) and delta * size % swizzle.period(acc.swizzle) == 0)
    ):
        raise AssertionError("a swizzled tile's address moved by a constant: swizzle the offset")
    if isinstance(delta, int):
        if delta == 0:
            return addr
        t = "u32" if acc.space == "shared" else "u64"
        return b.op("add", t, addr, Imm(delta * size, t), hint="s" if t == "u32" else "a")
    if acc.space == "shared":
        off = imul(b, lw.idx, delta, size)
        return b.op("add", "u32", addr, off, hint="s")
    if lw.idx == "s32":
        wide = b.op("mul_wide", "s32", delta, Imm(size, "s32"), dest_type="u64", hint="o")
    else:
        wide = b.op("mul", "s64", delta, Imm(size, "s64"), dest_type="u64", hint="o")
    return b.op("add", "u64", addr, wide, hint="a")


@dataclass(frozen=True)
class Halves:
    """The guard of an 8-wide 16-bit access whose bound may fall between its halves
    (a bound only a multiple of 4): the whole 16 bytes where `full` holds, only the
    first 8 bytes where `first` holds; None: never."""

    full: Reg | None
    first: Reg | None


PACKED = ("f16", "bf16")  # two to a 32-bit word: 8 elements one 16-byte access


def _chunks(elem: str, vec: int) -> list[tuple[int, int]]:
    """(first lane, lanes) of each access `vec` elements of `elem` take: 4 registers
    and 16 bytes at most each."""
    per = max(1, min(4, 16 // BYTES[elem]))
    return [(c, min(per, vec - c)) for c in range(0, vec, per)]


def load(b: Builder, space: str, elem: str, addr: Reg, vec: int, guard) -> list[Reg]:
    """`vec` elements at `addr`; where `guard` fails they read 0 (mov 0 first).

    `guard` is None (always), a pred register, or `Halves`. Eight 16-bit floats are
    one `ld.v4.b32` whose words unpack into two registers each (`mov.b32 {lo, hi}`);
    other widths over 16 bytes are several accesses.
    """
    rt = REG[elem]
    if elem in PACKED and vec == 8:
        words = [b.reg("b32") for _ in range(4)]
        if guard is not None:
            for w in words:
                b.emit("mov", (w,), (Imm(0, "b32"),), type="b32")
        _guarded(b, "ld", space, "b32", addr, words, guard, load=True)
        dests = [b.reg(rt) for _ in range(vec)]
        for k, w in enumerate(words):
            b.emit("mov", (dests[2 * k], dests[2 * k + 1]), (w,), type="b32")
        return dests
    if isinstance(guard, Halves):
        raise NotLowered(f"a {vec}-wide masked access of {elem}")
    dests = [b.reg(rt) for _ in range(vec)]
    if guard is not None:
        zero = Imm(0.0, rt) if lir.is_float(rt) else Imm(0, rt)
        mov_t = {2: "b16", 4: rt, 8: rt}.get(lir.WIDTH[rt], rt)
        if mov_t == "b16":
            zero = Imm(0, "b16")
        for d in dests:
            b.emit("mov", (d,), (zero,), type=mov_t)
    for c, n in _chunks(elem, vec):
        at = _moved(b, space, addr, c * BYTES[elem])
        b.emit("ld", dests[c : c + n], (at,), space=space, type=MEM[elem], vec=n, guard=guard)
    return dests


def store(b: Builder, space: str, elem: str, addr: Reg, values, guard) -> None:
    """`values` at `addr` where `guard` holds (as for `load`: eight 16-bit floats pack
    two to a word, `mov.b32 %w, {lo, hi}`, into one `st.v4.b32`)."""
    values = list(values)
    if elem in PACKED and len(values) == 8:
        regs = [v if isinstance(v, Reg) else b.copy(v, "b16") for v in values]
        words = []
        for k in range(4):
            w = b.reg("b32")
            b.emit("mov", (w,), (regs[2 * k], regs[2 * k + 1]), type="b32")
            words.append(w)
        _guarded(b, "st", space, "b32", addr, words, guard, load=False)
        return
    if isinstance(guard, Halves):
        raise NotLowered(f"a {len(values)}-wide masked access of {elem}")
    for c, n in _chunks(elem, len(values)):
        at = _moved(b, space, addr, c * BYTES[elem])
        b.emit("st", (), (at, *values[c : c + n]), space=space, type=MEM[elem], vec=n,
               guard=guard)  # fmt: skip


def _moved(b: Builder, space: str, addr: Reg, nbytes: int) -> Reg:
    if nbytes == 0:
        return addr
    t = "u32" if space == "shared" else "u64"
    return b.op("add", t, addr, Imm(nbytes, t), hint="s" if t == "u32" else "a")


def _guarded(b: Builder, op: str, space: str, t: str, addr: Reg, words, guard, load: bool):
    """One 4-word access under `guard`; under `Halves`, the whole where `full` holds
    and the first two words where `first` holds."""

    def access(ws, g):
        if load:
            b.emit("ld", ws, (addr,), space=space, type=t, vec=len(ws), guard=g)
        else:
            b.emit("st", (), (addr, *ws), space=space, type=t, vec=len(ws), guard=g)

    if not isinstance(guard, Halves):
        access(words, guard)
        return
    if guard.full is not None:
        access(words, guard.full)
    if guard.first is not None:
        access(words[:2], guard.first)


# ---------------------------------------------------------------------------
# Point accesses: `A[i, j]` read or written by each thread on its own (never masked)


def point_access(lw, e: hir.Slice) -> tuple[Access, Reg]:
    acc = resolve(lw, e.base)
    idx = [lw.index_value(sub.start) for sub in e.subs]
    flat = flat_index(lw, acc, idx)
    return acc, address(lw, acc, flat)


def point_load(lw, e: hir.Slice) -> Value:
    acc, addr = point_access(lw, e)
    lw.note_shared(acc, "read", None)
    return load(lw.b, acc.space, acc.elem, addr, 1, None)[0]


def point_store(lw, e: hir.Slice, value: Value) -> None:
    acc, addr = point_access(lw, e)
    from phobos.lower.scalars import materialize

    lw.note_shared(acc, "write", None)
    store(lw.b, acc.space, acc.elem, addr, (materialize(lw.b, value, acc.elem),), None)


def elem_type(e: hir.Expr) -> str:
    return elem_of(e.type)
