"""Reading arrays through DLPack (phobos.runtime.dlpack): numpy's own capsules on the
CPU, and a hand-made CUDA capsule for the device path and the deleter."""

from __future__ import annotations

import ctypes
import gc
import sys

import pytest

from phobos.runtime.binding import bind
from phobos.runtime.dlpack import (
    DLDataType,
    DLDevice,
    DLManagedTensor,
    DLPackError,
    DLTensor,
    from_dlpack,
)
from phobos.sema import hir

np = pytest.importorskip("numpy")


class OnlyDLPack:
    """An array offering nothing but the DLPack protocol; keeps the capsules it gave."""

    def __init__(self, array):
        self.array = array
        self.capsules = []

    def __dlpack__(self, stream=None):
        capsule = self.array.__dlpack__()
        self.capsules.append(capsule)
        return capsule

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


@pytest.mark.parametrize(
    ("dtype", "typestr"),
    [
        ("float16", "<f2"),
        ("float32", "<f4"),
        ("float64", "<f8"),
        ("int8", "|i1"),
        ("int32", "<i4"),
        ("int64", "<i8"),
        ("uint8", "|u1"),
        ("uint16", "<u2"),
        ("uint32", "<u4"),
        ("bool", "|b1"),
    ],
)
def test_numpy_element_types(dtype, typestr):
    x = np.zeros((4, 8), dtype)
    d = from_dlpack(x).__array_interface__
    assert d["typestr"] == typestr and d["shape"] == (4, 8)
    assert d["data"] == (x.ctypes.data, False)


def test_strides_and_offsets_in_bytes():
    base = np.arange(64, dtype=np.float32).reshape(8, 8)
    view = base[2:, 1::2]
    d = from_dlpack(view).__array_interface__
    assert d["strides"] == view.strides == (32, 8)
    assert d["data"][0] == view.ctypes.data  # data + byte_offset
    assert from_dlpack(np.array(3.0, np.float32)).__array_interface__["shape"] == ()


def test_capsule_is_marked_used_and_the_owner_kept_then_released():
    x = np.arange(8, dtype=np.float32)
    producer = OnlyDLPack(x)
    refs = sys.getrefcount(x)
    view = from_dlpack(producer)
    capsule = producer.capsules[0]
    is_valid = ctypes.pythonapi.PyCapsule_IsValid
    is_valid.argtypes, is_valid.restype = [ctypes.py_object, ctypes.c_char_p], ctypes.c_int
    assert is_valid(capsule, b"used_dltensor") and not is_valid(capsule, b"dltensor")
    assert view.owner is producer and sys.getrefcount(x) > refs  # the tensor holds x
    del view, capsule
    gc.collect()
    assert sys.getrefcount(x) == refs  # the deleter ran: numpy let go of x


def test_binding_reads_an_array_that_offers_only_dlpack():
    x = np.arange(8, dtype=np.float32)
    param = hir.Sym("x", 1, "param", hir.TensorT(hir.Scalar("f32"), (hir.Dyn("N"),)))
    bound = bind([param], (OnlyDLPack(x),), kernel_name="k", from_dlpack=from_dlpack)
    assert bound.dims == {"N": 8} and bound.arrays["x"].ptr == x.ctypes.data


def test_a_complex_array_is_refused():
    with pytest.raises(DLPackError, match="type code 5"):
        from_dlpack(np.zeros(4, np.complex64))


# ---------------------------------------------------------------------------
# A CUDA capsule made by hand: device memory is never touched, only described


_DELETED = []
_DELETER = DLManagedTensor._fields_[2][1](lambda managed: _DELETED.append(managed[0].manager_ctx))


def _cuda_capsule(shape, code=2, bits=32, lanes=1, device=(2, 1)):
    shape_array = (ctypes.c_int64 * len(shape))(*shape)
    managed = DLManagedTensor()
    managed.dl_tensor = DLTensor(
        data=0x7F00_0000,
        device=DLDevice(*device),
        ndim=len(shape),
        dtype=DLDataType(code, bits, lanes),
        shape=ctypes.cast(shape_array, ctypes.POINTER(ctypes.c_int64)),
        strides=None,
        byte_offset=256,
    )
    managed.manager_ctx = 42
    managed.deleter = _DELETER
    new = ctypes.pythonapi.PyCapsule_New
    new.argtypes, new.restype = (
        [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p],
        ctypes.py_object,
    )
    capsule = new(ctypes.addressof(managed), b"dltensor", None)
    return capsule, (managed, shape_array)


class CudaProducer:
    def __init__(self, **kwargs):
        self.capsule, self.keep = _cuda_capsule(**kwargs)
        self.streams = []

    def __dlpack__(self, stream=None):
        self.streams.append(stream)
        return self.capsule

    def __dlpack_device__(self):
        return (2, 1)


def test_a_cuda_capsule_gives_the_cuda_array_interface_and_is_deleted():
    producer = CudaProducer(shape=(4, 16))
    view = from_dlpack(producer, stream=7)
    d = view.__cuda_array_interface__
    assert not hasattr(view, "__array_interface__")
    assert d == {
        "shape": (4, 16),
        "typestr": "<f4",
        "data": (0x7F00_0000 + 256, False),
        "strides": None,
        "version": 3,
    }
    assert view.device == (2, 1) and producer.streams == [7]
    assert from_dlpack(CudaProducer(shape=(4,))).device == (2, 1)
    before = len(_DELETED)
    del view
    gc.collect()
    assert _DELETED[before:] == [42]


def test_a_bf16_capsule_reads_as_bf16():
    view = from_dlpack(CudaProducer(shape=(8,), code=4, bits=16))
    d = view.__cuda_array_interface__
    assert d["typestr"] == "<V2" and d["descr"] == [("bfloat16", "<V2")]
    param = hir.Sym("x", 1, "param", hir.TensorT(hir.Scalar("bf16"), (8,)))
    assert bind([param], (view,), kernel_name="k", target="gpu").arrays["x"].elem == "bf16"


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"lanes": 4}, "vectors of 4 lanes"),
        ({"bits": 4, "code": 0}, "not whole bytes"),
        ({"device": (8, 0)}, "device type 8"),
    ],
)
def test_unreadable_capsules_are_refused_and_left_to_their_producer(kwargs, words):
    producer = CudaProducer(shape=(4,), **kwargs)
    with pytest.raises(DLPackError, match=words):
        from_dlpack(producer)
    is_valid = ctypes.pythonapi.PyCapsule_IsValid
    is_valid.argtypes, is_valid.restype = [ctypes.py_object, ctypes.c_char_p], ctypes.c_int
    assert is_valid(producer.capsule, b"dltensor")  # not consumed
