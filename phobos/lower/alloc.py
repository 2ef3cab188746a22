"""Shared memory by liveness: tiles whose lifetimes do not overlap share bytes.

A lifetime is a range of statement numbers (the lowering numbers statements in
program order); a tile used inside a loop it was declared outside of lives to the
loop's end (SPEC.md: "A tile declared before one loop and read after another is
CTA-private storage carried across both"). Buffers are placed first-fit, largest
first among those live at once, at 16-byte alignment.

    >>> bufs, total = allocate([("a", 4096, 0, 3), ("b", 4096, 4, 9), ("c", 1024, 2, 5)])
    >>> [(b.name, b.offset) for b in bufs], total
    ([('a', 0), ('b', 0), ('c', 4096)], 5120)
"""

from __future__ import annotations

from phobos.lower.lir import SharedBuffer

STATIC_LIMIT = 48 * 1024  # SPEC.md: static shared memory is capped at 48 KB
DYNAMIC_LIMIT = 227 * 1024  # the most a CTA of sm_90 may take (its opt-in maximum)
ALIGN = 16


def allocate(requests) -> tuple[list[SharedBuffer], int]:
    """Place `(name, size, first, last)` requests, or `(name, size, first, last, align)`
    for a buffer that needs more than 16-byte alignment (a swizzled tile's 128); the
    buffers (in request order) and the bytes needed. Two buffers overlap in bytes only
    if their ranges never meet.

    >>> bufs, total = allocate([("a", 48, 0, 3), ("b", 256, 0, 3, 128)])
    >>> [(b.name, b.offset, b.align) for b in bufs], total
    ([('a', 256, 16), ('b', 0, 128)], 304)
    """
    order = sorted(range(len(requests)), key=lambda i: (requests[i][2], -requests[i][1]))
    placed: dict[int, int] = {}
    for i in order:
        name, size, first, last = requests[i][:4]
        align = _align_of(requests[i])
        busy = []
        for j, off in placed.items():
            _, s2, f2, l2 = requests[j][:4]
            if f2 <= last and first <= l2:
                busy.append((off, off + aligned(s2)))
        offset = 0
        for lo, hi in sorted(busy):
            if offset + aligned(size) <= lo:
                break
            offset = -(-max(offset, hi) // align) * align
        placed[i] = offset
    buffers = [SharedBuffer(r[0], placed[i], aligned(r[1]), _align_of(r))
               for i, r in enumerate(requests)]  # fmt: skip
    total = max((b.offset + b.size for b in buffers), default=0)
    return buffers, total


def _align_of(request) -> int:
    return max(ALIGN, request[4]) if len(request) > 4 else ALIGN


def aligned(n: int) -> int:
    """`n` bytes rounded up to the 16-byte alignment of every buffer.

    >>> aligned(20), aligned(32)
    (32, 32)
    """
    return -(-n // ALIGN) * ALIGN
