"""The hot launch: a plan's own generated comparison takes a launch like the last one,
and every launch it does not take still gets the ordinary path's checks and errors."""

from __future__ import annotations

import struct

import pytest
from test_cuda_fake import FakeDriver

import phobos.lang as ph
from phobos.runtime import binding, cuda
from phobos.runtime.errors import ArgumentValueError


@ph.kernel
def axpy(x: ph.tensor[ph.f32][N], y: ph.tensor[ph.f32][N], alpha: ph.f32, n: ph.i32):  # noqa: F821
    base: ph.let = ph.ctx.block.x * 256
    y[base:+256] = alpha * x[base:+256] + y[base:+256]


class TorchLike:
    """A device array read as torch's are (`data_ptr`, `stride`, `get_device`, ...)
    and bound by its `__cuda_array_interface__`."""

    def __init__(self, n, ptr, *, requires_grad=False, dtype="float32"):
        self.ptr, self.shape, self.dtype = ptr, (n,), dtype
        self.requires_grad = requires_grad
        self.__cuda_array_interface__ = {
            "shape": (n,),
            "typestr": "<f4",
            "data": (ptr, False),
            "strides": None,
            "version": 3,
        }

    def data_ptr(self):
        return self.ptr

    def get_device(self):
        return 0

    def stride(self):
        return (1,)


class Dev:
    """A device array known only by its `__cuda_array_interface__`."""

    def __init__(self, n, ptr):
        self.__cuda_array_interface__ = {
            "shape": (n,),
            "typestr": "<f4",
            "data": (ptr, False),
            "strides": None,
            "version": 3,
        }


@pytest.fixture
def driver(tmp_path, monkeypatch):
    monkeypatch.setenv("PHOBOS_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("PHOBOS_INTERPRET", raising=False)
    fake = FakeDriver()
    previous = cuda.use_library(fake)
    yield fake
    cuda.use_library(previous)


@pytest.fixture
def binds(monkeypatch):
    calls = []
    real = binding.bind

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr("phobos.runtime.launch_gpu.bind", counting)
    return calls


def slots_of(launch):
    x, y, alpha, n, extent = launch["slots"]
    return (
        struct.unpack("<Q", x)[0],
        struct.unpack("<Q", y)[0],
        struct.unpack("<f", alpha[:4])[0],
        struct.unpack("<i", n[:4])[0],
        struct.unpack("<i", extent[:4])[0],
    )


def fresh():
    k = axpy.variant()
    k._gpu.clear()
    return k


def test_a_launch_like_the_last_is_taken_by_the_hot_path(driver, binds):
    k = fresh()
    for i in range(4):
        k[(2,)](TorchLike(512, 0x10000 + 256 * i), TorchLike(512, 0x40000), 1.5 + i, 7 + i)
    assert k._hot is not None
    assert len(binds) == 1
    assert len(driver.launches) == 4
    assert driver.launches[-1]["grid"] == (2, 1, 1)
    assert slots_of(driver.launches[-1]) == (0x10000 + 256 * 3, 0x40000, 4.5, 10, 512)


def test_the_hot_path_refuses_what_its_signature_does_not_hold(driver, binds):
    k = fresh()
    k[(1,)](TorchLike(512, 0x10000), TorchLike(512, 0x40000), 1.0, 1)
    hot = k._hot
    base = (TorchLike(512, 0x10000), TorchLike(512, 0x40000), 1.0, 1)
    assert hot((1,), base, None) is True
    others = [
        (TorchLike(256, 0x10000), *base[1:]),  # another extent
        (TorchLike(512, 0x10000, dtype="float16"), *base[1:]),  # another element type
        (TorchLike(512, 0x10000, requires_grad=True), *base[1:]),
        (TorchLike(512, 0x10004), *base[1:]),  # misaligned
        (Dev(512, 0x10000), *base[1:]),  # another kind of array
        (*base[:2], 1, 1),  # an int where the first launch had a float
        (*base[:3], 1.0),  # a float where the first had an int
        (*base[:3], 1 << 40),  # an i32 out of range
        (*base[:3], True),  # a bool is not an int here
        base[:3],  # an argument short
        (TorchLike(512, None), *base[1:]),  # a pointer that is no int: no TypeError here
    ]
    for args in others:
        assert hot((1,), args, None) is False, args
    assert hot((0,), base, None) is False  # an empty grid: the whole path says why
    assert hot(None, base, None) is False
    assert hot((1,), base, object()) is False  # no stream: the whole path says so
    assert hot(lambda meta: (meta["N"] // 256,), base, None) is True
    assert driver.launches[-1]["grid"] == (2, 1, 1)


def test_launches_the_hot_path_turns_away_get_the_whole_paths_errors(driver):
    k = fresh()
    k[(1,)](TorchLike(512, 0x10000), TorchLike(512, 0x40000), 1.0, 1)
    with pytest.raises(ArgumentValueError, match="argument `n`"):
        k[(1,)](TorchLike(512, 0x10000), TorchLike(512, 0x40000), 1.0, 1 << 40)
    with pytest.raises(ArgumentValueError, match="`x`"):
        k[(1,)](TorchLike(512, 0x10004), TorchLike(512, 0x40000), 1.0, 1)
    with pytest.raises(ArgumentValueError, match="`y`"):
        k[(1,)](TorchLike(512, 0x10000), TorchLike(256, 0x40000), 1.0, 1)


def test_alternating_signatures_each_launch_their_own_plan(driver, binds):
    k = fresh()
    for _ in range(3):
        k[(1,)](TorchLike(512, 0x10000), TorchLike(512, 0x40000), 1.0, 1)
        k[(1,)](TorchLike(1024, 0x20000), TorchLike(1024, 0x50000), 2.0, 2)
    assert len(binds) == 2
    assert [slots_of(launch)[4] for launch in driver.launches] == [512, 1024] * 3


def test_arrays_by_interface_alone_take_the_plans_own_launch(driver, binds):
    k = fresh()
    for i in range(3):
        k[(1,)](Dev(512, 0x10000 + 256 * i), Dev(512, 0x40000), 1.0, 1)
    assert len(binds) == 1
    assert slots_of(driver.launches[-1])[0] == 0x10000 + 512
    assert k._hot((1,), (Dev(256, 0x10000), Dev(256, 0x40000), 1.0, 1), None) is False


def test_the_hot_path_passes_the_stream_and_raises_the_drivers_error(driver):
    k = fresh()
    args = (TorchLike(512, 0x10000), TorchLike(512, 0x40000), 1.0, 1)
    k[(1,)](*args)
    k[(1,)](*args, stream=0x1234)
    assert driver.launches[-1]["stream"] == 0x1234
    driver.fail["cuLaunchKernel"] = 700
    with pytest.raises(cuda.CudaError, match="cuLaunchKernel"):
        k[(1,)](*args)


def test_interpreting_skips_the_hot_path(driver, monkeypatch):
    k = fresh()
    args = (TorchLike(512, 0x10000), TorchLike(512, 0x40000), 1.0, 1)
    k[(1,)](*args)
    calls = []
    monkeypatch.setattr(k, "_hot", lambda *a: calls.append(a) or True)
    monkeypatch.setenv("PHOBOS_INTERPRET", "1")
    with pytest.raises(ArgumentValueError, match="could not be copied to the host"):
        k[(1,)](*args)  # the interpreter took it: it cannot read a stand-in's memory
    assert calls == []
