"""A walking GEMM's CTAs paired into clusters that share an operand tile (sm_90a): two CTAs
whose blocks differ only in `ctx.block.x` read the same slices of every staged tile whose
coordinates do not depend on `ctx.block.x` (a GEMM's B, with x along M), so each loads
half of such a tile's boxes and multicasts them into both CTAs' stages. The bytes read
from L2 a turn drop by the shared tile's half (a 128 x 256 tile on 64-deep k slices: 48 KB
a CTA a turn becomes 32 KB).

The walk (`phobos.lower.walk`) then runs over cluster blocks: cluster q of the launch's
clusters walks q, q + clusters, ..., each cluster block a (qx, y, z) of a grid of
ceil(nx / 2) x ny x nz in the grouped order, and the CTA of rank r takes block
(2 qx + r, y, z). Where nx is odd the last column's rank 1 has no block: it still loads
its half of the shared tiles for its peer and runs the loop (its own tile's boxes lie
past the tensor, so TMA reads zeros), but skips the epilogue. So both CTAs of a cluster
run the same turns, which their barriers need.

A stage is refilled by both CTAs, so it must be free in both: the CTA barrier at a
turn's top (`phobos.lower.tma`) becomes the cluster's barrier (`cluster_arrive`, whose
release orders the wgmma reads of the stage before it, then `cluster_wait`), as do the
barrier after the mbarriers' initialisation and the one before the next block's first
turns. Each CTA's `full` mbarrier of a stage expects the stage's whole bytes: its own
boxes and its peer's.

Taken where the kernel walks the grid, its ring's loop has bounds and staged coordinates
computed without `ctx.block.x` for the shared tiles (bounds: for every tile), and each
shared tile's boxes split in two: an even number of panels (a 128-byte panel a box), or
boxes of a multiple of 16 rows, halved. Asked for by `@pipeline(cluster = 2)` (ours; an
`@autotune` name lets the tuner choose) or `PHOBOS_CLUSTER=2`; not by default, as on the
H200 it measured no faster than the CTAs alone at the large shapes, and 3 % slower at a
128-row one, where half the CTAs have no block (benchmarks/NOTES.md run 50). PHOBOS_LOG=
debug says which tiles are shared, or why none is.

    >>> SIZE
    2
"""

from __future__ import annotations

import logging

from phobos.lower import scalars
from phobos.lower.hirwalk import walk
from phobos.lower.lir import Imm
from phobos.lower.options import switch_count
from phobos.lower.types import BYTES
from phobos.sema import hir

log = logging.getLogger("phobos.lower")
SIZE = 2  # CTAs a cluster
ATOM = 8  # rows of a swizzle pattern: a split box keeps whole ones


def depends_on_x(e, lets: dict) -> bool:
    """Whether expression `e` reads `ctx.block.x`, directly or through the `let`s (and
    scalar `var`s) in `lets` (sym -> value)."""
    for n in walk(e):
        if isinstance(n, hir.CtxRead) and n.field == "block" and (n.axis or "x") == "x":
            return True
        if isinstance(n, hir.Ref) and n.sym in lets:
            value = lets.pop(n.sym)  # each binding looked into once
            try:
                if value is not None and depends_on_x(value, lets):
                    return True
            finally:
                lets[n.sym] = value
    return False


