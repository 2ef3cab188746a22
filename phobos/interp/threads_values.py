"""Values of the threads interpreter: lir types as numpy dtypes, bits, and `cvt`.

A register is an array over the CTA's threads of its type's dtype. bf16 has no numpy
dtype: a bf16 register holds float32 values rounded to bf16 (its bits are the upper
half of the f32's); in memory it is the 16 bits.

    >>> import numpy as np
    >>> reinterpret(np.array([1.0], np.float32), "f32", "b32").tolist()
    [1065353216]
    >>> cvt(np.array([2.5, -2.5, 3.7], np.float32), "f32", "s32", "rni").tolist()
    [2, -2, 4]
    >>> cvt(np.array([1.0 + 2.0**-9], np.float32), "f32", "bf16", "rp").tolist()
    [1.0078125]
"""

from __future__ import annotations

import numpy as np

from phobos.interp.errors import InterpError
from phobos.interp.values import round_bf16
from phobos.lower import lir

# The dtype a register of each lir type holds.
DTYPE = {
    "pred": np.bool_,
    "b8": np.uint8, "b16": np.uint16, "b32": np.uint32, "b64": np.uint64,
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
    "s8": np.int8, "s16": np.int16, "s32": np.int32, "s64": np.int64,
    "f16": np.float16, "bf16": np.float32, "f32": np.float32, "f64": np.float64,
}  # fmt: skip
# The unsigned dtype of each width in bytes: how a value's bits are held.
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
# The signed and unsigned lir type of each width, for integer ranges.
_SINT = {1: "s8", 2: "s16", 4: "s32", 8: "s64"}


def bits_of(arr, t: str):
    """The bits of values of type `t` as unsigned integers of its width."""
    arr = np.asarray(arr)
    if t == "bf16":
        return (arr.astype(np.float32).view(np.uint32) >> np.uint32(16)).astype(np.uint16)
    if t == "pred":
        return arr.astype(np.uint8)
    return arr.astype(DTYPE[t], copy=False).view(UINT[lir.WIDTH[t]])


def from_bits(bits, t: str):
    """Values of type `t` from their bits (unsigned integers of its width)."""
    bits = np.asarray(bits).astype(UINT[lir.WIDTH[t]], copy=False)
    if t == "bf16":
        return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)
    if t == "pred":
        return bits != 0
    return bits.view(DTYPE[t])


def reinterpret(arr, src: str, dst: str, what: str = "a value"):
    """A value of type `src` read as type `dst`, as PTX reads a register of one type in an
    instruction of another: integers of any width are truncated or extended (a signed
    source sign-extends), types of one width keep their bits; anything else is refused.
    """
    if src == dst:
        return arr
    arr = np.asarray(arr)
    if lir.is_int(src) and lir.is_int(dst):
        return arr.astype(DTYPE[dst])
    if src != "pred" and dst != "pred" and lir.WIDTH[src] == lir.WIDTH[dst]:
        return from_bits(bits_of(arr, src), dst)
    raise InterpError(f"{what} of type {src} cannot be read as {dst}")


def immediate(value: int | float, t: str):
    """An immediate's value as a numpy scalar of `t` (an integer wraps into the type)."""
    if t == "pred":
        return np.bool_(bool(value))
    if lir.is_float(t):
        return round_nearest(np.array(float(value)), t)[()]
    if isinstance(value, float):
        raise InterpError(f"`{value}` is not an integer of type {t}")
    bits = 8 * lir.WIDTH[t]
    value = int(value) & ((1 << bits) - 1)
    if lir.is_signed(t) and value >> (bits - 1):
        value -= 1 << bits
    return DTYPE[t](value)


def int_range(t: str) -> tuple[int, int]:
    bits = 8 * lir.WIDTH[t]
    if lir.is_signed(t):
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


# ---------------------------------------------------------------------------
# Rounding


def round_nearest(x64, t: str):
    """float64 values rounded once to the nearest value of the float type `t` (ties to even)."""
    x64 = np.asarray(x64, np.float64)
    with np.errstate(all="ignore"):
        if t == "bf16":
            return np.asarray(round_bf16(x64), np.float32)
        return x64.astype(DTYPE[t])


def step(r, t: str, up):
    """The neighbour of each value `r` of float type `t`, above where `up`, else below."""
    r = np.asarray(r)
    if t != "bf16":
        dtype = DTYPE[t]
        toward = np.where(up, dtype(np.inf), dtype(-np.inf)).astype(dtype)
        return np.nextafter(r.astype(dtype), toward)
    bits = r.astype(np.float32).view(np.uint32).astype(np.int64)
    magnitude = bits & 0x7FFFFFFF
    key = np.where(bits >> 31 == 1, -magnitude, magnitude)  # ordered like the values
    key = key + np.where(up, 0x10000, -0x10000)
    out = np.where(key < 0, 0x80000000 | -key, key).astype(np.uint32).view(np.float32)
    return np.where(np.isnan(r), r, out).astype(np.float32)


def _directed(r, exact_side, t: str, rounding: str):
    """Nearest values `r` moved to the directed rounding `rounding` (rz rm rp), given the sign
    of (exact - r) in `exact_side` (-1, 0, +1)."""
    if rounding in ("rn", None):
        return r
    if rounding == "rm":
        down, up = exact_side < 0, np.zeros_like(exact_side, bool)
    elif rounding == "rp":
        down, up = np.zeros_like(exact_side, bool), exact_side > 0
    elif rounding == "rz":
        down = (exact_side < 0) & (r > 0)
        up = (exact_side > 0) & (r < 0)
    else:
        raise InterpError(f"`.{rounding}` is not a rounding of a float result")
    moved = step(r, t, up)
    return np.where(down | up, moved, r).astype(DTYPE[t])


