"""wgmma's operands and results as the PTX ISA lays them out ("Asynchronous Warpgroup
Level Matrix Multiply-Accumulate"): the shared-memory matrix descriptor, where each
element of an operand a descriptor names lies, and which register of which thread of
the warpgroup holds each element of the accumulator and of a register A operand.

A warpgroup is four consecutive warps (128 threads, the first a multiple of 4). One
`wgmma.mma_async.m64nNk16` multiplies a 64 x 16 A by a 16 x N B into a 64 x N
accumulator spread over the warpgroup's registers, N / 2 f32 registers a thread.

**Descriptors.** A 64-bit word: bits 0-13 the start address >> 4 (a shared::cta byte
address, 16-byte aligned, below 256 KB), 16-29 the leading byte offset (LBO) >> 4,
32-45 the stride byte offset (SBO) >> 4, 49-51 a base offset (0 here: the swizzle is
taken on absolute addresses), 62-63 the swizzle (0 none, 1 128-byte, 2 64-byte, 3
32-byte).

**Layouts.** An operand is K-major (its K elements contiguous: A of `[M, K]`, B of
`dot_t`'s `[N, K]`) or MN-major (B of `dot`'s `[K, N]`, which the instruction reads
transposed). With T = 16 bytes of elements (8 f16) and W the swizzle's row of bytes
(16 with no swizzle, else 32, 64 or 128), the ISA's canonical layouts are:

| major | swizzle | MN index                                   | K index                          |
|-------|---------|--------------------------------------------|----------------------------------|
| K     | none    | 8 rows 16 bytes apart, then groups of 8 SBO apart | T contiguous, then LBO apart |
| K     | W       | 8 rows W bytes apart, then groups of 8 SBO apart  | contiguous along the W-byte row |
| MN    | none    | T contiguous, then SBO apart               | 8 rows 16 bytes apart, then LBO apart |
| MN    | W       | W bytes contiguous, then LBO apart         | 8 rows W bytes apart, then SBO apart |

and a swizzled address has its bits 4-6 (128-byte), 4-5 (64) or 4 (32) XOR-ed with
bits 7-9, 7-8 or 7 (`phobos.lower.swizzle.physical` over rows of W bytes, on absolute
addresses). A K-major tile of 128-byte rows, 1024-byte aligned, is what a 128-byte
swizzled TMA load writes; a k step of 16 halves moves the start by 32 bytes.

    >>> d = Descriptor(start=1024, lbo=16, sbo=1024, swizzle="128B")
    >>> hex(d.encode()), Descriptor.decode(d.encode()) == d
    ('0x4000004000010040', True)
    >>> [address(d, "K", mn, 0, 2) - 1024 for mn in range(3)]  # rows 128 bytes apart, swizzled
    [0, 144, 288]
    >>> acc_place(thread=37, reg=6, n=64)  # warp 1, lane 5: rows 16 + 1 + 8, column 8 + 2
    (25, 10)
"""

from __future__ import annotations

from dataclasses import dataclass

SWIZZLE_CODE = {"none": 0, "128B": 1, "64B": 2, "32B": 3}
SWIZZLE_NAME = {code: name for name, code in SWIZZLE_CODE.items()}
ROW = {"none": 16, "32B": 32, "64B": 64, "128B": 128}  # bytes of a swizzle atom's row
WARPGROUP = 128
SHAPES_N = range(8, 257, 8)  # m64nNk16: N from 8 to 256 in steps of 8