class Cluster:
    """The walk's pairing: its shared tiles (by the id of their staging statement) and
    the CTA's rank register, read once."""

    def __init__(self, lw, shared: set[int]):
        self.lw = lw
        self.size = SIZE
        self.shared = shared
        self.rank = lw.sreg("cluster_ctarank")

    def split(self, tile, box: tuple[int, int]) -> str:
        """How a shared tile's boxes are split between the ranks: "panels" (each rank a
        run of whole boxes) or "rows" (each box halved along its rows)."""
        panels = tile.shape[1] // box[1]
        return "panels" if panels % self.size == 0 else "rows"

    def issue(self, stage, st, tile, m, addr, row, col, bar) -> None:
        """This rank's part of a shared tile's boxes, multicast into every CTA of the
        cluster at the same stage offsets, completing on each one's `bar`."""
        b = self.lw.b
        every = Imm((1 << self.size) - 1, "u16")
        box_bytes = m.box[0] * m.box[1] * BYTES[m.elem]
        panels = tile.shape[1] // m.box[1]
        if self.split(tile, m.box) == "panels":
            mine = panels // self.size
            first = b.op("mul", "u32", self.rank, Imm(mine, "u32"), hint="p")
            for j in range(mine):
                p = b.op("add", "u32", first, Imm(j, "u32"), hint="p") if j else first
                dst = b.op("mad", "u32", p, Imm(box_bytes, "u32"), stage, hint="s")
                cols = b.op("mul", "u32", p, Imm(m.box[1], "u32"), hint="c")
                x = scalars.materialize(b, scalars.binary(
                    b, "+", col, b.op("mov", "b32", cols, dest_type="s32"), "i32"), "i32")  # fmt: skip
                b.emit("tma_load", (), (dst, addr, x, row, bar, every))
            return
        # Rows: the map's box is a half box; rank r's half starts r halves down.
        half = m.box[0] * m.box[1] * BYTES[m.elem]
        down = b.op("mul", "u32", self.rank, Imm(m.box[0], "u32"), hint="r")
        y = scalars.materialize(b, scalars.binary(
            b, "+", row, b.op("mov", "b32", down, dest_type="s32"), "i32"), "i32")  # fmt: skip
        mine = b.op("mad", "u32", self.rank, Imm(half, "u32"), stage, hint="s")
        for p in range(panels):
            dst = mine if not p else b.op("add", "u32", mine, Imm(p * 2 * half, "u32"), hint="s")
            x = col if not p else scalars.materialize(
                b, scalars.binary(b, "+", col, Imm(p * m.box[1], "s32"), "i32"), "i32")  # fmt: skip
            b.emit("tma_load", (), (dst, addr, x, y, bar, every))


def cluster_of(lw, walker, ring) -> Cluster | None:
    """The pairing of `walker`'s CTAs (a `BlockWalk`, its ring `ring`), or None where
    they run alone (PHOBOS_LOG=debug says why)."""
    why, shared = _refusal(lw, walker, ring)
    if why is not None:
        log.debug("`%s`: no clusters: %s", lw.k.name, why)
        return None
    names = ", ".join(f"`{st.sym.name}`" for st, _ in ring.staged if id(st) in shared)
    log.debug("`%s`: clusters of %d CTAs along ctx.block.x, sharing %s by TMA multicast",
              lw.k.name, SIZE, names)  # fmt: skip
    return Cluster(lw, shared)


def asked(k) -> int:
    """The CTAs a cluster `k` asks for: `@pipeline(cluster = C)` in its variant, else
    `PHOBOS_CLUSTER=C`, else 1 (none: measured no faster, benchmarks/NOTES.md run 50).

    >>> from types import SimpleNamespace as K
    >>> asked(K(attrs=K(cluster_ctas="C"), variant=(("C", 2),))), asked(K(attrs=None))
    (2, 1)
    """
    given = getattr(getattr(k, "attrs", None), "cluster_ctas", None)
    if isinstance(given, str):
        given = dict(k.variant).get(given)
    if given is None:
        given = switch_count("PHOBOS_CLUSTER", 1, SIZE)
    return given or 1


def _refusal(lw, walker, ring) -> tuple[str | None, set[int]]:
    if asked(lw.k) == 1:
        return "none asked (`@pipeline(cluster = 2)` or PHOBOS_CLUSTER=2 asks)", set()
    lets = {s.sym: s.value for s in walker.pre if isinstance(s, (hir.Let, hir.VarDecl))
            and isinstance(s.sym.type, hir.Scalar)}  # fmt: skip
    loop = ring.loop
    bounds = [loop.lo, loop.hi] + ([] if isinstance(loop.step, int) else [loop.step])
    if any(depends_on_x(e, lets) for e in bounds):
        return "the ring's loop bounds depend on ctx.block.x", set()
    shared = set()
    for st, tile in ring.staged:
        if any(depends_on_x(sub.start, lets) for sub in st.value.subs):
            continue
        row = tile.shape[1] * BYTES[tile.elem]
        inner = min(row, 128) // BYTES[tile.elem]
        panels = tile.shape[1] // inner
        if panels % SIZE and tile.shape[0] % (ATOM * SIZE):
            return (f"`{st.sym.name}`'s {panels} boxes of {tile.shape[0]} rows do not split "
                    f"in {SIZE}"), set()  # fmt: skip
        shared.add(id(st))
    if not shared:
        return "every staged tile's slice depends on ctx.block.x", set()
    if len(shared) == len(ring.staged):
        return "no staged tile's slice depends on ctx.block.x (the CTAs would repeat)", set()
    return None, shared


__all__ = ["SIZE", "Cluster", "cluster_of", "depends_on_x"]
