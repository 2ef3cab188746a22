"""Launches a user gets wrong, on machines with and without a GPU: each is refused by
the binding, naming the parameter, before the driver is asked anything, and alike on
the CPU path and the GPU path; a launch that binds, on a machine with no driver, says
so in one line."""

from __future__ import annotations

import ctypes
import dataclasses
import os
import subprocess
import sys
import types

import pytest

import phobos.lang as ph
from phobos.runtime import cuda
from phobos.runtime.binding import bind_kernel
from phobos.runtime.contract import KernelContract
from phobos.runtime.dlpack import DLDataType, DLDevice, DLManagedTensor, DLTensor
from phobos.runtime.errors import (
    ArgumentTypeError,
    ArgumentValueError,
    GpuUnavailable,
    LaunchError,
)
from phobos.runtime.launch_gpu import GpuKernel

np = pytest.importorskip("numpy")


@ph.kernel
def scale(x: ph.tensor[ph.f32][N], alpha: ph.f32):  # noqa: F821 (N: a shape name)
    base: ph.let = ph.ctx.block.x * 64
    x[base:+64] = alpha * x[base:+64]


class Dev:
    """A device array known only by its `__cuda_array_interface__`."""

    def __init__(self, shape, typestr="<f4", ptr=0x10_0000):
        self.__cuda_array_interface__ = {
            "shape": shape,
            "typestr": typestr,
            "data": (ptr, False),
            "strides": None,
            "version": 3,
        }


class Host:
    """A host array known only by its `__array_interface__`, over numpy memory."""

    def __init__(self, memory, **entries):
        self.memory = memory
        self.__array_interface__ = {**memory.__array_interface__, **entries}


@pytest.fixture
def no_gpu(monkeypatch):
    """A machine without the driver library."""
    previous = cuda.use_library(None)
    monkeypatch.setattr(cuda, "LIBRARY", "libcuda-absent-for-this-test.so.1")
    monkeypatch.delenv("PHOBOS_INTERPRET", raising=False)
    yield
    cuda.use_library(previous)


