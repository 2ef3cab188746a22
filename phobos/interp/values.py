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


def _f32_bits_to_odd(x64):
    """The bits of the f32 nearest `x64` (float64 values), rounded *to odd*: an inexact
    result takes the neighbour whose last bit is 1, as `phobos.semantics.round_bf16` does."""
    y = x64.astype(np.float32)
    bits = y.view(np.uint32).astype(np.int64)
    y64 = y.astype(np.float64)
    fix = (y64 != x64) & ~np.isinf(x64) & ~np.isnan(x64) & ((bits & 1) == 0)
    step = np.where(np.abs(y64) < np.abs(x64), 1, -1)  # one step toward x in magnitude
    return np.where(fix, bits + step, bits)


def round_bf16(x):
    """Float values rounded once to the nearest bf16 (ties to even), held as float32.

    An f64 is rounded to f32 to odd first, so the second rounding is as if from the f64
    itself (`phobos.semantics.round_bf16`):

    >>> float(round_bf16(np.float64(1.0 + 2.0**-8 + 2.0**-40)))
    1.0078125
    """
    a = np.asarray(x).astype(np.float64)
    bits = _f32_bits_to_odd(a)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000  # half to even on bit 16
    out = bits.astype(np.uint32).view(np.float32)
    out = np.where(np.isnan(a), np.float32(np.nan), out)
    return _back(x, out)


def _int_to_f64_odd(a):
    """int64 values as float64: (nearest, to odd). The nearest is one rounding of the
    exact sum hi * 2**32 + lo; the error of that sum, exact by Knuth's two-sum, tells
    whether it was inexact, and then the result to odd is the neighbour toward the int."""
    a = a.astype(np.int64)
    hi = (a >> 32).astype(np.float64) * 2.0**32
    lo = (a & 0xFFFFFFFF).astype(np.float64)
    s = hi + lo
    b = s - hi
    err = (hi - (s - b)) + (lo - b)
    even = (s.view(np.uint64) & np.uint64(1)) == 0
    odd = np.where((err != 0) & even, np.nextafter(s, np.where(err > 0, np.inf, -np.inf)), s)
    return s, odd


def _int_to_float(arr, name: str):
    """Integers converted to the float type `name`, rounded once to nearest (ties to even),
    as `phobos.semantics.round_exact` does: an i64 past 2**53 does not round through an f64."""
    nearest, odd = _int_to_f64_odd(arr)
    if name == "f64":
        return nearest
    if name == "bf16":
        return round_bf16(odd)
    # To odd at 53 bits keeps what a rounding to 24 or 11 bits needs (53 >= p + 2).
    return odd.astype(DTYPES[name])


def _float_to_int(arr, dtype):
    """Floats truncated toward zero, saturating at the type's ends; NaN gives 0."""
    info = np.iinfo(dtype)
    with np.errstate(all="ignore"):
        t = np.trunc(arr.astype(np.float64))
        t = np.where(np.isnan(t), 0.0, np.clip(t, info.min, info.max))
        if info.bits == 64:  # float64 cannot hold the int64 bounds exactly
            big = t >= 2.0**63
            out = np.where(big, info.max, t.astype(np.int64))
            return out.astype(dtype)
        return t.astype(dtype)


def convert(x, name: str):
    """`x` converted to the scalar type `name` as `phobos.semantics.convert` does.

    Float to float rounds once to nearest, ties to even; integer to float too (exactly,
    from the integer); float to integer truncates toward zero, saturates past the range
    (an infinity included) and gives 0 for NaN; integer to integer keeps the low bits.
    A bool converts to 0 or 1 (the interpreter's own use, never a program's).
    """
    arr = np.asarray(x)
    dtype = DTYPES[name]
    kind = arr.dtype.kind
    if name in FLOATS:
        if kind in "iu":
            return _back(x, _int_to_float(arr, name))
        if name == "bf16":
            return round_bf16(x) if kind == "f" else _back(x, round_bf16(arr.astype(np.float64)))
        return _back(x, arr.astype(dtype))
    if name == "bool":
        return _back(x, arr.astype(np.bool_))
    if kind == "f":
        return _back(x, _float_to_int(arr, dtype))
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

    def outside(self):
        """Where the view reaches past its bounds (True), broadcast to its shape: the
        elements `read` fills with 0; None when there are none."""
        masks = []
        for k, (o, n, lo, hi) in enumerate(
            zip(self.offs, self.shape, self.lo, self.hi, strict=True)
        ):
            c = o + np.arange(n)
            shape = [1] * len(self.shape)
            shape[k] = n
            masks.append(((c < lo) | (c >= hi)).reshape(shape))
        out = np.zeros(self.shape, bool)
        for m in masks:
            out = out | m
        return out if out.any() else None

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
