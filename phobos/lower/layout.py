"""Layouts: which thread holds which elements of a tile.

A layout maps (thread, register index) to a tile coordinate, and back. Every
placement speaks it: an elementwise sweep walks a thread's registers of a `Sweep`
layout, a row reduction folds the lanes of a `Rows` layout, and mma fragments will
be layouts of their own. Moving a tile from one layout to another is one explicit
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
from math import prod


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


Layout = Sweep | Rows | Blocked


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
