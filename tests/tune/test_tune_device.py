"""The tuner's GPU side on a stand-in driver whose device memory is host memory: copies with
their canaries, the reference on host copies, and the refusals (graph capture, host arrays)."""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import numpy as np
import pytest
from tune_kernels import doubled, seeded

from phobos.runtime import cuda
from phobos.tune.check import CANARY_BYTES, canary
from phobos.tune.device import CudaBackend, TuneError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))
from test_cuda_fake import FakeDriver  # noqa: E402


class MemoryDriver(FakeDriver):
    """A fake driver whose allocations are host buffers, copied for real."""

    def __init__(self):
        super().__init__()
        self.buffers: dict[int, ctypes.Array] = {}
        self.capture_status = 0  # CUstreamCaptureStatus the stream answers
        self.capture_error = 0  # a status cuStreamIsCapturing returns instead

    def cuMemAlloc_v2(self, out, size):
        buf = ctypes.create_string_buffer(size + 16)
        ptr = (ctypes.addressof(buf) + 15) & ~15
        self.buffers[ptr] = buf
        out[0] = ptr
        return self._record("cuMemAlloc_v2", size)

    def cuMemFree_v2(self, ptr):
        del self.buffers[ptr]
        return self._record("cuMemFree_v2", ptr)

    def cuMemcpyHtoD_v2(self, dst, src, size):
        ctypes.memmove(dst, src, size)
        return self._record("cuMemcpyHtoD_v2", dst, src, size)

    def cuMemcpyDtoH_v2(self, dst, src, size):
        ctypes.memmove(dst, src, size)
        return self._record("cuMemcpyDtoH_v2", dst, src, size)

    def cuMemcpyDtoD_v2(self, dst, src, size):
        ctypes.memmove(dst, src, size)
        return self._record("cuMemcpyDtoD_v2", dst, src, size)

    def cuStreamIsCapturing(self, stream, out):
        out[0] = self.capture_status
        return self.capture_error or self._record("cuStreamIsCapturing", stream)


class Device:
    """A "device" array: numpy data copied into the stand-in's memory."""

    def __init__(self, array: np.ndarray):
        self.ptr = cuda.mem_alloc(array.nbytes)
        cuda.memcpy_htod(self.ptr, array.ctypes.data, array.nbytes)
        self.shape, self.dtype = array.shape, array.dtype
        self.__cuda_array_interface__ = {"shape": array.shape, "typestr": array.dtype.str,
                                         "data": (self.ptr, False), "version": 3}  # fmt: skip

    def numpy(self) -> np.ndarray:
        out = np.empty(self.shape, self.dtype)
        cuda.memcpy_dtoh(out.ctypes.data, self.ptr, out.nbytes)
        return out


@pytest.fixture
def driver(tmp_path, monkeypatch):
    monkeypatch.setenv("PHOBOS_CACHE_DIR", str(tmp_path))
    fake = MemoryDriver()
    previous = cuda.use_library(fake)
    yield fake
    cuda.use_library(previous)


@pytest.fixture
def args(driver):
    rng = np.random.default_rng()
    return Device(rng.standard_normal(4096).astype(np.float32)), Device(
        np.full(4096, np.nan, np.float32)
    )


def test_the_copies_hold_the_arguments_and_a_canary_after_each(driver, args):
    backend = CudaBackend(seeded, args)
    copies = backend.copies()
    x, y = backend.tensors
    assert (x.name, y.name) == ("x", "y") and x.nbytes == 4096 * 4
    np.testing.assert_array_equal(copies.host(x), args[0].numpy())
    assert copies.canary_reports() == []
    tail = ctypes.string_at(copies.buffers[1] + y.nbytes, CANARY_BYTES)
    assert tail == canary()
    ctypes.memset(copies.buffers[1] + y.nbytes + 5, 0, 1)  # a write past the end of `y`
    assert copies.canary_reports() == [
        "the variant wrote past the end of `y`: 1 of the 256 canary bytes after it changed, "
        "the first at byte 5 past the end"
    ]
    ctypes.memset(copies.buffers[0], 0, 16)
    copies.reset()  # the originals' bytes and the canaries again
    assert copies.canary_reports() == []
    np.testing.assert_array_equal(copies.host(x), args[0].numpy())
    buffers = list(copies.buffers)
    copies.free()
    assert not set(buffers) & set(driver.buffers)


def test_the_reference_runs_on_host_copies_and_never_writes_the_arguments(driver, args):
    backend = CudaBackend(seeded, args)
    expected = backend.reference(doubled)
    np.testing.assert_array_equal(expected["y"], 2.0 * args[0].numpy())
    assert np.isnan(args[1].numpy()).all()


def test_tuning_while_a_graph_is_captured_is_refused(driver, args):
    driver.capture_status = 1  # CU_STREAM_CAPTURE_STATUS_ACTIVE
    with pytest.raises(TuneError, match="while a CUDA graph is being captured"):
        CudaBackend(seeded, args, stream=0x77)
    driver.capture_status, driver.capture_error = 0, cuda.ERROR_STREAM_CAPTURE_IMPLICIT
    with pytest.raises(TuneError, match="while a CUDA graph is being captured"):
        CudaBackend(seeded, args)  # the legacy stream, during another stream's capture


def test_a_host_array_is_refused_by_name(driver, args):
    with pytest.raises(TuneError, match="argument `y` is a host array"):
        CudaBackend(seeded, (args[0], np.zeros(4096, np.float32)))


def test_a_phobos_ptxas_naming_no_program_stops_tuning_with_its_setting(driver, args, monkeypatch):
    from phobos.tune.variants import compile_variants

    compiled = next(c for c in compile_variants(seeded, jobs=1, check_races=False) if c.ptx)
    monkeypatch.setenv("PHOBOS_PTXAS", "/no/such/ptxas")
    with pytest.raises(TuneError, match="PHOBOS_PTXAS='/no/such/ptxas' is not a program"):
        CudaBackend(seeded, args).load(compiled)


def test_ptx_the_driver_refuses_leaves_the_variant_out_with_the_jit_log(driver, args):
    from phobos.tune.variants import Compiled, compile_variants

    good = next(c for c in compile_variants(seeded, jobs=1, check_races=False) if c.ptx)
    bad = Compiled(good.variant, good.key, good.ptx + "\n nope", good.contract_json)
    stage, reason = CudaBackend(seeded, args).load(bad)
    assert stage == "compile"
    assert reason.startswith("cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX")
    assert "Unknown symbol 'nope'" in reason
