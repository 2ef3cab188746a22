"""How far a random kernel's result may honestly move on the card.

The card contracts `a * b + c` into one `fma` and the tile interpreter rounds twice, so an
element whose computation amplifies rounding (a recurrence such as
`acc = |2 acc| + |acc| (x - acc)` run 67 times) differs between them by percents while
both are right to f32. Each element's own sensitivity is measured, not guessed: the tile
interpreter runs again on inputs nudged by a few ulps (`nudged`), a few times with
different nudges, and an element may differ from the interpreter by its usual tolerance
plus four times the most any nudge moved it (`mismatches`). One nudge is not enough: in
such a recurrence the same element moved by 0.4 % under one nudge and by 65 % under
another, and the card's 3 % lay between (seed 1879 of the random kernels, whose card
result a float32 `fma` in numpy reproduces to the bit). A well-conditioned element keeps
the tight tolerance, so a wrong layout or a lost element still shows; one that a nudge
turns to or from NaN or infinity says nothing and is passed over.

    >>> import numpy as np
    >>> want = np.array([1.0, 2.0, np.nan, 0.5], np.float32)
    >>> moved = np.array([1.0, 2.0, np.nan, 0.6], np.float32)
    >>> mismatches(np.array([1.0, 2.0, np.nan, 0.55], np.float32), want, moved).tolist()
    [False, False, False, False]
    >>> mismatches(np.array([1.0, 2.5, 3.0, 0.55], np.float32), want, moved).tolist()
    [False, True, True, False]
    >>> wider = np.array([1.0, 2.0, np.nan, 0.8], np.float32)  # a second nudge's result
    >>> mismatches(np.array([1.0, 2.0, np.nan, 0.9], np.float32), want, [moved, wider]).tolist()
    [False, False, False, False]
"""

from __future__ import annotations

import numpy as np

NUDGE = 2.0**-21  # relative: four ulps of f32
NUDGES = 3  # independent nudges an element's sensitivity is measured by


def nudged(arrays: dict, outputs: tuple[str, ...], seed: int) -> dict:
    """Copies of `arrays`, each floating input multiplied by 1 + u NUDGE (u uniform in
    [-1, 1]); outputs and integer arrays copied as they are."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, a in arrays.items():
        if name in outputs or not np.issubdtype(a.dtype, np.floating):
            out[name] = a.copy()
        else:
            factor = 1.0 + rng.uniform(-1.0, 1.0, a.shape) * NUDGE
            out[name] = (a.astype(np.float64) * factor).astype(a.dtype)
    return out


def nudges(arrays: dict, outputs: tuple[str, ...], seed: int) -> list[dict]:
    """`NUDGES` independent `nudged` copies of `arrays`, each its own draw from `seed`."""
    return [nudged(arrays, outputs, seed + (k << 20)) for k in range(NUDGES)]


def mismatches(got, want, moved, rtol: float = 2e-5, atol: float = 4e-6) -> np.ndarray:
    """Where `got` is farther from `want` than `rtol |want| + atol + 4 |want - moved|`
    (`moved`: `want` computed from nudged inputs, or a list of such, the largest move
    taken), or NaN where `want` is a number; an element that a nudge turned to or from
    a non-finite value is never a mismatch."""
    got, want = (np.asarray(x, np.float64) for x in (got, want))
    runs = [np.asarray(m, np.float64) for m in (moved if isinstance(moved, list) else [moved])]
    both_finite = np.isfinite(want) & np.logical_and.reduce([np.isfinite(m) for m in runs])
    unsteady = np.logical_or.reduce([np.isfinite(want) != np.isfinite(m) for m in runs])
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    with np.errstate(invalid="ignore"):
        spread = np.max([np.abs(want - m) for m in runs], axis=0)
        bound = rtol * np.abs(want) + atol + 4.0 * spread
        far = ~(np.abs(got - want) <= bound)
    return ~same & ~unsteady & (far | ~both_finite)
