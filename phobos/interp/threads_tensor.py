"""Tensor-core ops of the threads interpreter: `ldmatrix`, `stmatrix`, `mma` and WMMA, run a
warp at a time.

These are warp-collective: a warp runs one on its 32 lanes together, each lane giving
its operands and receiving its part of the result. A warp that reaches one with only
some of its lanes running (a lane returned, or left out by a guard or a branch) is an
error at the instruction's span, as is a CTA whose last warp is short of 32 lanes: PTX
leaves both undefined.

`ldmatrix` and `mma` hand out elements as `phobos.lower.fragments` says, the PTX ISA's
tables. `ldmatrix` reads one 16-byte row per address lane (`.x1` lanes 0-7, `.x2` 0-15,
`.x4` all), each 16-byte aligned inside shared memory; `stmatrix` is its inverse, writing
those rows from the registers (two lanes naming one row: the higher lane's bytes land).
`mma` computes `A @ B + C` in
float64 (the products of 16-bit floats exactly) or in integers, and rounds once to D's
type; the card's order and rounding of the sum are unspecified, at least single
precision for f32 accumulators and half precision for f16 ones. s32 sums wrap (there is
no `.satfinite`).

WMMA's fragments are opaque in PTX. The distribution here is this interpreter's own,
not NVIDIA's: lane l holds row l % 16 of A (in register r, columns 2r and 2r + 1, the
low half first), column l % 16 of B (rows 2r, 2r + 1), so every element of A and B sits
in two lanes; and element (l // 2, 8 (l % 2) + r) of C or D in register r:

    >>> WMMA_A.place(17, 3, 1), WMMA_B.place(17, 3, 1), WMMA_C.place(17, 3, 0)
    ((1, 7), (7, 1), (8, 11))

Only what a `wmma_load` -> `wmma_mma` -> `wmma_store` chain stores is observable; a
program that reads a fragment's registers any other way computes something else on
the card. Every lane of a warp must give the same address and stride (PTX's rule); the
address is 32-byte aligned and the stride, at least 16 elements, spans a multiple of 32
bytes. `wmma_mma` finds the two copies of each A and B element equal, or stops: they
differ only where a program changed the registers unevenly, which PTX forbids. The
layouts an `mma` names are not checked against its loads' (the registers do not carry
them): the interpreter computes the product of what was loaded either way.

For the race check an `ldmatrix` row counts as read by the lane giving its address, a
`stmatrix` row as written by it; a WMMA element as read or written by each lane holding it.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from phobos.interp.errors import InterpError
from phobos.interp.threads_memory import gather, scatter
from phobos.interp.threads_values import round_nearest
from phobos.lower import fragments, lir
from phobos.lower.fragments import Fragment

WARP = 32


def _wmma_a(lane: int, reg: int, part: int) -> tuple[int, int]:
    return lane % 16, 2 * reg + part


def _wmma_b(lane: int, reg: int, part: int) -> tuple[int, int]:
    return 2 * reg + part, lane % 16


def _wmma_c(lane: int, reg: int, part: int) -> tuple[int, int]:
    return lane // 2, 8 * (lane % 2) + reg


# This interpreter's WMMA m16n16k16 fragments (see the module's docstring).
WMMA_A = Fragment(16, 16, 8, 2, _wmma_a)
WMMA_B = Fragment(16, 16, 8, 2, _wmma_b)
WMMA_C = Fragment(16, 16, 8, 1, _wmma_c)
WMMA = {"a": (WMMA_A, "f16"), "b": (WMMA_B, "f16"), "c": (WMMA_C, "f32")}


@cache
def table(fragment: Fragment) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols), each (regs, parts, 32): where each lane's register part lives.

    >>> rows, cols = table(fragments.MMA[("m8n8k16", "s8", "s32")].c)
    >>> rows[1, 0, :8].tolist(), cols[1, 0, :8].tolist()
    ([0, 0, 0, 0, 1, 1, 1, 1], [1, 3, 5, 7, 1, 3, 5, 7])
    """
    rows = np.zeros((fragment.regs, fragment.parts, WARP), np.int64)
    cols = np.zeros_like(rows)
    for lane, reg, part, row, col in fragment.elements():
        rows[reg, part, lane], cols[reg, part, lane] = row, col
    return rows, cols