@dataclass(frozen=True)
class Descriptor:
    """A shared-memory matrix descriptor's fields, in bytes."""

    start: int
    lbo: int
    sbo: int
    swizzle: str = "128B"
    base_offset: int = 0

    def encode(self) -> int:
        """The 64-bit word; ValueError for a field the word cannot hold."""
        for name, v in (("start", self.start), ("lbo", self.lbo), ("sbo", self.sbo)):
            if v % 16 or not 0 <= v >> 4 < 1 << 14:
                raise ValueError(f"a descriptor's {name} is a multiple of 16 below 2^18, not {v}")
        if self.swizzle not in SWIZZLE_CODE or not 0 <= self.base_offset < 8:
            raise ValueError(f"no descriptor swizzles {self.swizzle!r} at base {self.base_offset}")
        return ((self.start >> 4) | (self.lbo >> 4) << 16 | (self.sbo >> 4) << 32
                | self.base_offset << 49 | SWIZZLE_CODE[self.swizzle] << 62)  # fmt: skip

    @classmethod
    def decode(cls, word: int) -> Descriptor:
        return cls(
            start=(word & 0x3FFF) << 4,
            lbo=(word >> 16 & 0x3FFF) << 4,
            sbo=(word >> 32 & 0x3FFF) << 4,
            swizzle=SWIZZLE_NAME[word >> 62 & 3],
            base_offset=word >> 49 & 7,
        )


def swizzled(addr: int, swizzle: str) -> int:
    """Where the byte at absolute shared address `addr` of a `swizzle` layout lies.

    >>> swizzled(128 + 16, "128B"), swizzled(128 + 16, "64B"), swizzled(128 + 16, "32B")
    (128, 128, 128)
    """
    mask = {"none": 0, "32B": 1, "64B": 3, "128B": 7}[swizzle]
    return addr ^ ((addr >> 7) & mask) << 4


def offset(d: Descriptor, major: str, mn: int, k: int, size: int) -> int:
    """The byte offset from `d.start`, before the swizzle, of element (mn, k) of the
    operand `d` names (`size` bytes an element, `major` "K" or "MN")."""
    t = 16 // size  # elements in 16 bytes
    w = ROW[d.swizzle]
    if major == "K":
        rows = (mn % 8) * w + (mn // 8) * d.sbo
        if d.swizzle == "none":
            return rows + (k % t) * size + (k // t) * d.lbo
        return rows + k * size
    if major != "MN":
        raise ValueError(f"an operand is K-major or MN-major, not {major!r}")
    per_row = w // size  # MN elements in one row of the atom
    if d.swizzle == "none":
        return (mn % t) * size + (mn // t) * d.sbo + (k % 8) * 16 + (k // 8) * d.lbo
    return (mn % per_row) * size + (mn // per_row) * d.lbo + (k % 8) * w + (k // 8) * d.sbo


def address(d: Descriptor, major: str, mn: int, k: int, size: int) -> int:
    """The absolute shared address of element (mn, k), swizzled."""
    return swizzled(d.start + offset(d, major, mn, k, size), d.swizzle)


def acc_place(thread: int, reg: int, n: int) -> tuple[int, int]:
    """(row, col) of register `reg` (0 to N/2 - 1) of warpgroup thread `thread` in an
    m64nNk16 f32 accumulator: warp w holds rows 16w to 16w + 15, as an mma.sync C
    fragment a column block of 8."""
    if not 0 <= reg < n // 2:
        raise ValueError(f"an m64n{n}k16 accumulator has {n // 2} registers a thread, not {reg}")
    w, lane = divmod(thread, 32)
    return 16 * w + lane // 4 + 8 * (reg >> 1 & 1), 8 * (reg >> 2) + 2 * (lane % 4) + (reg & 1)


def a_place(thread: int, reg: int, part: int) -> tuple[int, int]:
    """(row, col) of half `part` of register `reg` (0-3) of warpgroup thread `thread` in
    a 64 x 16 register A operand of 16-bit elements: warp w's rows as mma.sync
    m16n8k16's A fragment, 16w on."""
    w, lane = divmod(thread, 32)
    i = 2 * reg + part
    return 16 * w + lane // 4 + 8 * (i >> 1 & 1), 2 * (lane % 4) + (i & 1) + 8 * (i >> 2)


__all__ = ["Descriptor", "ROW", "SHAPES_N", "WARPGROUP", "a_place", "acc_place", "address",
           "offset", "swizzled"]  # fmt: skip