@pytest.fixture
def gpu(fake, tmp_path, monkeypatch):
    monkeypatch.setenv("PHOBOS_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("PHOBOS_INTERPRET", raising=False)
    return fake


WRONG = [
    ((Dev((64,), "<f8"), 1.0), ArgumentTypeError, "x", "element type float64"),
    ((Dev((64,)), "2"), ArgumentTypeError, "alpha", "is a str"),
    ((Dev((63,)), 1.0), ArgumentValueError, "x", "not a multiple of 4"),
    ((Dev((64,), ptr=0x10_0004), 1.0), ArgumentValueError, "x", "not a multiple of 16"),
    ((Dev((64.0,)), 1.0), ArgumentTypeError, "x", "holds a float"),
    ((Dev((64,)),), ArgumentTypeError, "alpha", "`alpha` is missing"),
]


def refusal(args):
    with pytest.raises(LaunchError) as info:
        scale.variant()[(1,)](*args)
    return info.value


@pytest.mark.parametrize(("args", "kind", "param", "fragment"), WRONG)
def test_without_a_gpu_wrong_arguments_get_the_bindings_refusal(
    no_gpu, args, kind, param, fragment
):
    err = refusal(args)
    assert type(err) is kind and err.param == param and fragment in str(err)


@pytest.mark.parametrize(("args", "kind", "param", "fragment"), WRONG)
def test_with_a_gpu_the_refusal_is_the_same(gpu, no_gpu, args, kind, param, fragment):
    without = refusal(args)
    cuda.use_library(gpu)
    with_gpu = refusal(args)
    assert (type(with_gpu), str(with_gpu)) == (type(without), str(without))
    assert gpu.launches == []


def test_without_a_gpu_a_launch_that_binds_says_there_is_no_driver(no_gpu):
    with pytest.raises(GpuUnavailable) as info:
        scale.variant()[(1,)](Dev((64,)), 1.0)
    err = info.value
    assert isinstance(err, LaunchError) and isinstance(err, cuda.DriverUnavailable)
    assert str(err).startswith("`scale`: cannot launch on the GPU: cannot load the CUDA driver")
    assert "PHOBOS_INTERPRET=1" in str(err) and err.__cause__ is None and err.__suppress_context__


def test_a_driver_that_finds_no_device_is_said_in_one_line(gpu):
    gpu.fail["cuInit"] = 100  # CUDA_ERROR_NO_DEVICE
    with pytest.raises(GpuUnavailable, match="cannot launch on the GPU: cuInit failed") as info:
        scale.variant()[(1,)](Dev((64,)), 1.0)
    assert info.value.help == "PHOBOS_INTERPRET=1 runs the kernel on the CPU"


def test_a_gpu_kernel_binds_before_it_looks_for_a_device(no_gpu):
    contract = KernelContract.build(
        "scale",
        [("x", "tensor", ("f32", ("N",))), ("alpha", "scalar", "f32")],
        dyn_dims=("N",),
        chip="sm_90",
        fingerprint="test",
    )
    kernel = GpuKernel(contract, ".version 8.0\n.target sm_90\n.address_size 64\n")
    with pytest.raises(ArgumentValueError, match="argument `x` has extent -4"):
        kernel.launch((1,), (Dev((-4,)), 1.0))
    with pytest.raises(GpuUnavailable, match="^`scale`: cannot launch on the GPU"):
        kernel.launch((1,), (Dev((64,)), 1.0))


# ---------------------------------------------------------------------------
# What a user sees: one line, no traceback; and no crash for a wild host pointer

SCRIPT = """\
from __future__ import annotations
import numpy
import phobos.lang as ph
from phobos.runtime import cuda

@ph.kernel
def scale(x: ph.tensor[ph.f32][N], alpha: ph.f32):
    base: ph.let = ph.ctx.block.x * 64
    x[base:+64] = alpha * x[base:+64]

class Dev:
    __cuda_array_interface__ = {"shape": (64,), "typestr": "<f4", "data": (1 << 20, False),
                                "strides": None, "version": 3}

class Host:
    def __init__(self, ptr):
        self.memory = numpy.zeros(64, numpy.float32)
        self.__array_interface__ = {**self.memory.__array_interface__, "data": (ptr, False)}

cuda.LIBRARY = "libcuda-absent-for-this-test.so.1"
scale[(1,)](LAUNCH, 1.0)
"""


@pytest.mark.parametrize(
    ("launch", "said"),
    [
        ("Dev()", "error: `scale`: cannot launch on the GPU: cannot load the CUDA driver"),
        ("Host(-4096)", "error: `scale`: argument `x` has the data pointer -4096, which is not"),
    ],
)
def test_what_a_user_sees_is_one_line(tmp_path, launch, said):
    script = tmp_path / "launch.py"
    script.write_text(SCRIPT.replace("LAUNCH", launch))
    env = {k: v for k, v in os.environ.items() if k not in ("PHOBOS_INTERPRET", "PHOBOS_TRACEBACK")}
    env.update(PHOBOS_PTXAS="none", PHOBOS_CACHE_DIR=str(tmp_path))
    run = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120
    )
    assert run.returncode == 1, run.stderr  # not a crash: a negative pointer was a segfault
    assert run.stderr.startswith(said) and run.stderr.count("\n") == 1, run.stderr


# ---------------------------------------------------------------------------
# The CPU path and the GPU path accept and refuse alike


