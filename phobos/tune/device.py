"""The tuner's GPU: guarded copies of the arguments, the variants loaded, the clock.

`CudaBackend(kernel, args, stream)` binds the arguments as a launch would (every
refusal naming its parameter), finds their device, and refuses to tune while that
stream captures a CUDA graph (tuning launches, allocates and synchronizes, none of
which a capture allows). It never writes the caller's arrays: the reference runs on
copies in the arguments' own library (`phobos.tune.copies`), each variant on device
copies.

    backend = CudaBackend(kernel, (x, y), stream=None)
    copies = backend.copies()       # every tensor copied, CANARY_BYTES after each
    runner = backend.load(compiled) # a loaded variant, or (stage, reason) if it cannot run
    runner.launch(grid, copies.arrays)

The tuner (`phobos.tune.tuner`) needs only what this class offers; its CPU tests give
it a stand-in with the same methods.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

import numpy as np

from phobos.runtime import cuda
from phobos.runtime.assemble import PtxasNotFound
from phobos.tune.check import CANARY_BYTES, canary, canary_report
from phobos.tune.errors import TuneError


@dataclass(frozen=True)
class TensorArg:
    """One tensor argument as the copies need it."""

    name: str
    index: int  # its position among the arguments
    shape: tuple[int, ...]
    typestr: str
    elem: str
    ptr: int

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * int(self.typestr[2:])


class DeviceCopy:
    """A device buffer holding one tensor and its canary: passed to a launch through
    `__cuda_array_interface__` as the original's shape and type."""

    def __init__(self, tensor: TensorArg, ptr: int):
        self.tensor = tensor
        self.ptr = ptr
        self.__cuda_array_interface__ = {
            "shape": tensor.shape,
            "typestr": tensor.typestr,
            "data": (ptr, False),
            "strides": None,
            "version": 3,
        }


class CudaCopies:
    """Every tensor argument copied to its own device buffer, followed by the canary;
    scalars as given. `arrays` is what a variant launches with."""

    def __init__(self, tensors: list[TensorArg], args: tuple):
        self.tensors = tensors
        self.buffers = [cuda.mem_alloc(t.nbytes + CANARY_BYTES) for t in tensors]
        arrays = list(args)
        for t, ptr in zip(tensors, self.buffers, strict=True):
            arrays[t.index] = DeviceCopy(t, ptr)
        self.arrays = tuple(arrays)
        self._canary = canary()
        self.reset()

    def reset(self) -> None:
        """Each copy holds its original's bytes again, and its canary."""
        cuda.ctx_synchronize()  # the originals as every stream leaves them
        for t, ptr in zip(self.tensors, self.buffers, strict=True):
            if t.nbytes:
                cuda.memcpy_dtod(ptr, t.ptr, t.nbytes)
            _write(ptr + t.nbytes, self._canary)
        # The copies run on the legacy stream; a launch on a stream that does not wait
        # for it (CU_STREAM_NON_BLOCKING) must not start before they finish.
        cuda.ctx_synchronize()

    def canary_reports(self) -> list[str]:
        """What each broken canary says (empty when all are intact)."""
        reports = []
        for t, ptr in zip(self.tensors, self.buffers, strict=True):
            found = _read(ptr + t.nbytes, CANARY_BYTES)
            report = canary_report(t.name, found, self._canary)
            if report:
                reports.append(report)
        return reports

    def host(self, tensor: TensorArg) -> np.ndarray:
        """The copy's contents, on the host."""
        i = self.tensors.index(tensor)
        return _to_host(self.buffers[i], tensor)

    def free(self) -> None:
        for ptr in self.buffers:
            cuda.mem_free(ptr)
        self.buffers = []


def _write(ptr: int, data: bytes) -> None:
    buf = ctypes.create_string_buffer(data, len(data))
    cuda.memcpy_htod(ptr, ctypes.addressof(buf), len(data))


def _read(ptr: int, nbytes: int) -> bytes:
    buf = ctypes.create_string_buffer(nbytes)
    cuda.memcpy_dtoh(ctypes.addressof(buf), ptr, nbytes)
    return buf.raw


def _to_host(ptr: int, tensor: TensorArg) -> np.ndarray:
    out = np.empty(tensor.shape, dtype=np.dtype(tensor.typestr))
    if tensor.nbytes:
        cuda.memcpy_dtoh(out.ctypes.data, ptr, tensor.nbytes)
    return out


class CudaRunner:
    """One compiled variant, loaded on the backend's device."""

    def __init__(self, gpu, stream):
        self.gpu = gpu
        self.stream = stream

    def launch(self, grid, args) -> None:
        self.gpu.launch(grid, args, stream=self.stream)


