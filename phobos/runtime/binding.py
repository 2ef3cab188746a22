"""Binding a launch's arguments to a kernel's parameters: the rules of PYTHON.md "Launching".

One set of rules for every launch, on the CPU interpreter and on the GPU, so a launch
that binds here binds there. `bind` reads each tensor argument's
`__array_interface__` (host memory) or `__cuda_array_interface__` (device memory)
dict, never its data, and needs no numpy. Per parameter, in parameter order, after the
argument count:

1. a tensor parameter takes an array: an object with `__array_interface__`,
   `__cuda_array_interface__` or (where the launch path reads it) `__dlpack__`, whose
   dict is well formed as both protocols (version 3) define it: `shape` a tuple of
   ints (a bool is not one), `strides` None or a tuple of as many ints, `typestr` a
   byte order, a kind and a size (`<f4`; never `<f04`), `data` a (pointer, read-only)
   pair of an int and a bool, `version` an int, no `mask`; a scalar parameter takes a
   Python or numpy scalar, never an array or a string;
2. element type: the typestr names the declared type (`ELEMENT_TYPES`), little-endian;
3. rank, then no extent negative and every fixed (literal) extent equal to the
   declared one;
4. row-major and contiguous: strides None or the C-order strides (an axis of extent 1
   may have any stride, as numpy allows);
5. a dynamic extent (a dimension name) is bound from the first tensor that has it and
   must agree in every other one; it is a multiple of 4 (the row-pitch ABI: SPEC.md
   "Tensor extents are assumed to be multiples of 4") and of the tile `@aligned`
   promises for it, the tile read from the kernel's variant when it is an `@autotune`
   name, and fits the kernel's index (below 2**31 for 32-bit indices);
6. the data pointer is a 64-bit address, null only for an array with no elements; it
   is a multiple of the element size, and of 16 bytes (one vector access) for a tensor
   with an `@aligned` dimension, whose rows the kernel may read 16 bytes at a time;
7. writable: a read-only array is refused for every tensor parameter (a kernel may
   write any tensor it is given; nothing yet says which it only reads);
8. device: a host array for a CPU launch, a device array for a GPU one; a CPU launch
   that copies (`PHOBOS_INTERPRET=1`) takes either.

A scalar is converted to its declared type: a `bool` parameter takes `True`/`False`
(or a numpy bool) and nothing else, as SPEC.md converts nothing to or from bool; an
integer parameter an integer (not a bool, not a float) that fits the type; a float
parameter any real number but a bool, rounded to the type (`phobos.semantics`), a
finite value that overflows it refused.

bf16 has no typestr of its own: an array is taken as bf16 when its typestr is `<V2`
and either its `descr` names `bfloat16` or its `dtype` is named `bfloat16` (numpy with
`ml_dtypes`; torch's `torch.bfloat16`). A bare `<V2` is refused as not bf16.

    >>> from phobos.sema import hir
    >>> f32 = hir.Scalar("f32")
    >>> x = hir.Sym("x", 1, "param", hir.TensorT(f32, (hir.Dyn("N"),)))
    >>> alpha = hir.Sym("alpha", 2, "param", f32)
    >>> class Host:  # what numpy.zeros(8, numpy.float32) exposes
    ...     __array_interface__ = {"shape": (8,), "typestr": "<f4", "data": (4096, False),
    ...                            "strides": None, "version": 3}
    >>> bound = bind([x, alpha], (Host(), 0.1), kernel_name="scale")
    >>> bound.dims, bound.scalars
    ({'N': 8}, {'alpha': 0.10000000149011612})
    >>> bind([x, alpha], (Host(), "0.1"), kernel_name="scale")
    Traceback (most recent call last):
    ...
    phobos.runtime.errors.ArgumentTypeError: `scale`: argument `alpha` is a str, but the kernel declares f32
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from phobos.runtime.errors import ArgumentTypeError, ArgumentValueError, GridError
from phobos.sema import hir
from phobos.semantics import types as scalar_types
from phobos.semantics.floats import round_to

HOST = "__array_interface__"
DEVICE = "__cuda_array_interface__"

# (typestr kind, bytes) -> the Phobos element type; byte order `<`, `|` or `=`.
ELEMENT_TYPES: dict[tuple[str, int], str] = {
    ("f", 2): "f16",
    ("f", 4): "f32",
    ("f", 8): "f64",
    ("i", 1): "i8",
    ("i", 4): "i32",
    ("i", 8): "i64",
    ("u", 1): "u8",
    ("u", 2): "u16",
    ("u", 4): "u32",
    ("b", 1): "bool",
}
ITEM_SIZES = {"bf16": 2, **{name: size for (_, size), name in ELEMENT_TYPES.items()}}
# numpy's names, for messages that tell the user what to convert to.
NUMPY_NAMES = {
    "f16": "float16",
    "bf16": "bfloat16",
    "f32": "float32",
    "f64": "float64",
    "i8": "int8",
    "i32": "int32",
    "i64": "int64",
    "u8": "uint8",
    "u16": "uint16",
    "u32": "uint32",
    "bool": "bool",
}
_KIND_NAMES = {"f": "float", "i": "int", "u": "uint", "c": "complex", "b": "bool", "V": "void"}

EXTENT_MULTIPLE = 4  # SPEC.md "Bounds and masking": the row-pitch ABI
VECTOR_BYTES = 16  # SPEC.md "@aligned": 16-byte vector access into aligned rows
ADDRESS_LIMIT = 1 << 64  # a data pointer is an unsigned 64-bit address
# A typestr as both protocols spell one: byte order, kind letter, size in bytes.
_TYPESTR = re.compile(r"[<>|=][a-zA-Z][1-9][0-9]*")

# CUDA's grid limits (gridDim.x, .y, .z); the CPU path keeps them so a grid that runs
# here runs on the card.
GRID_LIMITS = (2**31 - 1, 65535, 65535)


# ---------------------------------------------------------------------------
# Reading an array


@dataclass(frozen=True)
class ArrayInfo:
    """What binding reads of one array: its interface dict, decoded.

    `interface` is `HOST` or `DEVICE`; `elem` the Phobos element type or None when
    the typestr names none; `strides` in bytes, None when C-contiguous.
    """

    obj: Any
    interface: str
    shape: tuple[int, ...]
    strides: tuple[int, ...] | None
    typestr: str
    elem: str | None
    ptr: int
    readonly: bool

    @property
    def on_device(self) -> bool:
        return self.interface == DEVICE

    @property
    def itemsize(self) -> int:
        return int(self.typestr[2:]) if self.typestr[2:].isdigit() else 0

    @property
    def dtype_name(self) -> str:
        """The element type as numpy names it: `float64`, `int16`, `bfloat16`."""
        if self.elem is not None:
            return NUMPY_NAMES[self.elem]
        order, kind, size = self.typestr[:1], self.typestr[1:2], self.typestr[2:]
        if kind in _KIND_NAMES and size.isdigit():
            name = _KIND_NAMES[kind] + ("" if kind == "b" else str(8 * int(size)))
            return f"big-endian {name}" if order == ">" else name
        return repr(self.typestr)


class _Unreadable(Exception):
    """An interface dict binding cannot decode; the message says why."""


def _interface(obj: Any, name: str) -> Any:
    """`obj.<name>`, or None when it has none; a property that raises is unreadable."""
    try:
        return getattr(obj, name, None)
    except Exception as exc:  # torch raises TypeError for a bf16 __cuda_array_interface__
        raise _Unreadable(f"reading its `{name}` failed: {exc}") from None


def has_interface(obj: Any, name: str) -> bool:
    """Whether `obj` offers the interface `name` (`HOST` or `DEVICE`) at all."""
    try:
        return getattr(obj, name, None) is not None
    except Exception:
        return True  # present but unreadable: describe() says why


def is_array(obj: Any) -> bool:
    """Whether `obj` is something a tensor parameter could take."""
    return has_interface(obj, HOST) or has_interface(obj, DEVICE) or hasattr(obj, "__dlpack__")


def describe(obj: Any, prefer: str = HOST) -> ArrayInfo | None:
    """The `ArrayInfo` of `obj` read through `prefer` if it has it, else the other
    interface; None when it has neither.

        >>> class Dev:
        ...     __cuda_array_interface__ = {"shape": (4, 8), "typestr": "<f2",
        ...         "data": (256, False), "strides": None, "version": 3}
        >>> info = describe(Dev())
        >>> info.on_device, info.elem, info.shape
        (True, 'f16', (4, 8))
    """
    other = DEVICE if prefer == HOST else HOST
    for name in (prefer, other):
        found = _interface(obj, name)
        if found is not None:
            return _decode(obj, name, found)
    return None


def _decode(obj: Any, name: str, d: Any) -> ArrayInfo:
    """The `ArrayInfo` of `d`, `obj`'s interface dict `name`, checked entry by entry."""
    if not isinstance(d, Mapping):
        raise _Unreadable(f"its `{name}` is {_kind_of(d)}, not a dict")
    for key in ("shape", "typestr", "data", "version"):  # each protocol requires all four
        if key not in d:
            raise _Unreadable(f"its `{name}` has no `{key}`")
    shape = _ints(name, "shape", d["shape"])
    strides = d.get("strides")
    if strides is not None:
        strides = _ints(name, "strides", strides)
        if len(strides) != len(shape):
            raise _Unreadable(
                f"its `{name}` has {len(strides)} strides {_shape(strides)} for shape "
                f"{_shape(shape)}, of rank {len(shape)}"
            )
    typestr = d["typestr"]
    if not (isinstance(typestr, str) and _TYPESTR.fullmatch(typestr)):
        raise _Unreadable(f"its `{name}` typestr {typestr!r} is not a typestr such as '<f4'")
    data = d["data"]
    if not (type(data) is tuple and len(data) == 2 and _is_int(data[0]) and _is_flag(data[1])):
        raise _Unreadable(
            f"its `{name}` data {data!r} is not a pair (pointer, read-only) of an int and a bool"
        )
    if not _is_int(d["version"]):
        raise _Unreadable(f"its `{name}` version {d['version']!r} is not an int")
    if d.get("mask") is not None:
        raise _Unreadable("it is a masked array, which a kernel cannot read")
    elem = _element_type(obj, typestr, d.get("descr"))
    return ArrayInfo(obj, name, shape, strides, typestr, elem, int(data[0]), bool(data[1]))


