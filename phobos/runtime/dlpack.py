"""Reading an array through DLPack (`__dlpack__`), with `ctypes` and no other module.

`from_dlpack(obj)` asks `obj` for its capsule, reads the `DLManagedTensor` inside
(data, device, ndim, dtype, shape, strides, byte_offset) and returns a
`DLPackArray`: an object offering the interface dict binding reads —
`__array_interface__` for host memory, `__cuda_array_interface__` for CUDA memory —
so `binding.bind(..., from_dlpack=from_dlpack)` applies its usual rules to it.

As the protocol asks, the capsule is renamed `used_dltensor` once consumed, and the
`DLPackArray` owns the tensor: it keeps the producer's object alive and calls the
tensor's deleter when it is itself collected.

    >>> import numpy
    >>> x = numpy.arange(6, dtype=numpy.float32).reshape(2, 3)
    >>> view = from_dlpack(x)
    >>> d = view.__array_interface__
    >>> d["shape"], d["typestr"], d["strides"], d["data"][0] == x.ctypes.data
    ((2, 3), '<f4', (12, 4), True)
    >>> view.device
    (1, 0)
"""

from __future__ import annotations

import ctypes
from ctypes import POINTER, c_char_p, c_int32, c_int64, c_uint8, c_uint16, c_uint64, c_void_p
from typing import Any

# DLDeviceType
CPU = 1
CUDA = 2
CUDA_HOST = 3  # pinned host memory
CUDA_MANAGED = 13
HOST_DEVICES = (CPU, CUDA_HOST)
DEVICE_DEVICES = (CUDA, CUDA_MANAGED)

# The most axes a tensor read here has: numpy's NPY_MAXDIMS. A larger (or negative)
# `ndim` is a corrupt tensor, whose shape must not be read.
MAX_DIMS = 64

# DLDataTypeCode -> the typestr kind
_KINDS = {0: "i", 1: "u", 2: "f", 6: "b"}
BFLOAT = 4


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", c_void_p),
        ("device", DLDevice),
        ("ndim", c_int32),
        ("dtype", DLDataType),
        ("shape", POINTER(c_int64)),
        ("strides", POINTER(c_int64)),
        ("byte_offset", c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [
    ("dl_tensor", DLTensor),
    ("manager_ctx", c_void_p),
    ("deleter", _DELETER),
]

_NAME = b"dltensor"
_USED = c_char_p(b"used_dltensor")  # the capsule keeps this pointer: it must live forever

_api = ctypes.pythonapi
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, c_char_p]
_api.PyCapsule_GetPointer.restype = c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, c_char_p]


class DLPackError(TypeError):
    """A capsule this runtime cannot read; the message says why."""


class DLPackArray:
    """An array read from a DLPack capsule: its interface dict, its `device`
    ((DLPack device type, id)), and ownership of the tensor until collected."""

    def __init__(self, owner: Any, managed: ctypes._Pointer, interface: dict, device):
        self.owner = owner  # the producer's array: its memory stays alive with us
        self._managed = managed
        self.device = device
        name = "__cuda_array_interface__" if device[0] in DEVICE_DEVICES else "__array_interface__"
        setattr(self, name, interface)

    def __del__(self):
        managed, self._managed = self._managed, None
        if managed is not None and managed.contents.deleter:
            managed.contents.deleter(managed)

    def __repr__(self) -> str:
        return f"<DLPackArray of {type(self.owner).__name__} on device {self.device}>"


def from_dlpack(obj: Any, stream: int | None = None) -> DLPackArray:
    """Consume `obj.__dlpack__()` and return a `DLPackArray` over its memory.

    `stream` is passed to a CUDA producer (`__dlpack__(stream=...)`, the stream the
    consumer will use: 1 is the legacy default one), so it orders its own work first.
    """
    device = _device_of(obj)
    if device is not None and device[0] in DEVICE_DEVICES:
        capsule = obj.__dlpack__(stream=1 if stream is None else stream)
    else:
        capsule = obj.__dlpack__()
    if not _api.PyCapsule_IsValid(capsule, _NAME):
        raise DLPackError(
            "`__dlpack__()` did not return a `dltensor` capsule (already consumed, or a "
            "versioned capsule this runtime does not read)"
        )
    address = _api.PyCapsule_GetPointer(capsule, _NAME)
    managed = ctypes.cast(address, POINTER(DLManagedTensor))
    # a refusal here leaves the capsule unused, so its producer frees the tensor
    interface, dev = _interface(managed.contents.dl_tensor)
    # From here the tensor is ours: the producer's capsule destructor leaves a
    # `used_dltensor` alone, and `DLPackArray.__del__` calls the deleter.
    if _api.PyCapsule_SetName(capsule, _USED) != 0:
        raise DLPackError("the DLPack capsule could not be marked as used")
    return DLPackArray(obj, managed, interface, dev)


def _device_of(obj: Any) -> tuple[int, int] | None:
    try:
        kind, ordinal = obj.__dlpack_device__()
    except Exception:
        return None
    return int(kind), int(ordinal)


def _interface(t: DLTensor) -> tuple[dict, tuple[int, int]]:
    device = (t.device.device_type, t.device.device_id)
    if device[0] not in HOST_DEVICES + DEVICE_DEVICES:
        raise DLPackError(f"its memory is on DLPack device type {device[0]}, not CPU or CUDA")
    dtype = t.dtype
    if dtype.lanes != 1:
        raise DLPackError(f"its elements are vectors of {dtype.lanes} lanes")
    if dtype.bits % 8:
        raise DLPackError(f"its elements are {dtype.bits} bits wide, not whole bytes")
    size = dtype.bits // 8
    descr = None
    if dtype.code == BFLOAT and size == 2:
        typestr = "<V2"
        descr = [("bfloat16", "<V2")]
    elif dtype.code in _KINDS:
        typestr = ("|" if size == 1 else "<") + _KINDS[dtype.code] + str(size)
    else:
        raise DLPackError(f"its DLPack type code {dtype.code} is not an element type")
    if not 0 <= t.ndim <= MAX_DIMS:
        raise DLPackError(f"its `ndim` is {t.ndim}, not 0 to {MAX_DIMS}")
    if t.ndim and not t.shape:
        raise DLPackError(f"its `ndim` is {t.ndim}, but its `shape` is a null pointer")
    # Negative extents and null pointers pass through as they are: binding refuses them.
    shape = tuple(t.shape[i] for i in range(t.ndim))
    strides = None
    if t.strides:
        strides = tuple(t.strides[i] * size for i in range(t.ndim))
    interface = {
        "shape": shape,
        "typestr": typestr,
        "data": ((t.data or 0) + t.byte_offset, False),
        "strides": strides,
        "version": 3,
    }
    if descr is not None:
        interface["descr"] = descr
    return interface, device
