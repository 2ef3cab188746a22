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


Layout = Sweep | Rows


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