class CudaBackend:
    """The tuner's device, for `kernel` launched with `args` on `stream`."""

    def __init__(self, kernel, args: tuple, stream: Any = None):
        from phobos.runtime.binding import HOST, has_interface
        from phobos.runtime.launch_gpu import arrays_device, stream_handle
        from phobos.sema import hir

        checked = kernel.checked(kernel._variant)
        tensors = [p for p in checked.params if isinstance(p.type, hir.TensorT)]
        host = [p.name for p, a in zip(checked.params, args, strict=False)
                if isinstance(p.type, hir.TensorT) and has_interface(a, HOST)]  # fmt: skip
        if host or not tensors:
            what = f"argument `{host[0]}` is a host array" if host else "it has no tensor argument"
            raise TuneError(
                f"`{kernel.name}`: tuning times the kernel on the GPU, but {what}; pass "
                "device arrays (torch, CuPy, or any with __cuda_array_interface__)"
            )
        bound = _bind(kernel, checked, args, stream)
        self.device = cuda.device(arrays_device(kernel.name, bound))
        self.device.activate()
        self.stream = stream
        self.stream_handle = stream_handle(stream)
        if cuda.stream_capturing(self.stream_handle):
            raise TuneError(
                f"`{kernel.name}` cannot be tuned while a CUDA graph is being captured: tuning "
                "launches, allocates and synchronizes. Tune before capturing "
                "(`kernel.tune(grid, *args, reference=f)`), or set PHOBOS_TUNE=0 to take each "
                "constant's first choice"
            )
        self.chip = self.device.target  # what a launch compiles for (sm_90a on an H200)
        self.card = self.device.name
        self.dims = dict(bound.dims)
        self.args = tuple(args)
        self.tensors = []
        for index, param in enumerate(checked.params):
            info = bound.arrays.get(param.name)
            if info is None:
                continue
            if info.elem == "bf16" or not info.typestr[2:].isdigit():
                raise TuneError(
                    f"`{kernel.name}`: tuning with a bf16 argument (`{param.name}`) is not yet "
                    "supported; tune on f16 or f32 arrays of the same shapes"
                )
            self.tensors.append(
                TensorArg(param.name, index, tuple(info.shape), info.typestr, info.elem, info.ptr)
            )

    def reference(self, reference) -> dict[str, np.ndarray]:
        """Run `reference` on copies of the arguments in their own library (a torch
        tensor's a torch tensor on its device, a CuPy array's a CuPy array, any other
        device array's a numpy array; scalars as given: `phobos.tune.copies`); every
        tensor as the reference leaves it, as numpy."""
        from phobos.tune.copies import run_reference

        cuda.ctx_synchronize()  # the arguments as every stream leaves them
        return run_reference(reference, self.args, self.tensors, lambda t: _to_host(t.ptr, t))

    def copies(self) -> CudaCopies:
        return CudaCopies(self.tensors, self.args)

    def load(self, compiled) -> CudaRunner | tuple[str, str]:
        """The variant loaded, or (stage, reason) when this card cannot run it."""
        from phobos.runtime.cache import KernelCache
        from phobos.runtime.contract import Contract
        from phobos.runtime.launch_gpu import GpuKernel

        contract = Contract.from_json(compiled.contract_json)
        gpu = GpuKernel(contract.kernels[0], compiled.ptx, KernelCache())
        try:
            function = gpu.function(self.device)
        except PtxasNotFound as exc:  # a setting, wrong for every variant alike
            raise TuneError(str(exc)) from None
        except cuda.CudaError as exc:
            first = exc.log.strip().splitlines()[:1]
            return "compile", f"{exc.call} failed: {exc.name}: {exc.text}" + (
                f" ({first[0]})" if first else ""
            )
        c = gpu.contract
        if function.max_threads < c.threads:
            return "registers", (
                f"{function.registers} registers a thread leave room for {function.max_threads} "
                f"threads a CTA, and the variant runs {c.threads}"
            )
        shared = function.static_smem + c.dynamic_smem
        limit = self.device.properties.max_shared_optin
        if shared > limit:
            return "shared memory", (
                f"{shared} bytes of shared memory a CTA, more than the card's {limit}"
            )
        return CudaRunner(gpu, self.stream)

    def synchronize(self) -> None:
        if self.stream_handle:
            cuda.stream_synchronize(self.stream_handle)
        else:
            self.device.synchronize()

    def clock(self):
        from phobos.tune.timing import CudaClock

        return CudaClock(self.device, self.stream_handle)


def _bind(kernel, checked, args, stream):
    """The arguments bound as a GPU launch of the first variant binds them."""
    from phobos.runtime.binding import bind_kernel
    from phobos.runtime.dlpack import from_dlpack
    from phobos.runtime.launch_gpu import stream_handle

    handle = None if stream is None else stream_handle(stream)
    return bind_kernel(
        checked, args, target="gpu", from_dlpack=lambda obj: from_dlpack(obj, handle)
    )
