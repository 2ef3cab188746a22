"""A `@ph.kernel` launch compiles for the chip of the GPU its arrays are on.

A machine may hold GPUs of different chips; the fake driver's device 0 is an sm_90
and its device 1 an sm_80. The PTX handed to the driver to compile must target
the chip of the device that launches it.
"""

from __future__ import annotations

import sys

import pytest
from test_cuda_fake import FakeDriver

import phobos.lang as ph
from phobos.runtime import binding, cuda
from phobos.runtime.launch_gpu import first_device


@ph.kernel
def scale(x: ph.tensor[ph.f32][N], alpha: ph.f32):  # noqa: F821 (N: a shape name)
    base: ph.let = ph.ctx.block.x * 256
    x[base:+256] = alpha * x[base:+256]


class TorchLike:
    """A device array read as torch's are: `data_ptr`, `get_device`, and the interface."""

    def __init__(self, n, ptr, ordinal):
        self.ptr, self.ordinal = ptr, ordinal
        self.dtype, self.shape, self.requires_grad = "float32", (n,), False
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
        return self.ordinal

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
    monkeypatch.setenv("PHOBOS_PTXAS", "none")  # the driver compiles: its images are the PTX
    fake = FakeDriver(devices=2, capabilities=[(9, 0), (8, 0)])
    previous = cuda.use_library(fake)
    yield fake
    cuda.use_library(previous)


def compiled_targets(fake) -> list[str]:
    """The `.target` of each PTX the driver was given to compile, in order."""
    targets = []
    for name, args in fake.calls:
        if name == "cuModuleLoadDataEx":
            text = bytes(args[0]).decode(errors="replace")
            line = next(t for t in text.splitlines() if t.startswith(".target"))
            targets.append(line.split()[1])
    return targets


def test_each_device_compiles_ptx_for_its_own_chip(driver):
    k = scale.variant()  # a fresh view: no kernel compiled by another test
    k._gpu.clear()
    driver.pointer_devices = {0x10000: 1, 0x20000: 0}
    k[(1,)](Dev(256, 0x10000), 2.0)
    assert compiled_targets(driver) == ["sm_80"]
    k[(1,)](Dev(256, 0x20000), 2.0)
    assert compiled_targets(driver) == ["sm_80", "sm_90a"]  # 9.0 compiles for sm_90a
    assert sorted(k._gpu[()]) == ["sm_80", "sm_90a"]
    assert [launch["function"] for launch in driver.launches] == [0x3000, 0x3000]


def test_torch_like_arrays_on_two_chips_both_keep_the_fast_path(driver, monkeypatch):
    k = scale.variant()
    k._gpu.clear()
    driver.pointer_devices = {0x10000: 1, 0x20000: 0}
    binds = []
    real = binding.bind
    monkeypatch.setattr(
        "phobos.runtime.launch_gpu.bind", lambda *a, **kw: binds.append(1) or real(*a, **kw)
    )
    for _ in range(3):
        k[(1,)](TorchLike(256, 0x10000, 1), 1.0)
        k[(1,)](TorchLike(256, 0x20000, 0), 1.0)
    assert len(binds) == 2  # once per device: later launches take their plans
    assert compiled_targets(driver) == ["sm_80", "sm_90a"]  # 9.0 compiles for sm_90a
    assert len(driver.launches) == 6
    # the driver is asked an array's device only by the two whole-path bindings
    assert driver.names().count("cuPointerGetAttribute") == 2


def test_first_device_reads_the_arrays_without_binding(driver):
    driver.pointer_devices = {0x10000: 1}
    assert first_device((2.0, Dev(8, 0x10000)), (False, True)) == 1
    assert first_device((TorchLike(8, 0x20000, 1),), (True,)) == 1
    assert first_device((Dev(0, 0),), (True,)) == 0  # an empty array says nothing


def test_one_gpu_asks_the_driver_nothing_to_pick_the_chip(tmp_path, monkeypatch):
    monkeypatch.setenv("PHOBOS_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("PHOBOS_INTERPRET", raising=False)
    monkeypatch.setenv("PHOBOS_PTXAS", "none")
    fake = FakeDriver(devices=1, capabilities=[(8, 0)])
    previous = cuda.use_library(fake)
    try:
        k = scale.variant()
        k._gpu.clear()
        k[(1,)](Dev(256, 0x10000), 2.0)
        k[(1,)](Dev(256, 0x10000), 3.0)
        assert compiled_targets(fake) == ["sm_80"]
        assert "cuPointerGetAttribute" not in fake.names()
        assert len(fake.launches) == 2
    finally:
        cuda.use_library(previous)


def test_phobos_interpret_set_after_gpu_launches_still_takes_the_interpreter(driver, monkeypatch):
    k = scale.variant()
    k._gpu.clear()
    driver.pointer_devices = {0x20000: 0}
    k[(1,)](TorchLike(256, 0x20000, 0), 1.0)
    k[(1,)](TorchLike(256, 0x20000, 0), 1.0)  # a fast-path launch: the plan exists
    assert len(driver.launches) == 2
    on_cpu = []
    module = sys.modules["phobos.runtime.launch_cpu"]
    monkeypatch.setattr(module, "launch_cpu", lambda *a, **kw: on_cpu.append(kw))
    monkeypatch.setenv("PHOBOS_INTERPRET", "1")
    k[(1,)](TorchLike(256, 0x20000, 0), 1.0)
    assert on_cpu == [{"copy_device": True}] and len(driver.launches) == 2
    monkeypatch.setenv("PHOBOS_INTERPRET", "0")
    k[(1,)](TorchLike(256, 0x20000, 0), 1.0)
    assert len(driver.launches) == 3