def _ints(name: str, key: str, values: Any) -> tuple[int, ...]:
    if not isinstance(values, tuple):
        raise _Unreadable(f"its `{name}` {key} is {_kind_of(values)}, not a tuple of ints")
    for axis, n in enumerate(values):
        if not _is_int(n):
            raise _Unreadable(
                f"its `{name}` {key} {values!r} holds {_kind_of(n)} on axis {axis}, not an int"
            )
    return tuple(int(n) for n in values)


def _is_int(value: Any) -> bool:
    """An integer, numpy's too, but not a bool: an extent or pointer `True` is a slip."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_flag(value: Any) -> bool:
    return isinstance(value, bool) or _is_numpy_bool(value)


def _element_type(obj: Any, typestr: str, descr: Any) -> str | None:
    order, kind, size = typestr[0], typestr[1], typestr[2:]
    if order not in "<|=":
        return None
    if (kind, int(size)) == ("V", 2) and _names_bfloat16(obj, descr):
        return "bf16"
    return ELEMENT_TYPES.get((kind, int(size)))


def _names_bfloat16(obj: Any, descr: Any) -> bool:
    if isinstance(descr, list) and descr and isinstance(descr[0], tuple) and descr[0]:
        if "bfloat16" in str(descr[0][0]):
            return True
    try:
        dtype = obj.dtype
    except Exception:
        return False
    return str(getattr(dtype, "name", dtype)).rsplit(".", 1)[-1] == "bfloat16"


def c_strides(shape: Sequence[int], itemsize: int) -> tuple[int, ...]:
    """The strides, in bytes, of a row-major contiguous array.

    >>> c_strides((3, 4, 5), 4)
    (80, 20, 4)
    """
    strides = []
    step = itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def is_c_contiguous(info: ArrayInfo) -> bool:
    """Strides None, or C order on every axis longer than 1 (any stride on the others)."""
    if info.strides is None or 0 in info.shape:
        return True
    expected = c_strides(info.shape, info.itemsize)
    return all(n == 1 or s == e for n, s, e in zip(info.shape, info.strides, expected, strict=True))


# ---------------------------------------------------------------------------
# Binding


@dataclass
class Bound:
    """A launch's arguments bound to the kernel's parameters.

    `values` maps every parameter name, in parameter order, to what it takes: the
    argument object for a tensor, the converted value for a scalar. `arrays` holds
    each tensor's `ArrayInfo`, `scalars` each scalar's value, `dims` each dynamic
    extent, in the order the parameters first give it.
    """

    kernel_name: str
    values: dict[str, Any] = field(default_factory=dict)
    arrays: dict[str, ArrayInfo] = field(default_factory=dict)
    scalars: dict[str, Any] = field(default_factory=dict)
    dims: dict[str, int] = field(default_factory=dict)


def bind(
    params: Sequence[hir.Sym],
    args: Sequence[Any],
    *,
    kernel_name: str,
    variant: Mapping[str, int] | Sequence[tuple[str, int]] = (),
    aligned: Mapping[str, int | str] | None = None,
    target: str = "cpu",
    copy_device: bool = False,
    from_dlpack: Callable[[Any], Any] | None = None,
    index_width: int = 32,
) -> Bound:
    """Bind `args` to `params` (a checked kernel's), or raise a `LaunchError`.

    `variant` gives the `@autotune` constants an `@aligned` tile may name; `aligned`
    is `KernelAttributes.aligned`. `target` is "cpu" (host arrays, or device ones too
    with `copy_device`, for a launch that copies them to the host) or "gpu". An array
    offering only `__dlpack__` is turned into one with an interface by `from_dlpack`,
    and refused when none is given. `index_width` (32 or 64) is the kernel's index
    type, which every dynamic extent must fit. `bind_kernel` reads all of these off a
    `hir.Kernel`.
    """
    if target not in ("cpu", "gpu"):
        raise ValueError(f"target is 'cpu' or 'gpu', not {target!r}")
    binder = _Binder(
        kernel_name, dict(variant), dict(aligned or {}), target, copy_device, index_width
    )
    binder.count(params, args)
    for param, arg in zip(params, args, strict=True):
        if isinstance(param.type, hir.TensorT):
            binder.tensor(param, param.type, arg, from_dlpack)
        elif isinstance(param.type, hir.Scalar):
            binder.scalar(param, param.type, arg)
        else:
            raise TypeError(
                f"parameter `{param.name}` has type {param.type}, not a tensor or scalar"
            )
    return binder.bound


def bind_kernel(
    kernel: hir.Kernel,
    args: Sequence[Any],
    *,
    target: str = "cpu",
    copy_device: bool = False,
    from_dlpack: Callable[[Any], Any] | None = None,
) -> Bound:
    """`bind` with the parameters, variant, `@aligned` promises and index width of
    `kernel`."""
    return bind(
        kernel.params,
        args,
        kernel_name=kernel.name,
        variant=kernel.variant,
        aligned=getattr(kernel.attrs, "aligned", None),
        target=target,
        copy_device=copy_device,
        from_dlpack=from_dlpack,
        index_width=kernel.index_width,
    )


def _kind_of(value: Any) -> str:
    """How a message names a value of the wrong kind: `a str`, `an int`, `None`."""
    if value is None:
        return "None"
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


class _Binder:
    def __init__(self, kernel, variant, aligned, target, copy_device, index_width):
        self.kernel = kernel
        self.variant = variant
        self.aligned = aligned
        self.target = target
        self.copy_device = copy_device
        self.index_width = index_width
        self.bound = Bound(kernel)
        self.dim_source: dict[str, str] = {}  # a dynamic extent -> the parameter that bound it

    def type_error(self, param: str | None, message: str, help: str | None = None):
        return ArgumentTypeError(self.kernel, param, message, help=help)

    def value_error(self, param: str, message: str, help: str | None = None):
        return ArgumentValueError(self.kernel, param, message, help=help)

    # -- 0. the count ----------------------------------------------------------

    def count(self, params, args) -> None:
        if len(args) == len(params):
            return
        names = ", ".join(f"`{p.name}`" for p in params) or "none"
        missing = [p.name for p in params[len(args) :]]
        detail = (
            (f"`{missing[0]}` is missing" if len(missing) == 1 else "too few")
            if missing
            else f"{len(args) - len(params)} too many"
        )
        raise self.type_error(
            missing[0] if missing else None,
            f"the kernel takes {len(params)} argument{'s' * (len(params) != 1)}, but "
            f"{len(args)} {'were' if len(args) != 1 else 'was'} given ({detail})",
            help=f"the parameters are {names}",
        )

    # -- scalars -----------------------------------------------------------------

    def scalar(self, param: hir.Sym, declared: hir.Scalar, arg: Any) -> None:
        name = param.name
        # numpy's scalars offer __array_interface__ too; a number is never an array here
        if is_array(arg) and not isinstance(arg, numbers.Number) and not _is_numpy_bool(arg):
            raise self.type_error(
                name,
                f"argument `{name}` is an array, but the kernel declares the scalar {declared}",
                help="pass a Python number; `x.item()` takes one out of a one-element array",
            )
        t = scalar_types.scalar(declared.name)
        if t.is_bool:
            value = self._bool(name, declared, arg)
        elif t.is_integer:
            value = self._int(name, declared, t, arg)
        else:
            value = self._float(name, declared, t, arg)
        self.bound.values[name] = value
        self.bound.scalars[name] = value

    def _bool(self, name, declared, arg) -> bool:
        if isinstance(arg, bool) or _is_numpy_bool(arg):
            return bool(arg)
        raise self.type_error(
            name,
            f"argument `{name}` is {_kind_of(arg)}, but the kernel declares bool",
            help="pass `True` or `False`: nothing converts to bool",
        )

    def _int(self, name, declared, t, arg) -> int:
        if isinstance(arg, bool) or _is_numpy_bool(arg) or not isinstance(arg, numbers.Integral):
            raise self.type_error(
                name, f"argument `{name}` is {_kind_of(arg)}, but the kernel declares {declared}"
            )
        value = int(arg)
        if not t.lo <= value <= t.hi:
            raise self.value_error(
                name,
                f"argument `{name}` is {value}, which does not fit {declared} ({t.lo} to {t.hi})",
            )
        return value

    def _float(self, name, declared, t, arg) -> float:
        if isinstance(arg, bool) or _is_numpy_bool(arg) or not isinstance(arg, numbers.Real):
            raise self.type_error(
                name, f"argument `{name}` is {_kind_of(arg)}, but the kernel declares {declared}"
            )
        try:
            value = float(arg)
        except OverflowError:  # an int past every float
            raise self.value_error(
                name, f"argument `{name}` is an integer too large for {declared}"
            ) from None
        rounded = round_to(value, t)
        if math.isinf(rounded) and not math.isinf(value):
            raise self.value_error(
                name, f"argument `{name}` is {value!r}, which overflows {declared} to infinity"
            )
        return rounded

    # -- tensors -----------------------------------------------------------------

    def tensor(self, param: hir.Sym, declared: hir.TensorT, arg: Any, from_dlpack) -> None:
        name = param.name
        info = self._describe(name, declared, arg, from_dlpack)
        self._element(name, declared, info)
        self._shape(name, declared, info)
        self._contiguous(name, info)
        self._dims(name, declared, info)
        self._pointer(name, info)
        self._alignment(name, declared, info)
        if info.readonly:
            raise self.value_error(
                name,
                f"argument `{name}` is read-only, but a kernel may write any tensor it is given",
                help="pass a writable array (for numpy, `x.copy()`)",
            )
        self._device(name, info)
        self.bound.values[name] = info.obj
        self.bound.arrays[name] = info

    def _describe(self, name, declared, arg, from_dlpack) -> ArrayInfo:
        prefer = DEVICE if self.target == "gpu" else HOST
        try:
            info = describe(arg, prefer)
            if info is None and hasattr(arg, "__dlpack__") and from_dlpack is not None:
                try:
                    converted = from_dlpack(arg)
                except Exception as exc:
                    raise _Unreadable(f"its DLPack capsule cannot be read here: {exc}") from None
                info = describe(converted, prefer)
        except _Unreadable as exc:
            raise self.type_error(name, f"argument `{name}` cannot be bound: {exc}") from None
        if info is not None:
            return info
        if hasattr(arg, "__dlpack__"):
            raise self.type_error(
                name,
                f"argument `{name}` offers only `__dlpack__`, which this launch does not read yet",
                help="pass an array with `__array_interface__` or `__cuda_array_interface__`",
            )
        raise self.type_error(
            name,
            f"argument `{name}` is {_kind_of(arg)}, but the kernel declares {declared}",
            help="pass an array: an object with `__array_interface__` (numpy), "
            "`__cuda_array_interface__` or `__dlpack__`",
        )

    def _element(self, name, declared, info: ArrayInfo) -> None:
        if info.elem == declared.elem.name:
            return
        want = NUMPY_NAMES.get(declared.elem.name, declared.elem.name)
        raise self.type_error(
            name,
            f"argument `{name}` has element type {info.dtype_name}, but the kernel declares "
            f"{declared.elem}",
            help=f"convert it first, as numpy's `x.astype(numpy.{want})` does"
            if declared.elem.name != "bf16"
            else "pass a bfloat16 array (torch.bfloat16, or numpy with ml_dtypes)",
        )

    def _shape(self, name, declared, info: ArrayInfo) -> None:
        if len(info.shape) != len(declared.dims):
            raise self.type_error(
                name,
                f"argument `{name}` has rank {len(info.shape)} (shape {_shape(info.shape)}), "
                f"but the kernel declares rank {len(declared.dims)}: {declared}",
            )
        for axis, (dim, n) in enumerate(zip(declared.dims, info.shape, strict=True)):
            if n < 0:
                raise self.value_error(
                    name,
                    f"argument `{name}` has extent {n} on axis {axis} (shape "
                    f"{_shape(info.shape)}), but no extent is negative",
                )
            if isinstance(dim, int) and dim != n:
                raise self.value_error(
                    name,
                    f"argument `{name}` has extent {n} on axis {axis}, but the kernel declares "
                    f"{dim} ({declared})",
                )

    def _contiguous(self, name, info: ArrayInfo) -> None:
        if is_c_contiguous(info):
            return
        expected = c_strides(info.shape, info.itemsize)
        raise self.value_error(
            name,
            f"argument `{name}` is not row-major and contiguous: its strides are "
            f"{_shape(info.strides)} bytes, where row-major would be {_shape(expected)}",
            help="pass a contiguous copy (for numpy, `numpy.ascontiguousarray(x)`)",
        )

    def _dims(self, name, declared, info: ArrayInfo) -> None:
        for axis, (dim, n) in enumerate(zip(declared.dims, info.shape, strict=True)):
            if not isinstance(dim, hir.Dyn):
                continue
            extent = dim.name
            if extent in self.bound.dims:
                if self.bound.dims[extent] != n:
                    first = self.dim_source[extent]
                    raise self.value_error(
                        name,
                        f"argument `{name}` has {extent} = {n} (axis {axis}), but argument "
                        f"`{first}` bound {extent} = {self.bound.dims[extent]}",
                        help=f"every tensor with the extent {extent} must agree on it",
                    )
                continue
            self._extent_multiple(name, extent, n)
            self._extent_fits(name, extent, n)
            self.bound.dims[extent] = n
            self.dim_source[extent] = name

    def _extent_multiple(self, name, extent, n) -> None:
        if n % EXTENT_MULTIPLE:
            raise self.value_error(
                name,
                f"argument `{name}` binds {extent} = {n}, which is not a multiple of "
                f"{EXTENT_MULTIPLE}",
                help=f"tensor extents are multiples of {EXTENT_MULTIPLE} (the row pitch); pad "
                f"the array to {n + EXTENT_MULTIPLE - n % EXTENT_MULTIPLE}",
            )
        tile = self._aligned_tile(extent)
        if tile is not None and n % tile:
            spelled = self.aligned[extent]
            via = f"{spelled} = {tile}" if isinstance(spelled, str) else str(tile)
            raise self.value_error(
                name,
                f"argument `{name}` binds {extent} = {n}, which is not a multiple of {via}, as "
                f"`@aligned({extent} = {spelled})` promises",
                help=f"pad {extent} to a multiple of {tile}, or drop the `@aligned` promise",
            )

    def _extent_fits(self, name, extent, n) -> None:
        # The GPU code holds each dynamic extent in a signed index of this width; the
        # CPU path refuses the same, so a launch that binds here binds on the card.
        if n > (1 << (self.index_width - 1)) - 1:
            raise self.value_error(
                name,
                f"argument `{name}` binds {extent} = {n}, more than a {self.index_width}-bit "
                "index holds",
                help="compile the kernel with 64-bit indices",
            )

    def _aligned_tile(self, extent: str) -> int | None:
        tile = self.aligned.get(extent)
        if isinstance(tile, str):
            if tile not in self.variant:
                raise ValueError(f"`@aligned({extent} = {tile})`: the variant gives no `{tile}`")
            tile = self.variant[tile]
        return tile

    def _pointer(self, name, info: ArrayInfo) -> None:
        if not 0 <= info.ptr < ADDRESS_LIMIT:
            raise self.value_error(
                name,
                f"argument `{name}` has the data pointer {info.ptr}, which is not a 64-bit address",
            )
        if info.ptr == 0 and 0 not in info.shape:
            raise self.value_error(
                name,
                f"argument `{name}` has a null data pointer, but shape {_shape(info.shape)}",
                help="only an array with no elements may have a null data pointer",
            )

    def _alignment(self, name, declared, info: ArrayInfo) -> None:
        size = ITEM_SIZES[info.elem] if info.elem else max(info.itemsize, 1)
        need, why = size, f"its element size, {size} bytes"
        promised = [
            d.name for d in declared.dims if isinstance(d, hir.Dyn) and d.name in self.aligned
        ]
        if promised:
            need = max(need, VECTOR_BYTES)
            why = (
                f"{VECTOR_BYTES} bytes, for the vector access `@aligned({promised[0]} = ..)` allows"
            )
        elif self.target == "gpu":
            # The GPU code reads and writes tensors with vector accesses of up to 16 bytes
            # at offsets that are multiples of 4 elements; the base must keep them aligned.
            need = max(need, VECTOR_BYTES)
            why = f"{VECTOR_BYTES} bytes, for the GPU's vector accesses"
        if info.ptr % need:
            raise self.value_error(
                name,
                f"argument `{name}` starts at address {info.ptr:#x}, which is not a multiple of "
                f"{why}",
                help="pass an array that starts on such a boundary (a fresh allocation does)",
            )

    def _device(self, name, info: ArrayInfo) -> None:
        if self.target == "gpu" and not info.on_device:
            raise self.value_error(
                name,
                f"argument `{name}` is in host memory (`{HOST}`), but the kernel runs on the GPU",
                help="copy it to the device first, or set PHOBOS_INTERPRET=1 to run on the CPU",
            )
        if self.target == "cpu" and info.on_device and not self.copy_device:
            raise self.value_error(
                name,
                f"argument `{name}` is in device memory (`{DEVICE}`), but the kernel runs on "
                "the CPU",
                help="set PHOBOS_INTERPRET=1 to copy device arrays to the host and back",
            )


def _is_numpy_bool(value: Any) -> bool:
    t = type(value)
    return t.__module__ == "numpy" and t.__name__ in ("bool_", "bool")


def _shape(dims: Sequence[int] | None) -> str:
    return "(" + ", ".join(map(str, dims or ())) + ("," if dims and len(dims) == 1 else "") + ")"


# ---------------------------------------------------------------------------
# The grid


def resolve_grid(
    grid: Any,
    meta: Mapping[str, int],
    *,
    kernel_name: str,
    persistent: bool = False,
    persistent_ctas: int | None = None,
) -> tuple[int, ...]:
    """The block counts a launch runs: `grid` itself or, when it is callable, what it
    returns given `meta` (the bound extents and the `@autotune` constants by name).

    A grid is 1 to 3 positive ints (a tuple or list; a bare int means one axis),
    within CUDA's limits. A `@persistent` kernel takes `()` and sizes its own grid:
    `persistent_ctas` CTAs on the first axis.

        >>> resolve_grid(lambda m: ((m["N"] + m["BLOCK"] - 1) // m["BLOCK"],),
        ...              {"N": 1000, "BLOCK": 16}, kernel_name="saxpy")
        (63,)
        >>> resolve_grid((0,), {}, kernel_name="saxpy")
        Traceback (most recent call last):
        ...
        phobos.runtime.errors.GridError: `saxpy`: the grid's block count 0 on axis x is not positive
    """
    given = grid
    if callable(grid):
        grid = grid(dict(meta))
    if isinstance(grid, numbers.Integral) and not isinstance(grid, bool):
        grid = (grid,)
    if not isinstance(grid, (tuple, list)):
        source = (
            f"the grid function returned {_kind_of(grid)}"
            if callable(given)
            else (f"the grid is {_kind_of(grid)}")
        )
        raise GridError(
            kernel_name,
            None,
            f"{source}, not a tuple of 1 to 3 block counts",
            help="launch as `kernel[(blocks,)](...)`, or give a function of the extents and "
            'constants, as in `kernel[lambda meta: (meta["N"] // meta["BLOCK"],)](...)`',
        )
    if len(grid) == 0:
        if persistent and persistent_ctas:
            return (persistent_ctas,)
        raise GridError(
            kernel_name,
            None,
            "the grid is empty, which only a `@persistent` kernel takes",
            help="give 1 to 3 block counts, as in `kernel[(blocks,)](...)`",
        )
    if persistent:
        raise GridError(
            kernel_name,
            None,
            "a `@persistent` kernel sizes its own grid",
            help="launch it as `kernel[()](...)`",
        )
    if len(grid) > 3:
        raise GridError(kernel_name, None, f"the grid has {len(grid)} axes, more than 3")
    counts = []
    for axis, n in zip("xyz", grid, strict=False):
        if isinstance(n, bool) or not isinstance(n, numbers.Integral):
            raise GridError(
                kernel_name,
                None,
                f"the grid's block count on axis {axis} is {_kind_of(n)}, not an int",
                help="a float count can use `//` or `math.ceil`: `(N + BLOCK - 1) // BLOCK`",
            )
        n = int(n)
        if n <= 0:
            raise GridError(
                kernel_name, None, f"the grid's block count {n} on axis {axis} is not positive"
            )
        limit = GRID_LIMITS["xyz".index(axis)]
        if n > limit:
            raise GridError(
                kernel_name,
                None,
                f"the grid's block count {n} on axis {axis} is more than CUDA allows ({limit})",
            )
        counts.append(n)
    return tuple(counts)