@pytest.mark.parametrize(
    ("entries", "kind", "fragment"),
    [
        ({"shape": (2**31,)}, ArgumentValueError, "more than a 32-bit index holds"),
        ({"shape": (-4,)}, ArgumentValueError, "extent -4 on axis 0"),
        ({"shape": ("64",)}, ArgumentTypeError, "shape ('64',) holds a str"),
        ({"shape": (64.0,)}, ArgumentTypeError, "shape (64.0,) holds a float"),
        ({"typestr": "<f04"}, ArgumentTypeError, "typestr '<f04' is not a typestr"),
        ({"strides": (4, 4)}, ArgumentTypeError, "2 strides (4, 4) for shape (64,)"),
        ({"data": (-16, False)}, ArgumentValueError, "the data pointer -16"),
        ({"data": (0, False)}, ArgumentValueError, "a null data pointer"),
    ],
)
def test_both_paths_refuse_alike(gpu, monkeypatch, entries, kind, fragment):
    ran = []
    interpreter = types.ModuleType("phobos.interp.tiles")
    interpreter.run_kernel = lambda *a: ran.append(a)
    monkeypatch.setitem(sys.modules, "phobos.interp.tiles", interpreter)
    memory = np.zeros(64, np.float32)
    with pytest.raises(kind) as on_cpu:
        scale.variant()[(1,)](Host(memory, **entries), 1.0)
    device = Dev((64,))
    device.__cuda_array_interface__.update(entries)
    with pytest.raises(kind) as on_gpu:
        scale.variant()[(1,)](device, 1.0)
    assert on_cpu.value.param == on_gpu.value.param == "x"
    assert fragment in str(on_cpu.value) and fragment in str(on_gpu.value)
    assert ran == [] and gpu.launches == []


def test_a_64_bit_index_kernel_binds_long_extents_on_both_paths():
    checked = scale.checked()
    wide = dataclasses.replace(checked, index_width=64)
    long = 2**31
    for arg, target in (
        (Host(np.zeros(4, np.float32), shape=(long,)), "cpu"),
        (Dev((long,)), "gpu"),
    ):
        assert bind_kernel(wide, (arg, 1.0), target=target).dims == {"N": long}
        with pytest.raises(ArgumentValueError, match="32-bit index"):
            bind_kernel(checked, (arg, 1.0), target=target)


# ---------------------------------------------------------------------------
# DLPack: a capsule whose tensor is corrupt is refused before its shape is read


class Capsule:
    """A producer of one hand-made CUDA capsule, `dl_tensor` fields as given."""

    def __init__(self, ndim, shape, data=0x7F00_0000):
        self.shape = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        self.managed = DLManagedTensor()
        self.managed.dl_tensor = DLTensor(
            data=data,
            device=DLDevice(2, 0),
            ndim=ndim,
            dtype=DLDataType(2, 32, 1),
            shape=ctypes.cast(self.shape, ctypes.POINTER(ctypes.c_int64)) if shape else None,
            strides=None,
            byte_offset=0,
        )
        new = ctypes.pythonapi.PyCapsule_New
        new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        new.restype = ctypes.py_object
        self.capsule = new(ctypes.addressof(self.managed), b"dltensor", None)

    def __dlpack__(self, stream=None):
        return self.capsule

    def __dlpack_device__(self):
        return (2, 0)


@pytest.mark.parametrize(
    ("capsule", "kind", "fragment"),
    [
        (Capsule(-1, (64,)), ArgumentTypeError, "its `ndim` is -1, not 0 to 64"),
        (Capsule(1000, (64,)), ArgumentTypeError, "its `ndim` is 1000"),
        (Capsule(1, ()), ArgumentTypeError, "its `ndim` is 1, but its `shape` is a null pointer"),
        (Capsule(1, (-4,)), ArgumentValueError, "extent -4 on axis 0"),
        (Capsule(1, (64,), data=0), ArgumentValueError, "a null data pointer"),
    ],
)
def test_a_corrupt_dlpack_tensor_is_refused_naming_the_parameter(gpu, capsule, kind, fragment):
    with pytest.raises(kind) as info:
        scale.variant()[(1,)](capsule, 1.0)
    assert info.value.param == "x" and fragment in str(info.value)


def test_the_dlpack_reader_says_what_is_corrupt():
    from phobos.runtime.dlpack import DLPackError, from_dlpack

    with pytest.raises(DLPackError, match=r"its `ndim` is -3, not 0 to 64"):
        from_dlpack(Capsule(-3, (64,)))
    assert from_dlpack(Capsule(0, ())).__cuda_array_interface__["shape"] == ()
