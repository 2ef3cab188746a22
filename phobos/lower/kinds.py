"""The kinds of tile built-in the lowering tells apart, and the widest vector a sweep
over a shape may take: the vocabulary every lowering module shares (a leaf: it
imports nothing of the lowering).

    >>> "exp" in ELEMENTWISE, "dot" in CONTRACTIONS
    (True, True)
    >>> max_vec((16, 12)), max_vec((4, 7))
    (4, 1)
"""

from __future__ import annotations

REDUCTIONS = ("rowsum", "rowmax", "rowargmax")
CONTRACTIONS = ("dot", "dot_t")
ELEMENTWISE = frozenset({
    "exp", "log", "sqrt", "tanh", "round", "floor", "ceil", "abs", "rsqrt", "sin", "cos",
    "pow", "min", "max", "tmax", "where", "iota", "argsel",
    "f16", "bf16", "f32", "f64", "i8", "i32", "i64", "u8", "u16", "u32",
})  # fmt: skip


def max_vec(shape) -> int:
    """The widest vector a sweep over `shape` may take: 8 (16-bit elements, 16 bytes),
    dividing the last extent."""
    last = shape[-1] if shape else 1
    for v in (8, 4, 2, 1):
        if isinstance(last, int) and last % v == 0:
            return v
    return 1