def unpack(words, elem: str, part: int, parts: int):
    """Element `part` of each 32-bit word, as float64 (f16, bf16, f32) or int64 (s8, s32).

    >>> w = np.array([0x3C00_C000, 0x80_7F_FF_01], np.uint32)
    >>> unpack(w[:1], "f16", 0, 2).tolist(), unpack(w[:1], "f16", 1, 2).tolist()
    ([-2.0], [1.0])
    >>> [unpack(w[1:], "s8", p, 4).tolist()[0] for p in range(4)]
    [1, -1, 127, -128]
    """
    words = np.asarray(words, np.uint32)
    if parts == 1:
        return words.view(np.float32 if elem == "f32" else np.int32).astype(
            np.float64 if elem == "f32" else np.int64
        )
    width = 32 // parts
    bits = (words >> np.uint32(width * part)) & np.uint32((1 << width) - 1)
    if elem == "f16":
        return bits.astype(np.uint16).view(np.float16).astype(np.float64)
    if elem == "bf16":
        return (bits << np.uint32(16)).view(np.float32).astype(np.float64)
    if elem == "s8":
        return bits.astype(np.uint8).view(np.int8).astype(np.int64)
    raise InterpError(f"no {elem} elements in a fragment register")


def pack_bits(values, elem: str):
    """Values of type `elem` (f16, bf16, f32, s32) as the unsigned bits of their width."""
    if elem in ("f16", "bf16"):
        r = round_nearest(values, elem)
        if elem == "bf16":
            return (r.astype(np.float32).view(np.uint32) >> np.uint32(16)).astype(np.uint32)
        return r.astype(np.float16).view(np.uint16).astype(np.uint32)
    if elem == "f32":
        return np.asarray(values, np.float64).astype(np.float32).view(np.uint32)
    return np.asarray(values, np.int64).astype(np.int32).view(np.uint32)  # s32 wraps


def _text(i: lir.Inst) -> str:
    return lir.print_item(i).strip()


