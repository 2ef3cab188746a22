"""Values of the tile interpreter: the numpy form of each scalar type, conversions, views.

A uniform scalar is a numpy scalar of its type's dtype; a per-thread scalar is an
array over the CTA's threads. bf16 has no numpy dtype: it is held as float32 rounded
to bf16 values.

    >>> import numpy as np
    >>> float(convert(np.float32(1.00390625), "bf16")), int(convert(np.float32(-2.7), "i32"))
    (1.0, -2)
"""

from __future__ import annotations

import numpy as np

from phobos.interp.errors import InterpError

DTYPES = {
    "f16": np.float16,
    "bf16": np.float32,
    "f32": np.float32,
    "f64": np.float64,
    "i8": np.int8,
    "i32": np.int32,
    "i64": np.int64,
    "u8": np.uint8,
    "u16": np.uint16,
    "u32": np.uint32,
    "bool": np.bool_,
}
FLOATS = ("f16", "bf16", "f32", "f64")
INTS = {"i8": 8, "i32": 32, "i64": 64, "u8": 8, "u16": 16, "u32": 32}


def elem_name(t) -> str:
    """The scalar type name of a hir type: a Scalar's own, a tensor's or tile's element."""
    return t.name if hasattr(t, "name") else t.elem.name


def _back(x, arr):
    """`arr` as a numpy scalar when `x` was a scalar, else as an array."""
    return arr[()] if np.ndim(arr) == 0 else arr


def round_bf16(x):
    """float32 values rounded to the nearest bf16 (ties to even), held as float32."""
    a = np.array(x, dtype=np.float32)
    bits = a.view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    out = bits.astype(np.uint32).view(np.float32)
    out = np.where(np.isnan(a), a, out)
    return _back(x, out)


def convert(x, name: str):
    """`x` converted to the scalar type `name` as SPEC.md "Operators and conversions" says.

    Float to float rounds to nearest; float to integer truncates toward zero (NaN gives
    0, out-of-range values saturate); integer to integer wraps.
    """
    arr = np.asarray(x)
    dtype = DTYPES[name]
    if name in FLOATS:
        if name == "bf16":
            return round_bf16(arr.astype(np.float32))
        return _back(x, arr.astype(dtype))
    if name == "bool":
        return _back(x, arr.astype(np.bool_))
    if arr.dtype.kind == "f":
        info = np.iinfo(dtype)
        with np.errstate(all="ignore"):
            t = np.trunc(arr.astype(np.float64))
            t = np.where(np.isnan(t), 0.0, np.clip(t, info.min, info.max))
        if info.bits == 64:  # float64 cannot hold the int64 bounds exactly
            big = t >= 2.0**63
            out = np.where(big, info.max, t.astype(np.int64, casting="unsafe"))
            return _back(x, out.astype(dtype))
        return _back(x, t.astype(dtype))
    return _back(x, arr.astype(dtype))


def typed(value, name: str):
    """A Python or numpy constant as a value of `name` (a literal already in range)."""
    return convert(np.asarray(value), name)


class View:
    """A window onto an array: a tensor, a tile, or a slice of either.

    `offs` and `shape` place the view in `base`'s coordinates; `lo`/`hi` bound the
    elements it may reach (the array's extents, narrowed by enclosing views). Elements
    outside read as 0 and are not written.
    """

    __slots__ = ("base", "offs", "shape", "lo", "hi", "elem")

    def __init__(self, base, elem: str, offs=None, shape=None, lo=None, hi=None):
        self.base = base
        self.elem = elem
        self.offs = tuple(offs) if offs is not None else (0,) * base.ndim
        self.shape = tuple(shape) if shape is not None else base.shape
        self.lo = tuple(lo) if lo is not None else (0,) * base.ndim
        self.hi = tuple(hi) if hi is not None else base.shape

    @property
    def whole(self) -> bool:
        return self.shape == self.base.shape and not any(self.offs)

    def _windows(self):
        src, dst = [], []
        for o, n, lo, hi in zip(self.offs, self.shape, self.lo, self.hi, strict=True):
            a, b = max(o, lo), min(o + n, hi)
            if b <= a:
                return None
            src.append(slice(a, b))
            dst.append(slice(a - o, b - o))
        return tuple(src), tuple(dst)

    def read(self):
        """The viewed elements as an array (the base itself for a whole view: do not write it)."""
        if self.whole:
            return self.base
        out = np.zeros(self.shape, self.base.dtype)
        win = self._windows()
        if win is not None:
            out[win[1]] = self.base[win[0]]
        return out

    def write(self, value) -> None:
        """Store `value` (broadcast to the view's shape) into the in-bounds elements."""
        value = convert(value, self.elem)
        try:
            value = np.broadcast_to(value, self.shape)
        except ValueError:
            raise InterpError(
                f"a value of shape {list(np.shape(value))} does not fit a "
                f"[{', '.join(map(str, self.shape))}] target"
            ) from None
        if self.whole:
            self.base[...] = value
            return
        win = self._windows()
        if win is not None:
            self.base[win[0]] = value[win[1]]

    def sub(self, starts, extents) -> View:
        """The view `[starts[k] :+ extents[k]]` of this one (an extent None runs to the end)."""
        offs, shape, lo, hi = [], [], [], []
        for k, (s, n) in enumerate(zip(starts, extents, strict=True)):
            o = self.offs[k]
            size = self.shape[k] - s if n is None else n
            offs.append(o + s)
            shape.append(max(int(size), 0))
            lo.append(max(self.lo[k], o))
            hi.append(min(self.hi[k], o + self.shape[k]))
        return View(self.base, self.elem, offs, shape, lo, hi)

    def flat(self) -> View:
        """The row-major [1, R * C] view of a whole tile's bytes."""
        base = self.base.reshape(1, -1)
        assert np.shares_memory(base, self.base)
        return View(base, self.elem)
