"""Which lane of a warp holds which matrix element: the register fragments of `mma.sync`
and `ldmatrix`, as the PTX ISA gives them ("Matrix Fragments for mma.m16n8k16 with
floating point type", "... for mma.m16n8k32", "... for mma.m8n8k16", "Warp-level matrix
load instruction: ldmatrix").

This is the one table: the threads interpreter runs `mma` and `ldmatrix` by it, and the
lowering places tiles in registers by it. Every function maps `(lane, reg, part)` to the
element's `(row, col)` in its matrix: `lane` is 0-31, `reg` the register's place in the
instruction's vector of registers, `part` the element's place inside that 32-bit register,
0 in the low bits (0-1 for 16-bit elements, 0-3 for 8-bit ones, always 0 for 32-bit ones).
The ISA numbers a lane's elements a0, a1, ... from the low bits of the first register
on; `part + reg * parts` is that number. Its two names recur: `g = lane >> 2` (groupID)
and `t = lane % 4` (threadID_in_group).

A is M x K (`.row`: its rows are the M), B is K x N (`.col`), C and D are M x N:

    >>> [a_m16n8k16(lane, 0, 0) for lane in (0, 1, 4, 31)]
    [(0, 0), (0, 2), (1, 0), (7, 6)]
    >>> MMA[("m16n8k16", "f16", "f32")].a.regs, MMA[("m8n8k16", "s8", "s32")].c.regs
    (4, 2)

WMMA fragments are not here: PTX leaves their distribution unspecified, so nothing the
lowering writes may depend on one (the interpreter keeps its own, `phobos.interp.threads_tensor`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

Place = Callable[[int, int, int], tuple[int, int]]

# ---------------------------------------------------------------------------
# mma.m16n8k16, f16 or bf16 A and B (two elements a register)


def a_m16n8k16(lane: int, reg: int, part: int) -> tuple[int, int]:
    """A (16 x 16) of m16n8k16: four registers; a0-a1 row g, a2-a3 row g+8, a4-a7 the same
    eight columns on.

    >>> [a_m16n8k16(5, reg, 1) for reg in range(4)]
    [(1, 3), (9, 3), (1, 11), (9, 11)]
    """
    i = 2 * reg + part
    g, t = lane >> 2, lane % 4
    row = g if i in (0, 1, 4, 5) else g + 8
    col = 2 * t + (i & 1) + (8 if i >= 4 else 0)
    return row, col


def b_m16n8k16(lane: int, reg: int, part: int) -> tuple[int, int]:
    """B (16 x 8) of m16n8k16: two registers, each two consecutive rows of column g.

    >>> [b_m16n8k16(5, reg, part) for reg in range(2) for part in range(2)]
    [(2, 1), (3, 1), (10, 1), (11, 1)]
    """
    i = 2 * reg + part
    g, t = lane >> 2, lane % 4
    return 2 * t + (i & 1) + (8 if i >= 2 else 0), g


def c_m16n8k16(lane: int, reg: int, part: int = 0) -> tuple[int, int]:
    """C and D (16 x 8) of m16n8k16 with f32 elements: four registers, c0-c1 in row g,
    c2-c3 in row g+8. (The same table serves m16n8k32's s32 accumulators.)

    >>> [c_m16n8k16(5, reg) for reg in range(4)]
    [(1, 2), (1, 3), (9, 2), (9, 3)]
    """
    if part:
        raise ValueError("a 32-bit accumulator register holds one element")
    g, t = lane >> 2, lane % 4
    return g + (8 if reg >= 2 else 0), 2 * t + (reg & 1)


def c_m16n8k16_f16(lane: int, reg: int, part: int) -> tuple[int, int]:
    """C and D (16 x 8) of m16n8k16 with f16 elements: two f16x2 registers holding c0-c1
    (row g) and c2-c3 (row g+8), the elements of `c_m16n8k16` two to a register.

    >>> [c_m16n8k16_f16(5, reg, part) for reg in range(2) for part in range(2)]
    [(1, 2), (1, 3), (9, 2), (9, 3)]
    """
    return c_m16n8k16(lane, 2 * reg + part)


# ---------------------------------------------------------------------------
# mma.m16n8k32, s8 A and B (four elements a register)


def a_m16n8k32(lane: int, reg: int, part: int) -> tuple[int, int]:
    """A (16 x 32) of m16n8k32: four registers of four bytes; a0-a3 row g, a4-a7 row g+8,
    a8-a15 the same sixteen columns on.

    >>> [a_m16n8k32(5, reg, 3) for reg in range(4)]
    [(1, 7), (9, 7), (1, 23), (9, 23)]
    """
    i = 4 * reg + part
    g, t = lane >> 2, lane % 4
    row = g if i < 4 or 8 <= i < 12 else g + 8
    col = 4 * t + (i & 3) + (16 if i >= 8 else 0)
    return row, col


def b_m16n8k32(lane: int, reg: int, part: int) -> tuple[int, int]:
    """B (32 x 8) of m16n8k32: two registers, each four consecutive rows of column g.

    >>> [b_m16n8k32(5, reg, 0) for reg in range(2)]
    [(4, 1), (20, 1)]
    """
    i = 4 * reg + part
    g, t = lane >> 2, lane % 4
    return 4 * t + (i & 3) + (16 if i >= 4 else 0), g


c_m16n8k32 = c_m16n8k16  # the ISA gives m16n8k32's accumulators the m16n8k16 layout


# ---------------------------------------------------------------------------
# mma.m8n8k16, s8 A and B


def a_m8n8k16(lane: int, reg: int, part: int) -> tuple[int, int]:
    """A (8 x 16) of m8n8k16: one register, four consecutive columns of row g.

    >>> a_m8n8k16(5, 0, 0), a_m8n8k16(5, 0, 3)
    ((1, 4), (1, 7))
    """
    if reg:
        raise ValueError("m8n8k16's A is one register")
    return lane >> 2, 4 * (lane % 4) + part


def b_m8n8k16(lane: int, reg: int, part: int) -> tuple[int, int]:
    """B (16 x 8) of m8n8k16: one register, four consecutive rows of column g.

    >>> b_m8n8k16(5, 0, 2)
    (6, 1)
    """
    if reg:
        raise ValueError("m8n8k16's B is one register")
    return 4 * (lane % 4) + part, lane >> 2


def c_m8n8k16(lane: int, reg: int, part: int = 0) -> tuple[int, int]:
    """C and D (8 x 8) of m8n8k16: two s32 registers, two consecutive columns of row g.

    >>> c_m8n8k16(5, 0), c_m8n8k16(5, 1)
    ((1, 2), (1, 3))
    """
    if part:
        raise ValueError("a 32-bit accumulator register holds one element")
    return lane >> 2, 2 * (lane % 4) + reg


# ---------------------------------------------------------------------------
# ldmatrix.m8n8.b16: each matrix is eight rows of sixteen bytes, each row's address
# supplied by one lane, its elements handed out four lanes a row.


def ldmatrix_m8n8(lane: int, part: int, trans: bool = False) -> tuple[int, int]:
    """The (row, col) of the 8 x 8 matrix of 16-bit elements (a row is one lane's
    address) whose element lands in `part` of `lane`'s register; every register of an
    `.x2` or `.x4` load is laid out alike, register i holding matrix i. With `.trans`
    the lane receives a column pair instead of a row pair.

    >>> ldmatrix_m8n8(5, 0), ldmatrix_m8n8(5, 1), ldmatrix_m8n8(5, 1, trans=True)
    ((1, 2), (1, 3), (3, 1))
    """
    row, col = lane >> 2, 2 * (lane % 4) + part
    return (col, row) if trans else (row, col)


def ldmatrix_row(lane: int) -> tuple[int, int]:
    """(matrix, row) whose address `lane` supplies: lanes 0-7 give matrix 0's rows, 8-15
    matrix 1's, and so on (an `.x1` load reads lanes 0-7 only, `.x2` lanes 0-15).

    >>> ldmatrix_row(0), ldmatrix_row(13), ldmatrix_row(31)
    ((0, 0), (1, 5), (3, 7))
    """
    return lane >> 3, lane % 8


# ---------------------------------------------------------------------------
# The table of shapes


@dataclass(frozen=True)
class Fragment:
    """One operand's registers: `regs` registers of `parts` elements each, the element
    at `(lane, reg, part)` being `place(lane, reg, part)` of a `rows` x `cols` matrix."""

    rows: int
    cols: int
    regs: int
    parts: int
    place: Place

    def elements(self):
        """Every (lane, reg, part, row, col) of the fragment.

        >>> len(list(MMA[("m16n8k16", "f16", "f32")].a.elements()))
        256
        """
        for lane in range(32):
            for reg in range(self.regs):
                for part in range(self.parts):
                    yield (lane, reg, part, *self.place(lane, reg, part))


@dataclass(frozen=True)
class Mma:
    """One `mma.sync` form: `D (m x n) = A (m x k) @ B (k x n) + C`, A and B of `ab`
    elements, C and D of `acc` ones."""

    shape: str
    ab: str
    acc: str
    a: Fragment
    b: Fragment
    c: Fragment


def _m16n8k16(ab: str, acc: str) -> Mma:
    a, b = Fragment(16, 16, 4, 2, a_m16n8k16), Fragment(16, 8, 2, 2, b_m16n8k16)
    if acc == "f16":
        return Mma("m16n8k16", ab, acc, a, b, Fragment(16, 8, 2, 2, c_m16n8k16_f16))
    return Mma("m16n8k16", ab, acc, a, b, Fragment(16, 8, 4, 1, c_m16n8k16))


# (shape, A and B element type, accumulator type) -> the form.
MMA: dict[tuple[str, str, str], Mma] = {
    ("m16n8k16", "f16", "f32"): _m16n8k16("f16", "f32"),
    ("m16n8k16", "bf16", "f32"): _m16n8k16("bf16", "f32"),
    ("m16n8k16", "f16", "f16"): _m16n8k16("f16", "f16"),
    ("m16n8k32", "s8", "s32"): Mma(
        "m16n8k32",
        "s8",
        "s32",
        Fragment(16, 32, 4, 4, a_m16n8k32),
        Fragment(32, 8, 2, 4, b_m16n8k32),
        Fragment(16, 8, 4, 1, c_m16n8k32),
    ),
    ("m8n8k16", "s8", "s32"): Mma(
        "m8n8k16",
        "s8",
        "s32",
        Fragment(8, 16, 1, 4, a_m8n8k16),
        Fragment(16, 8, 1, 4, b_m8n8k16),
        Fragment(8, 8, 2, 1, c_m8n8k16),
    ),
}


def ldmatrix_source(
    fragment: Fragment, matrix: int, row: int, col: int, trans: bool = False
) -> tuple[int, int]:
    """The operand (row, col) that element `col` of memory row `row` of matrix `matrix`
    becomes when one `ldmatrix` of `fragment.regs` matrices fills `fragment`, register i
    from matrix i: `ldmatrix_m8n8` undone, then `fragment.place`. A memory row is 16
    bytes: `col` counts its 16-bit elements (0-7) for a 16-bit fragment, its bytes (0-15)
    for an 8-bit one, which only the plain form fills (`.trans` moves 16-bit elements).

    A row-major B (k x n) of m16n8k16 loaded with `.trans`: memory row r of matrix 1
    holds B[8 + r, 0:8].

    >>> b = MMA[("m16n8k16", "f16", "f32")].b
    >>> [ldmatrix_source(b, 1, 3, col, trans=True) for col in (0, 1, 7)]
    [(11, 0), (11, 1), (11, 7)]
    """
    if not 0 <= matrix < fragment.regs:
        raise ValueError(f"a fragment of {fragment.regs} registers has no matrix {matrix}")
    if fragment.parts == 2:
        if trans:  # element (row, col) lands in part row % 2 of lane 4 col + row // 2
            return fragment.place(4 * col + row // 2, matrix, row % 2)
        return fragment.place(4 * row + col // 2, matrix, col % 2)
    if fragment.parts == 4 and not trans:  # a lane's word is four bytes of the row
        return fragment.place(4 * row + col // 4, matrix, col % 4)
    raise ValueError("`.trans` moves 16-bit elements: it does not fill an 8-bit fragment")


def ldmatrix_address(fragment: Fragment, lane: int, trans: bool = False) -> tuple[int, int]:
    """The operand (row, col) at which `lane`'s address must point when one `ldmatrix`
    fills `fragment`: the first element of the memory row it supplies
    (`ldmatrix_source` of that row's element 0).

    A of m16n8k16 from a row-major tile: lane l points at row l % 16, column 8 (l // 16);
    its B (k x n) from a row-major tile takes `.trans`, lane l pointing at row l:

    >>> a = MMA[("m16n8k16", "f16", "f32")].a
    >>> [ldmatrix_address(a, lane) for lane in (0, 7, 8, 16, 31)]
    [(0, 0), (7, 0), (8, 0), (0, 8), (15, 8)]
    >>> b = MMA[("m16n8k16", "f16", "f32")].b
    >>> [ldmatrix_address(b, lane, trans=True) for lane in (0, 7, 8, 15)]
    [(0, 0), (7, 0), (8, 0), (15, 0)]
    """
    matrix, row = ldmatrix_row(lane)
    return ldmatrix_source(fragment, matrix, row, 0, trans)