class TensorOps:
    """The tensor-core half of a CTA's run (mixed into the CTA)."""

    def _warps(self, i: lir.Inst, mask) -> np.ndarray:
        """(warps, 32) thread ids of the warps running `i`; an error where one runs it on
        only some of its lanes."""
        n = -(-self.T // WARP)
        on = np.zeros(n * WARP, bool)
        on[: self.T] = mask
        on = on.reshape(n, WARP)
        warps = np.nonzero(on.any(axis=1))[0]
        for w in warps:
            if (w + 1) * WARP > self.T:
                raise InterpError(
                    f"`{_text(i)}` runs on whole warps, and warp {w} of the block's "
                    f"{self.T} threads has {self.T - w * WARP} lanes",
                    i.span,
                )
            if not on[w].all():
                lane = int(np.argmin(on[w]))
                thread = int(w * WARP + lane)
                why = (
                    "has returned"
                    if self.returned[thread]
                    else "does not run it (a guard or a branch left it out)"
                )
                raise InterpError(
                    f"`{_text(i)}` runs on whole warps, but warp {w} of block {self.ctaid} "
                    f"runs it on {int(on[w].sum())} of its 32 lanes: lane {lane} (thread "
                    f"{thread}) {why}",
                    i.span,
                )
        return warps[:, None] * WARP + np.arange(WARP)

    def _words(self, reg: lir.Value, tid, t: str = "b32"):
        return np.asarray(self.value(reg, t))[tid]

    def _put(self, dest: lir.Reg, tid, bits, mask) -> None:
        """Write (warps, 32) 32-bit `bits` into `dest` for the threads of `tid`."""
        full = np.zeros(self.T, np.uint32)
        full[tid] = bits
        self.write(dest, full, "b32", mask)

    # -- fragments -------------------------------------------------------------

    def _fragment(self, fragment: Fragment, regs, tid, elem: str):
        """The matrix (warps, rows, cols) the registers `regs` of the warps hold."""
        rows, cols = table(fragment)
        integer = elem in ("s8", "s32")
        out = np.zeros((tid.shape[0], fragment.rows, fragment.cols))
        out = out.astype(np.int64) if integer else out
        for r, reg in enumerate(regs):
            words = self._words(reg, tid, "b32")
            for part in range(fragment.parts):
                out[:, rows[r, part], cols[r, part]] = unpack(words, elem, part, fragment.parts)
        return out

    def _set_fragment(self, fragment: Fragment, dests, tid, matrix, elem: str, mask) -> None:
        rows, cols = table(fragment)
        for r, dest in enumerate(dests):
            bits = np.zeros(tid.shape, np.uint32)
            for part in range(fragment.parts):
                piece = pack_bits(matrix[:, rows[r, part], cols[r, part]], elem)
                bits |= piece << np.uint32((32 // fragment.parts) * part)
            self._put(dest, tid, bits, mask)

    # -- ldmatrix --------------------------------------------------------------

    def do_ldmatrix(self, i: lir.Inst, mask) -> None:
        n = len(i.dests)
        if n not in (1, 2, 4):
            raise InterpError(f"`ldmatrix` loads 1, 2 or 4 matrices, not {n}", i.span)
        trans = bool(i.attr("trans", 0))
        tid = self._warps(i, mask)
        rows, addr = self._rows(i, tid, n)
        if self.recorder is not None:
            self.recorder.access("read", i, rows.reshape(-1), addr.reshape(-1), 16)
        raw = gather(self.smem, addr.reshape(-1), 16)
        halves = np.ascontiguousarray(raw).view(np.uint16).reshape(tid.shape[0], n, 8, 8)
        for matrix, dest in enumerate(i.dests):
            bits = np.zeros(tid.shape, np.uint32)
            for part in (0, 1):
                r, c = _ldmatrix_table(part, trans)
                bits |= halves[:, matrix, r, c].astype(np.uint32) << np.uint32(16 * part)
            self._put(dest, tid, bits, mask)

    def _rows(self, i: lir.Inst, tid, n: int) -> tuple[np.ndarray, np.ndarray]:
        """(lanes, addresses), each (warps, 8n): the row addresses of an ld/stmatrix of `n`
        matrices, lane 8j + r naming row r of matrix j, checked."""
        rows = tid[:, : 8 * n]
        addr = self._words(i.srcs[0], tid, "u32")[:, : 8 * n].astype(np.int64)
        for bad, says in (
            (addr % 16 != 0, "gives row address {a}, not 16-byte aligned"),
            (addr + 16 > self.smem.size, "gives row address {a}, past the {s} bytes of shared memory"),
        ):  # fmt: skip
            if bad.any():
                w, lane = np.argwhere(bad)[0]
                raise InterpError(
                    f"`{_text(i)}`: thread {int(rows[w, lane])} of block {self.ctaid} "
                    + says.format(a=int(addr[w, lane]), s=self.smem.size),
                    i.span,
                )
        return rows, addr

    def do_stmatrix(self, i: lir.Inst, mask) -> None:
        n = len(i.srcs) - 1
        if n not in (1, 2, 4):
            raise InterpError(f"`stmatrix` stores 1, 2 or 4 matrices, not {n}", i.span)
        trans = bool(i.attr("trans", 0))
        tid = self._warps(i, mask)
        rows, addr = self._rows(i, tid, n)
        halves = np.zeros((tid.shape[0], n, 8, 8), np.uint16)
        for matrix, src in enumerate(i.srcs[1:]):
            words = self._words(src, tid, "b32")
            for part in (0, 1):
                r, c = _ldmatrix_table(part, trans)
                halves[:, matrix, r, c] = (words >> np.uint32(16 * part)).astype(np.uint16)
        if self.recorder is not None:
            self.recorder.access("write", i, rows.reshape(-1), addr.reshape(-1), 16)
        raw = halves.reshape(-1, 8).view(np.uint8)  # one 16-byte row a lane, lanes in order
        scatter(self.smem, addr.reshape(-1), raw)

    # -- mma -------------------------------------------------------------------

    def do_mma(self, i: lir.Inst, mask) -> None:
        key = (i.attr("shape"), i.attr("from_type"), i.attr("type"))
        form = fragments.MMA.get(key)
        if form is None:
            raise InterpError(f"`mma` has no form {key[0]} {key[1]} -> {key[2]}", i.span)
        tid = self._warps(i, mask)
        na, nb = form.a.regs, form.b.regs
        a = self._fragment(form.a, i.srcs[:na], tid, form.ab)
        b = self._fragment(form.b, i.srcs[na : na + nb], tid, form.ab)
        c = self._fragment(form.c, i.srcs[na + nb :], tid, form.acc)
        d = np.matmul(a, b) + c
        self._set_fragment(form.c, i.dests, tid, d, form.acc, mask)

    # -- WMMA ------------------------------------------------------------------

    def _wmma_places(self, i: lir.Inst, tid, fragment: Fragment, width: int, addr_at: int):
        """(space, byte addresses (warps, regs, parts, 32)) of a wmma load's or store's
        elements, after the checks PTX's rules ask for."""
        space, layout = i.attr("space"), i.attr("layout")
        addr_reg = i.srcs[0]
        addr = self._words(addr_reg, tid, "u32" if space == "shared" else "u64").astype(np.int64)
        if len(i.srcs) > addr_at:
            stride = self._words(i.srcs[addr_at], tid, "u32").astype(np.int64)
        else:
            stride = np.full(tid.shape, 16, np.int64)
        for what, value in (("address", addr), ("stride", stride)):
            uneven = (value != value[:, :1]).any(axis=1)
            if uneven.any():
                w = int(np.argmax(uneven))
                lane = int(np.argmax(value[w] != value[w, 0]))
                raise InterpError(
                    f"`{_text(i)}`: every lane of a warp gives the same {what}, but thread "
                    f"{int(tid[w, lane])} of block {self.ctaid} gives {int(value[w, lane])} "
                    f"and thread {int(tid[w, 0])} {int(value[w, 0])}",
                    i.span,
                )
        base, ld = addr[:, 0], stride[:, 0]
        for bad, says in (
            (base % 32 != 0, "address {a:#x} is not 32-byte aligned"),
            (ld < 16, "stride {ld} is below the 16 elements of a row"),
            ((ld * width) % 32 != 0, "stride {ld} does not span a multiple of 32 bytes"),
        ):
            if bad.any():
                w = int(np.argmax(bad))
                facts = says.format(a=int(base[w]), ld=int(ld[w]))
                raise InterpError(f"`{_text(i)}`: warp {int(tid[w, 0]) // WARP}'s {facts}", i.span)
        rows, cols = table(fragment)
        # The element (row, col) of a row-major matrix is row * stride + col elements on.
        major, minor = (rows, cols) if layout == "row" else (cols, rows)
        offset = major[None] * ld[:, None, None, None] + minor[None]
        return space, base[:, None, None, None] + offset * width

    def _memory(self, i: lir.Inst, space: str, threads, addresses, width: int, write=None):
        """Read (or, given `write`, write) `width` bytes at each address; an access outside
        memory stops the run, naming the thread."""
        threads, addresses = threads.reshape(-1), addresses.reshape(-1)
        if space == "shared":
            past = addresses + width > self.smem.size
            if past.any():
                k = int(np.argmax(past))
                raise InterpError(
                    f"`{_text(i)}`: thread {int(threads[k])} of block {self.ctaid} touches "
                    f"shared byte {int(addresses[k])}, past the {self.smem.size} bytes of "
                    "shared memory",
                    i.span,
                )
            if self.recorder is not None:
                kind = "read" if write is None else "write"
                self.recorder.access(kind, i, threads, addresses, width)
            if write is None:
                return gather(self.smem, addresses, width)
            scatter(self.smem, addresses, write.reshape(-1, width))
            return None
        memory = self.launch.memory
        index, offset, ok = memory.locate(addresses.astype(np.uint64), width)
        if not ok.all():
            k = int(np.argmax(~ok))
            raise InterpError(
                f"`{_text(i)}`: thread {int(threads[k])} of block {self.ctaid} touches "
                f"{memory.describe(int(addresses[k]), width)}",
                i.span,
            )
        out = np.zeros((addresses.size, width), np.uint8)
        for b in np.unique(index).tolist():
            picked = index == b
            data = memory.buffers[b].data
            if write is None:
                out[picked] = gather(data, offset[picked], width)
            else:
                scatter(data, offset[picked], write.reshape(-1, width)[picked])
        return out if write is None else None

    def do_wmma_load(self, i: lir.Inst, mask) -> None:
        matrix = i.attr("matrix")
        if matrix not in WMMA:
            raise InterpError(f"`wmma_load` loads matrix a, b or c, not {matrix!r}", i.span)
        fragment, elem = WMMA[matrix]
        width = lir.WIDTH[elem]
        tid = self._warps(i, mask)
        space, addresses = self._wmma_places(i, tid, fragment, width, 1)
        threads = np.broadcast_to(tid[:, None, None, :], addresses.shape)
        raw = self._memory(i, space, threads, addresses, width)
        values = raw.view(np.uint16 if width == 2 else np.uint32).reshape(addresses.shape)
        for r, dest in enumerate(i.dests):
            bits = np.zeros(tid.shape, np.uint32)
            for part in range(fragment.parts):
                bits |= values[:, r, part].astype(np.uint32) << np.uint32(16 * part)
            self._put(dest, tid, bits, mask)

    def _wmma_operand(self, i: lir.Inst, fragment: Fragment, regs, tid, name: str):
        """A or B from their registers, each element's two copies found equal."""
        rows, cols = table(fragment)
        bits = np.zeros((tid.shape[0], fragment.regs, fragment.parts, WARP), np.uint32)
        for r, reg in enumerate(regs):
            words = self._words(reg, tid, "b32")
            for part in range(fragment.parts):
                bits[:, r, part] = (words >> np.uint32(16 * part)) & np.uint32(0xFFFF)
        matrix = np.zeros((tid.shape[0], fragment.rows, fragment.cols), np.uint32)
        matrix[:, rows, cols] = bits
        differ = matrix[:, rows, cols] != bits
        if differ.any():
            w, r, part, lane = (int(x) for x in np.argwhere(differ)[0])
            raise InterpError(
                f"`{_text(i)}`: {name}'s element ({int(rows[r, part, lane])}, "
                f"{int(cols[r, part, lane])}) differs between the two lanes of warp "
                f"{int(tid[w, 0]) // WARP} holding it: its registers were changed unevenly",
                i.span,
            )
        return matrix.astype(np.uint16).view(np.float16).astype(np.float64)

    def do_wmma_mma(self, i: lir.Inst, mask) -> None:
        tid = self._warps(i, mask)
        a = self._wmma_operand(i, WMMA_A, i.srcs[:8], tid, "A")
        b = self._wmma_operand(i, WMMA_B, i.srcs[8:16], tid, "B")
        c = self._fragment(WMMA_C, i.srcs[16:24], tid, "f32")
        self._set_fragment(WMMA_C, i.dests, tid, np.matmul(a, b) + c, "f32", mask)

    def do_wmma_store(self, i: lir.Inst, mask) -> None:
        tid = self._warps(i, mask)
        space, addresses = self._wmma_places(i, tid, WMMA_C, 4, 9)
        words = np.stack([self._words(reg, tid, "b32") for reg in i.srcs[1:9]], axis=1)
        threads = np.broadcast_to(tid[:, None, None, :], addresses.shape)
        raw = np.ascontiguousarray(words[:, :, None, :]).view(np.uint8)
        self._memory(i, space, threads, addresses, 4, write=raw.reshape(-1, 4))


@cache
def _ldmatrix_table(part: int, trans: bool) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols) over the 32 lanes of the matrix element each lane's `part` receives."""
    place = [fragments.ldmatrix_m8n8(lane, part, trans) for lane in range(WARP)]
    rows, cols = zip(*place, strict=True)
    return np.array(rows), np.array(cols)
