"""Layouts: which thread holds which elements of a tile.

A layout maps (thread, register index) to a tile coordinate, and back. Every
placement speaks it: an elementwise sweep walks a thread's registers of a `Sweep`
layout, a row reduction folds the lanes of a `Rows` layout, and a tensor-core product's
accumulator is an `MmaAcc` (mma.sync's C fragments, a block of them a warp). Moving a tile from one layout to another is one explicit
step of the lowering (through shared memory or shuffles), never implicit.

    >>> lay = Sweep((4, 8), threads=4, vec=4)
    >>> lay.regs_per_thread
    8
    >>> lay.coord(1, 0), lay.coord(1, 3), lay.coord(1, 4)
    ((0, 4), (0, 7), (2, 4))
    >>> lay.owner((2, 5))
    (1, 5)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from math import prod

from phobos.lower.fragments import c_m16n8k16


@dataclass(frozen=True)
class Sweep:
    """The tile in row-major order, cut into vectors of `vec` elements; vector `v`
    belongs to thread `v % threads`, as its register group `v // threads`.

    Consecutive threads take consecutive vectors, so a warp's accesses to a row-major
    buffer are coalesced, and `vec` elements of one thread are one access (16 bytes at
    most). `vec` divides the last extent, so a vector never crosses a row.
    """

    shape: tuple[int, ...]
    threads: int
    vec: int = 1

    def __post_init__(self) -> None:
        if self.shape and self.shape[-1] % self.vec:
            raise ValueError(f"vector width {self.vec} does not divide the row {self.shape[-1]}")

    @property
    def size(self) -> int:
        return prod(self.shape)

    @property
    def vectors(self) -> int:
        return self.size // self.vec

    @property
    def groups(self) -> int:
        """Register groups per thread: the sweep's trip count."""
        return -(-self.vectors // self.threads)

    @property
    def regs_per_thread(self) -> int:
        return self.groups * self.vec

    @property
    def whole(self) -> bool:
        """True when every thread holds a full set: no group is partly empty."""
        return self.vectors % self.threads == 0

    def coord(self, thread: int, reg: int) -> tuple[int, ...] | None:
        """The coordinate `thread` holds in register `reg`, or None past the tile."""
        group, lane = divmod(reg, self.vec)
        flat = (group * self.threads + thread) * self.vec + lane
        if flat >= self.size:
            return None
        return _unflatten(flat, self.shape)

    def owner(self, coord: tuple[int, ...]) -> tuple[int, int]:
        """The (thread, register) holding `coord`."""
        flat = _flatten(coord, self.shape)
        vector, lane = divmod(flat, self.vec)
        group, thread = divmod(vector, self.threads)
        return thread, group * self.vec + lane


@dataclass(frozen=True)
class Rows:
    """A rank-2 tile with each row on `lanes` consecutive lanes of one warp.

    Row `r` is held by lane group `r % groups` (groups = threads // lanes) in its
    register row `r // groups`; within the group, lane `l` holds the vectors
    `l, l + lanes, ...` of the row. A row's fold is then `log2(lanes)` shuffles.

    >>> lay = Rows((4, 64), threads=64, lanes=32, vec=2)
    >>> lay.coord(33, 0), lay.owner((1, 2))
    ((1, 2), (33, 0))
    """

    shape: tuple[int, int]
    threads: int
    lanes: int = 32
    vec: int = 1

    @property
    def groups(self) -> int:
        return self.threads // self.lanes

    @property
    def row_regs(self) -> int:
        """Registers one thread holds of one row."""
        return -(-self.shape[1] // (self.lanes * self.vec)) * self.vec

    @property
    def row_steps(self) -> int:
        """Rows one lane group walks."""
        return -(-self.shape[0] // self.groups)

    @property
    def regs_per_thread(self) -> int:
        return self.row_steps * self.row_regs

    def coord(self, thread: int, reg: int) -> tuple[int, int] | None:
        step, within = divmod(reg, self.row_regs)
        vector, lane_elem = divmod(within, self.vec)
        group, lane = divmod(thread, self.lanes)
        row = step * self.groups + group
        col = (vector * self.lanes + lane) * self.vec + lane_elem
        if row >= self.shape[0] or col >= self.shape[1]:
            return None
        return row, col

    def owner(self, coord: tuple[int, int]) -> tuple[int, int]:
        row, col = coord
        step, group = divmod(row, self.groups)
        vector_flat, lane_elem = divmod(col, self.vec)
        vector, lane = divmod(vector_flat, self.lanes)
        return group * self.lanes + lane, step * self.row_regs + vector * self.vec + lane_elem


@dataclass(frozen=True)
class Blocked:
    """A rank-2 tile cut into `tm` x `tn` micro-tiles, one per thread: the layout of an
    FMA product, where each thread keeps `tm * tn` accumulators and reads `tm` values of
    one operand and `tn` of the other for every step along the contraction.

    Micro-tile (cell) `c` covers rows `(c // cols) * tm + i`, with `cols = N // tn`;
    its columns are `tn / vec` vectors of `vec` columns, interleaved with the other
    cells of its rows: vector `v` of cell `c` starts at column
    `(c % cols) * vec + v * cols * vec` (`col_offset`). So the threads of a warp read
    a row of the right operand as consecutive 16-byte vectors (no bank conflict), and
    store the product's rows the same way. Thread `t` holds the cells
    `t, t + threads, ...` (one per repetition). Its registers are groups of `vec`
    consecutive columns of one row: repetition, then row `i`, then vector. Where the
    cells do not fill the last repetition, the threads past them hold nothing there.

    >>> lay = Blocked((4, 8), threads=4, tm=2, tn=4, vec=2)
    >>> lay.cells, lay.groups, lay.coord(1, 0), lay.coord(1, 3), lay.owner((3, 6))
    (4, 4, (0, 2), (0, 7), (3, 6))
    """

    shape: tuple[int, int]
    threads: int
    tm: int
    tn: int
    vec: int = 1

    def __post_init__(self) -> None:
        m, n = self.shape
        if m % self.tm or n % self.tn or self.tn % self.vec:
            raise ValueError(f"micro-tile {self.tm}x{self.tn} (vector {self.vec}) does not "
                             f"tile {list(self.shape)}")  # fmt: skip

    @property
    def cols(self) -> int:
        """Cells across a row of the tile."""
        return self.shape[1] // self.tn

    @property
    def cells(self) -> int:
        return (self.shape[0] // self.tm) * self.cols

    @property
    def reps(self) -> int:
        """Cells one thread holds."""
        return -(-self.cells // self.threads)

    @property
    def per_cell(self) -> int:
        """Register groups of one cell."""
        return self.tm * (self.tn // self.vec)

    @property
    def groups(self) -> int:
        return self.reps * self.per_cell

    @property
    def regs_per_thread(self) -> int:
        return self.groups * self.vec

    @property
    def whole(self) -> bool:
        return self.cells % self.threads == 0

    @property
    def key(self) -> tuple:
        """What two accesses compare to know they share a layout (the barrier pass)."""
        return ("blocked", self.shape, self.tm, self.tn, self.vec)

    @property
    def stride(self) -> int:
        """Columns from one of a cell's vectors to its next."""
        return self.cols * self.vec

    def col_offset(self, j: int) -> int:
        """Column `j` of a cell, from the cell's first column."""
        return (j // self.vec) * self.stride + j % self.vec

    def coord(self, thread: int, reg: int) -> tuple[int, int] | None:
        group, lane = divmod(reg, self.vec)
        rep, rest = divmod(group, self.per_cell)
        i, jv = divmod(rest, self.tn // self.vec)
        cell = rep * self.threads + thread
        if cell >= self.cells:
            return None
        col = (cell % self.cols) * self.vec + self.col_offset(jv * self.vec + lane)
        return (cell // self.cols) * self.tm + i, col

    def owner(self, coord: tuple[int, int]) -> tuple[int, int]:
        row, col = coord
        vector, within = divmod(col, self.stride)
        column_cell, lane = divmod(within, self.vec)
        cell = (row // self.tm) * self.cols + column_cell
        rep, thread = divmod(cell, self.threads)
        group = rep * self.per_cell + (row % self.tm) * (self.tn // self.vec) + vector
        return thread, group * self.vec + lane

    @classmethod
    def choose(cls, shape, threads: int, vec: int = 4, most: int = 64) -> Blocked:
        """The micro-tile for a product of `shape` on `threads` threads: the fewest
        repetitions, then the most threads busy, then the fewest operand reads per FMA
        (`(tm + tn) / (tm * tn)`), then the wider `tn`; `tm * tn` at most `most`.

        >>> Blocked.choose((128, 128), 256)
        Blocked(shape=(128, 128), threads=256, tm=8, tn=8, vec=4)
        >>> Blocked.choose((64, 64), 256).tm, Blocked.choose((16, 8), 256).tn
        (4, 1)
        """
        m, n = shape
        best = None
        for tm in (1, 2, 4, 8):
            for tn in (1, 2, 4, 8):
                if m % tm or n % tn or tm * tn > most:
                    continue
                cells = (m // tm) * (n // tn)
                reps = -(-cells // threads)
                score = (reps, -min(cells, threads), (tm + tn) / (tm * tn), -tn)
                if best is None or score < best[0]:
                    best = (score, tm, tn)
        _, tm, tn = best
        return cls(tuple(shape), threads, tm, tn, _gcd(vec, tn))


@dataclass(frozen=True)
class MmaAcc:
    """A rank-2 f32 tile held as mma.sync m16n8k16 accumulators: the CTA's warps form a
    `warps_m` x `warps_n` grid over the tile, warp `w` owning the block at row
    `(w // warps_n) * wm`, column `(w % warps_n) * wn` (`wm = M / warps_m`,
    `wn = N / warps_n`), cut into `wm / 16` x `wn / 8` fragments of 16 x 8. A thread's
    registers are its C fragments in row-major order of the fragments, four each, in the
    PTX ISA's order (`fragments.c_m16n8k16`: c0 c1 at row g, columns 2t and 2t + 1; c2 c3
    eight rows below). Register groups are `vec` consecutive registers (1 or 2): with 2, a
    group is a column pair of one row, so a sweep reads and writes it as one 8-byte vector.

    Every thread holds elements (the warps tile the tile exactly), and a thread's
    coordinates are its origin (`thread_origin`) plus a constant of the register
    (`offset`), which is how a sweep emits them: the origin once at entry.

    >>> lay = MmaAcc((32, 16), threads=64, warps_m=2, warps_n=1)
    >>> lay.frags, lay.regs_per_thread, lay.groups
    (2, 8, 4)
    >>> lay.coord(5, 0), lay.coord(5, 3), lay.coord(37, 4), lay.owner((25, 11))
    ((1, 2), (9, 3), (17, 10), (37, 7))
    """

    shape: tuple[int, int]
    threads: int
    warps_m: int
    warps_n: int
    vec: int = 2

    def __post_init__(self) -> None:
        m, n = self.shape
        if self.threads != 32 * self.warps_m * self.warps_n:
            raise ValueError(f"{self.threads} threads are not a {self.warps_m}x{self.warps_n} "
                             "grid of warps")  # fmt: skip
        if m % (16 * self.warps_m) or n % (8 * self.warps_n) or self.vec not in (1, 2):
            raise ValueError(f"{self.warps_m}x{self.warps_n} warps of 16x8 fragments (vector "
                             f"{self.vec}) do not tile {list(self.shape)}")  # fmt: skip

    @property
    def wm(self) -> int:
        """Rows of a warp's block."""
        return self.shape[0] // self.warps_m

    @property
    def wn(self) -> int:
        """Columns of a warp's block."""
        return self.shape[1] // self.warps_n

    @property
    def frags_n(self) -> int:
        """Fragments across a warp's block."""
        return self.wn // 8

    @property
    def frags(self) -> int:
        """Fragments a warp holds: (wm / 16) x (wn / 8)."""
        return (self.wm // 16) * self.frags_n

    @property
    def regs_per_thread(self) -> int:
        return 4 * self.frags

    @property
    def groups(self) -> int:
        return self.regs_per_thread // self.vec

    @property
    def whole(self) -> bool:
        return True

    @property
    def key(self) -> tuple:
        """What two accesses compare to know they share a layout (the barrier pass)."""
        return ("mma", self.shape, self.warps_m, self.warps_n, self.vec)

    def fragment(self, q: int) -> tuple[int, int]:
        """The (row, col) of fragment `q`'s first element in its warp's block."""
        i, j = divmod(q, self.frags_n)
        return 16 * i, 8 * j

    def thread_origin(self, thread: int) -> tuple[int, int]:
        """The coordinate `thread` holds in register 0."""
        warp, lane = divmod(thread, 32)
        wr, wc = divmod(warp, self.warps_n)
        row, col = c_m16n8k16(lane, 0)
        return wr * self.wm + row, wc * self.wn + col

    def offset(self, reg: int) -> tuple[int, int]:
        """Register `reg`'s coordinate less register 0's, the same in every thread."""
        q, c = divmod(reg, 4)
        fr, fc = self.fragment(q)
        row, col = c_m16n8k16(0, c)
        return fr + row, fc + col

    def coord(self, thread: int, reg: int) -> tuple[int, int] | None:
        if not (0 <= thread < self.threads and 0 <= reg < self.regs_per_thread):
            return None
        (r0, c0), (dr, dc) = self.thread_origin(thread), self.offset(reg)
        return r0 + dr, c0 + dc

    def owner(self, coord: tuple[int, int]) -> tuple[int, int]:
        row, col = coord
        (wr, r), (wc, c) = divmod(row, self.wm), divmod(col, self.wn)
        q = (r // 16) * self.frags_n + c // 8
        lane, reg = _c_owner()[(r % 16, c % 8)]
        return 32 * (wr * self.warps_n + wc) + lane, 4 * q + reg

    @classmethod
    def choose(cls, shape, threads: int, whole_rows: bool = False) -> MmaAcc | None:
        """The warp grid for an accumulator of `shape` on `threads` threads, or None when
        no grid of all the CTA's warps tiles it with 16 x 8 fragments: the fewest
        ldmatrix loads per mma (a warp loads `wm / 16` A fragments and `wn / 16` pairs of
        B fragments a k step for `(wm / 16) (wn / 8)` mma), then the wider warp block.
        `whole_rows` asks for a warp to hold whole rows (one warp column: a row
        reduction then folds within each quad of lanes).

        >>> MmaAcc.choose((64, 64), 128)
        MmaAcc(shape=(64, 64), threads=128, warps_m=2, warps_n=2, vec=2)
        >>> MmaAcc.choose((64, 64), 128, whole_rows=True)
        MmaAcc(shape=(64, 64), threads=128, warps_m=4, warps_n=1, vec=2)
        >>> MmaAcc.choose((16, 8), 64) is None
        True
        """
        m, n = shape
        warps, rest = divmod(threads, 32)
        if rest or not warps:
            return None
        best = None
        for wa in range(1, warps + 1):
            wb, left = divmod(warps, wa)
            if left or m % (16 * wa) or n % (8 * wb) or (whole_rows and wb != 1):
                continue
            fm, fn = m // wa // 16, n // wb // 8
            score = ((fm + fn / 2) / (fm * fn), -fn)
            if best is None or score < best[0]:
                best = (score, wa, wb)
        if best is None:
            return None
        return cls(tuple(shape), threads, best[1], best[2])


@dataclass(frozen=True)
class MmaRows:
    """A [M, 1] tile of per-row values beside an `MmaAcc` of M rows held one warp column
    wide (a row reduction's result, flash attention's running max and sum): each thread
    holds the rows its accumulator registers are on, rows `g` and `g + 8` of each of its
    warp's 16-row fragment rows (`g = lane // 4`), so a row's value sits in all four
    lanes of the quad that holds the row. A quad's fold leaves the row in each of them;
    a sweep of the accumulator reads its row's value from the thread's own register
    (`reg_of`), and a sweep of the rows computes each value in the four lanes alike.

    >>> lay = MmaRows((64, 1), threads=128, warps_m=4)
    >>> lay.regs_per_thread, lay.coord(37, 1), lay.owner((25, 0))
    (2, (25, 0), (36, 1))
    >>> MmaRows.reg_of(MmaAcc((64, 64), 128, 4, 1).offset(6)[0])  # c2 c3: eight rows down
    1
    """

    shape: tuple[int, int]
    threads: int
    warps_m: int
    vec: int = 1

    @property
    def wm(self) -> int:
        return self.shape[0] // self.warps_m

    @property
    def regs_per_thread(self) -> int:
        return 2 * (self.wm // 16)

    @property
    def groups(self) -> int:
        return self.regs_per_thread

    @property
    def whole(self) -> bool:
        return True

    @property
    def key(self) -> tuple:
        return ("mma-rows", self.shape, self.warps_m)

    def offset(self, reg: int) -> tuple[int, int]:
        """Register `reg`'s row less register 0's, the same in every thread."""
        return 16 * (reg // 2) + 8 * (reg % 2), 0

    def thread_origin(self, thread: int) -> tuple[int, int]:
        warp, lane = divmod(thread, 32)
        return warp * self.wm + lane // 4, 0

    @staticmethod
    def reg_of(dr: int) -> int:
        """The register of the row `dr` rows below a thread's origin (an `MmaAcc`
        register's row offset, `MmaAcc.offset`)."""
        return dr // 8

    def coord(self, thread: int, reg: int) -> tuple[int, int] | None:
        if not (0 <= thread < self.threads and 0 <= reg < self.regs_per_thread):
            return None
        (r0, _), (dr, _) = self.thread_origin(thread), self.offset(reg)
        return r0 + dr, 0

    def owner(self, coord: tuple[int, int]) -> tuple[int, int]:
        """The first lane of the quad holding row `coord[0]`, and its register."""
        warp, r = divmod(coord[0], self.wm)
        return 32 * warp + 4 * (r % 8), self.reg_of(r - r % 8)


@cache
def _c_owner() -> dict:
    """(row, col) of a 16 x 8 C fragment -> (lane, register), the ISA's table inverted."""
    return {c_m16n8k16(lane, reg): (lane, reg) for lane in range(32) for reg in range(4)}


Layout = Sweep | Rows | Blocked | MmaAcc | MmaRows


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a


def _flatten(coord: tuple[int, ...], shape: tuple[int, ...]) -> int:
    flat = 0
    for index, extent in zip(coord, shape, strict=True):
        flat = flat * extent + index
    return flat


def _unflatten(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    coord = []
    for extent in reversed(shape):
        flat, index = divmod(flat, extent)
        coord.append(index)
    return tuple(reversed(coord))
