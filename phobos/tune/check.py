"""A variant's result against the reference: canary bytes, and closeness by element type.

Before a variant's time counts, it runs once on copies of the arguments, each tensor
followed by `CANARY_BYTES` of a known pattern. It must leave every canary as written and
leave every tensor as the reference leaves it: integers and booleans exactly, floats
within what their type's rounding allows. The default tolerance of a float type is
`ULPS` units of its epsilon, relative to each element and to the output's largest
magnitude (an element near zero is judged against the scale of its output, not its own):

    |out - ref| <= atol + rtol * |ref|,  rtol = ULPS * eps,  atol = ULPS * eps * max|ref|

`rtol=`/`atol=` widen either bound for a path that rounds more (approximate `exp`, f16
accumulations).

    >>> import numpy as np
    >>> ref = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    >>> compare("y", ref + np.float32(1e-7), ref, "f32") is None
    True
    >>> print(compare("y", np.array([1.0, 2.5, 3.0], dtype=np.float32), ref, "f32"))
    `y` differs from the reference at [1]: 2.5 where 2 (1 element of 3 outside rtol 4.77e-07, atol 1.43e-06)
    >>> compare("n", np.array([1, 2], dtype=np.int32), np.array([1, 3], dtype=np.int32), "i32")
    '`n` differs from the reference at [1]: 2 where 3 (1 element of 2; integers must match exactly)'
"""

from __future__ import annotations

import numpy as np

CANARY_BYTES = 256
ULPS = 4

# The machine epsilon of each float element type (bf16 keeps 8 bits of significand).
EPSILON = {"f16": 2.0**-10, "bf16": 2.0**-7, "f32": 2.0**-23, "f64": 2.0**-52}


def canary(nbytes: int = CANARY_BYTES) -> bytes:
    """The canary pattern: bytes no kernel writes by accident (not zero, not a float
    anyone computes), different at every offset so a shifted copy shows too.

        >>> canary(8).hex()
        'a5fc3e6b9bc2603d'
    """
    mixed = (((0xA5 + i) ^ (0x5A * (i & 1)) ^ (i >> 1) * 0x99) & 0xFF for i in range(nbytes))
    return bytes(b or 0x5A for b in mixed)


def canary_report(name: str, found: bytes, expected: bytes | None = None) -> str | None:
    """None when `found` is the canary; else which bytes past the end of `name` changed.

    >>> canary_report("y", canary(16)) is None
    True
    >>> print(canary_report("y", b"\\0\\0" + canary(16)[2:]))
    the variant wrote past the end of `y`: 2 of the 16 canary bytes after it changed, the first at byte 0 past the end
    """
    expected = canary(len(found)) if expected is None else expected
    if found == expected:
        return None
    changed = [i for i, (a, b) in enumerate(zip(found, expected, strict=True)) if a != b]
    return (
        f"the variant wrote past the end of `{name}`: {len(changed)} of the {len(found)} canary "
        f"bytes after it changed, the first at byte {changed[0]} past the end"
    )


def tolerances(elem: str, ref: np.ndarray, rtol: float | None, atol: float | None):
    """(rtol, atol) for an output of element type `elem` whose reference is `ref`."""
    eps = EPSILON[elem]
    scale = float(np.max(np.abs(ref))) if ref.size else 0.0
    if not np.isfinite(scale):
        finite = np.abs(ref[np.isfinite(ref)])
        scale = float(finite.max()) if finite.size else 0.0
    default_rtol = ULPS * eps
    default_atol = ULPS * eps * scale
    return (max(default_rtol, rtol or 0.0), max(default_atol, atol or 0.0))


def as_numbers(array: np.ndarray, elem: str) -> np.ndarray:
    """`array` as numbers to compare: bf16 (stored as 16-bit words) widened to f32."""
    if elem == "bf16":
        return (array.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    return array


def compare(
    name: str,
    out: np.ndarray,
    ref: np.ndarray,
    elem: str,
    rtol: float | None = None,
    atol: float | None = None,
) -> str | None:
    """None when `out` matches `ref` as `elem` allows; else one line naming `name`, the
    first element that differs (in row-major order) and how many do."""
    out, ref = as_numbers(out, elem), as_numbers(ref, elem)
    if out.shape != ref.shape:
        return f"`{name}` has shape {out.shape} but the reference's is {ref.shape}"
    if elem not in EPSILON:
        bad = out != ref
        rule = "integers must match exactly"
    else:
        rt, at = tolerances(elem, ref, rtol, atol)
        o, r = out.astype(np.float64), ref.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            # an infinite reference would make any difference look small: it must match
            close = np.isfinite(r) & (np.abs(o - r) <= at + rt * np.abs(r))
        same_special = (np.isnan(o) & np.isnan(r)) | (np.isinf(r) & (o == r))
        bad = ~(close | same_special)
        rule = f"outside rtol {rt:.3g}, atol {at:.3g}"
    count = int(np.count_nonzero(bad))
    if not count:
        return None
    where = tuple(int(i) for i in np.argwhere(bad)[0])
    index = ", ".join(str(i) for i in where)
    elements = "element" if count == 1 else "elements"
    return (
        f"`{name}` differs from the reference at [{index}]: {_show(out[where])} where "
        f"{_show(ref[where])} ({count} {elements} of {bad.size}"
        + (f" {rule})" if elem in EPSILON else f"; {rule})")
    )


def _show(value) -> str:
    v = value.item() if hasattr(value, "item") else value
    if isinstance(v, float):
        return f"{v:.7g}"
    return str(v)
