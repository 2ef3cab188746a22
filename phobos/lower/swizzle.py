"""The XOR swizzle of a shared tile's 16-byte chunks: how a staging tile read by
ldmatrix stays free of bank conflicts without padding its rows.

The 32 banks serve 128 bytes a wavefront, eight 16-byte chunks. An ldmatrix matrix is
eight rows, 16 bytes each at one column, and a 16-byte cp.async writes one chunk: with
rows a power of two of bytes apart, the eight rows of a matrix would meet in one chunk
of the banks (an 8-way conflict). The swizzle moves chunk `c` of row `r` to chunk
`c ^ (line(r) % n)` of its own row, `line(r)` the row's 128-byte line (rows of 128
bytes or more: the row itself) and `n` the chunks a row has in one line (at most 8),
so any eight rows that follow one another, at one column, fall in eight distinct
chunks. It is a function of the byte offset in the tile alone (bits 4-6 XOR-ed with
the bits that count lines), which is why every reader and every writer agrees on it
with no table, and why the tile must start on a 128-byte line (`LINE`): the XOR stays
inside the line.

    >>> [physical(r * 128, 128) % 128 // 16 for r in range(8)]  # chunk 0 of rows 0-7
    [0, 1, 2, 3, 4, 5, 6, 7]
    >>> sorted(physical(r * 64 + 16, 64) % 128 // 16 for r in range(8))
    [0, 1, 2, 3, 4, 5, 6, 7]
    >>> physical(physical(1234 * 16, 512), 512) == 1234 * 16  # its own inverse
    True
"""

from __future__ import annotations

from phobos.lower.lir import Imm, Reg, Value

LINE = 128  # bytes: the banks' wavefront, and the alignment of a swizzled tile
CHUNK = 16  # bytes: the unit that moves (an ldmatrix row, a 16-byte cp.async)


def swizzles(row: int) -> bool:
    """Whether rows of `row` bytes take the swizzle: a power of two of 32 bytes or more
    (two chunks: fewer leave nothing to permute)."""
    return row >= 2 * CHUNK and row & (row - 1) == 0


def shift_mask(row: int) -> tuple[int, int]:
    """(s, m): the swizzle of rows of `row` bytes XORs an offset with `(off >> s) & m`.

    >>> shift_mask(128), shift_mask(512), shift_mask(64)
    ((3, 112), (5, 112), (3, 48))
    """
    lines = max(row, LINE).bit_length() - 1  # the bit that counts a line: 7, or a row's
    chunks = min(row // CHUNK, LINE // CHUNK)  # chunks of a row within one line
    return lines - 4, (chunks - 1) * CHUNK


def period(row: int) -> int:
    """Bytes an offset may move by and keep its swizzle: `physical(off + k * period) ==
    physical(off) + k * period`.

    >>> period(128), period(512), period(64)
    (1024, 4096, 512)
    """
    s, m = shift_mask(row)
    return 1 << (s + 4 + (m >> 4).bit_length())


def physical(off: int, row: int, panels: int | None = None) -> int:
    """Where byte `off` of a tile of rows of `row` bytes lies once swizzled; with
    `panels` (the tile's row count), rows longer than a line are cut into panels of one
    line each (`panel`), then swizzled as rows of 128 bytes.

    >>> physical(128, 256, panels=8), physical(256, 256, panels=8)  # row 0's 2nd line, row 1
    (1024, 144)
    """
    if panels:
        off, row = panel(off, row, panels), min(row, LINE)
    s, m = shift_mask(row)
    return off ^ ((off >> s) & m)


def panel(off: int, row: int, rows: int) -> int:
    """Byte `off` of a row-major tile of `rows` rows of `row` bytes, stored as panels of
    128-byte columns (`row // 128` of them, each `rows` lines), the form a wgmma reads
    a wide operand in (MN-major B of 64 halves a panel; K-major of 64 k)."""
    if row <= LINE:
        return off
    r, col = divmod(off, row)
    return (col // LINE) * rows * LINE + r * LINE + col % LINE


def emit(b, off: Value, row: int, panels: int | None = None) -> Value:
    """`physical(off, row, panels)` in u32 lir (`off` an offset from the tile's start)."""
    if isinstance(off, Imm):
        return Imm(physical(off.value, row, panels), "u32")
    if panels and row > LINE:
        shift = row.bit_length() - 1
        col = b.op("and", "b32", off, Imm(row - LINE, "u32"), dest_type="u32")  # the line
        base = b.op("shl", "b32", col, Imm((panels * LINE).bit_length() - 1 - 7, "u32"),
                    dest_type="u32") if panels & (panels - 1) == 0 else \
            b.op("mul", "u32", b.op("shr", "u32", col, Imm(7, "u32")), Imm(panels * LINE, "u32"))  # fmt: skip
        r = b.op("shr", "u32", off, Imm(shift, "u32"))
        line = b.op("shl", "b32", r, Imm(7, "u32"), dest_type="u32")
        within = b.op("and", "b32", off, Imm(LINE - 1, "u32"), dest_type="u32")
        off = b.op("add", "u32", b.op("add", "u32", base, line), within)
        row = LINE
    s, m = shift_mask(row)
    lines = b.op("shr", "u32", off, Imm(s, "u32"))
    term = b.op("and", "b32", lines, Imm(m, "u32"), dest_type="u32")
    return b.op("xor", "b32", off, term, dest_type="u32", hint="s")


def term(b, off: Reg, row: int) -> Value:
    """The XOR `physical` applies at `off`: the same for every offset of `off`'s row
    (and every row a multiple of eight lines away), so a lane computes it once."""
    s, m = shift_mask(row)
    lines = b.op("shr", "u32", off, Imm(s, "u32"))
    return b.op("and", "b32", lines, Imm(m, "u32"), dest_type="u32")


__all__ = ["CHUNK", "LINE", "emit", "panel", "period", "physical", "shift_mask", "swizzles",
           "term"]  # fmt: skip
