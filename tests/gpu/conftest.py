"""What the GPU tests share: the `Device` and device arrays made from numpy ones.

Every module of tests/gpu first asks the driver for a GPU and, with none (no
`libcuda.so.1`, or no device), calls `pytest.skip(reason, allow_module_level=True)`:
its tests are then reported skipped with the reason, never collected as passing.
"""

from __future__ import annotations

import pytest

from phobos.runtime import cuda


@pytest.fixture(autouse=True)
def own_cache(monkeypatch, tmp_path):
    """Each test its own kernel cache: the user's is never read or written."""
    monkeypatch.setenv("PHOBOS_CACHE_DIR", str(tmp_path / "phobos-cache"))


@pytest.fixture(scope="session")
def device() -> cuda.Device:
    dev = cuda.device(0)
    dev.activate()
    return dev


class DeviceArray:
    """A numpy array copied to device memory, seen through `__cuda_array_interface__`."""

    def __init__(self, host, device: cuda.Device):
        device.activate()
        self.device = device
        self.shape = host.shape
        self.dtype = host.dtype
        self.nbytes = host.nbytes
        self.ptr = cuda.mem_alloc(max(self.nbytes, 1))
        if self.nbytes:
            cuda.memcpy_htod(self.ptr, host.ctypes.data, self.nbytes)
        self.__cuda_array_interface__ = {
            "shape": tuple(host.shape),
            "typestr": host.dtype.str,
            "data": (self.ptr, False),
            "strides": None,
            "version": 3,
        }

    def get(self):
        import numpy

        out = numpy.empty(self.shape, self.dtype)
        self.device.synchronize()
        if self.nbytes:
            cuda.memcpy_dtoh(out.ctypes.data, self.ptr, self.nbytes)
        return out

    def free(self) -> None:
        if self.ptr:
            self.device.activate()
            cuda.mem_free(self.ptr)
            self.ptr = 0


@pytest.fixture
def to_device(device):
    """`to_device(numpy_array)` -> a `DeviceArray`, freed after the test."""
    made: list[DeviceArray] = []

    def make(host, dev=None):
        array = DeviceArray(host, dev or device)
        made.append(array)
        return array

    yield make
    for array in made:
        array.free()