def _two_sum_odd(hi, lo):
    """hi + lo (float64, exact each) as (nearest, sign of the error), from Knuth's two-sum."""
    s = hi + lo
    b = s - hi
    err = (hi - (s - b)) + (lo - b)
    return s, np.sign(err)


def _to_odd(s, side):
    """`s` (the nearest f64 of an exact value on `side` of it) rounded to odd instead."""
    even = (s.view(np.uint64) & np.uint64(1)) == 0
    toward = np.where(side > 0, np.inf, -np.inf)
    return np.where((side != 0) & even & np.isfinite(s), np.nextafter(s, toward), s)


def _int_as_f64(arr):
    """Integers as float64: (nearest, sign of exact - nearest), exact past 2**53 too."""
    arr = np.asarray(arr)
    if arr.dtype.itemsize < 8:
        return arr.astype(np.float64), np.zeros(arr.shape)
    lo = (arr & arr.dtype.type(0xFFFFFFFF)).astype(np.float64)
    hi = (arr >> arr.dtype.type(32)).astype(np.float64) * 2.0**32
    return _two_sum_odd(hi, lo)


def float_result(x64, side, t: str, rounding: str | None):
    """An exact value, given as float64 `x64` with the sign of (exact - x64) in `side`,
    rounded to the float type `t` by `rounding` (rn, rz, rm, rp)."""
    if t == "f64":
        return _directed(x64, side, t, rounding)
    odd = _to_odd(x64, side)  # 53 bits to odd: one more rounding to t is as if from exact
    r = round_nearest(odd, t)
    r64 = r.astype(np.float64)
    with np.errstate(invalid="ignore"):
        exact_side = np.where(odd != r64, np.sign(odd - r64), side)
    exact_side = np.where(np.isnan(r64), 0, exact_side)
    return _directed(r, exact_side, t, rounding)


# ---------------------------------------------------------------------------
# cvt

_INTEGRAL = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}
_TO_INTEGRAL = {"rn": "rni", "rz": "rzi", "rm": "rmi", "rp": "rpi"}
_TO_FLOAT = {"rni": "rn", "rzi": "rz", "rmi": "rm", "rpi": "rp"}


def _saturate_float(x):
    with np.errstate(invalid="ignore"):
        return np.where(np.isnan(x), 0, np.clip(x, 0, 1)).astype(x.dtype)


def float_to_int(x64, t: str):
    """Integral float64 values into the integer type `t`: clamped to its range, NaN to 0."""
    lo, hi = int_range(t)
    dtype = DTYPE[t]
    with np.errstate(all="ignore"):
        nan = np.isnan(x64)
        big = x64 >= float(hi)  # float(hi) may round up past hi (64 bits): clamp before
        small = x64 <= float(lo)
        safe = np.where(nan | big | small, 0.0, x64)
        out = safe.astype(dtype)
    out = np.where(big, dtype(hi), out)
    out = np.where(small, dtype(lo), out)
    return out.astype(dtype)


def _int_to_int(x, src: str, dst: str, sat: bool):
    if not sat:
        return x.astype(DTYPE[dst])
    lo, hi = int_range(dst)
    slo, shi = int_range(src)
    st = DTYPE[src]
    out = x
    if slo < lo:
        out = np.where(out < st(lo), st(lo), out)
    if shi > hi:
        out = np.where(out > st(hi), st(hi), out)
    return np.asarray(out).astype(st).astype(DTYPE[dst])


def cvt(x, src: str, dst: str, rounding: str | None = None, sat: bool = False):
    """`cvt.rounding.sat.dst.src` of the values `x` (of type `src`), as PTX defines it.

    - float to float: a narrowing rounds by `rn` (the default), `rz`, `rm` or `rp`;
      `rni`/`rzi`/`rmi`/`rpi` round to an integral value first; `sat` clamps to [0, 1]
      (NaN to 0).
    - float to integer: rounds by `rni`, `rzi` (the default), `rmi` or `rpi`, then clamps
      to the target's range, NaN giving 0 (PTX saturates every float-to-integer cvt).
    - integer to float: rounded once from the exact integer, by `rn` (default), `rz`, `rm`,
      `rp`; `sat` clamps to [0, 1].
    - integer to integer: the low bits, sign- or zero-extended by the source; `sat` clamps
      to the target's range instead.

    >>> import numpy as np
    >>> cvt(np.array([1e10, -np.inf, np.nan], np.float32), "f32", "s32").tolist()
    [2147483647, -2147483648, 0]
    >>> cvt(np.array([2**24 + 1], np.int32), "s32", "f32", "rp").tolist()
    [16777218.0]
    >>> cvt(np.array([-5, 300], np.int32), "s32", "u8", sat=True).tolist()
    [0, 255]
    """
    x = np.asarray(x)
    if src == "pred" or dst == "pred":
        raise InterpError(f"`cvt` does not convert {src} to {dst}")
    with np.errstate(all="ignore"):
        if lir.is_float(src):
            x64 = x.astype(np.float64)
            if lir.is_float(dst):
                if rounding in _INTEGRAL:
                    out = round_nearest(_INTEGRAL[rounding](x64), dst)
                else:
                    out = float_result(x64, np.zeros(x64.shape), dst, rounding)
                return _saturate_float(out) if sat else out
            integral = _INTEGRAL[_TO_INTEGRAL.get(rounding, rounding) or "rzi"]
            return float_to_int(integral(x64), dst)
        if lir.is_float(dst):
            nearest, side = _int_as_f64(x)
            out = float_result(nearest, side, dst, _TO_FLOAT.get(rounding, rounding))
            return _saturate_float(out) if sat else out
        return _int_to_int(x, src, dst, sat)
