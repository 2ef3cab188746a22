"""A stand-in for the tuner's GPU: variants run on the CPU interpreter, memory is host
memory with the canary after each tensor, time comes from a `FakeClock`.

`HostBackend(kernel, args)` offers what `phobos.tune.device.CudaBackend` offers: its
arguments are host arrays (numpy, or torch CPU tensors read through DLPack), and its
reference runs on copies made as the card's backend makes them. Faults a
card could have are injected by variant key: `overrun` makes a launch write past the end
of a tensor (into its canary), `refuse` makes loading give (stage, reason).
"""

from __future__ import annotations

import contextlib

import numpy as np

from phobos.runtime.binding import bind_kernel
from phobos.runtime.launch_cpu import _from_dlpack
from phobos.tune.check import CANARY_BYTES, canary, canary_report
from phobos.tune.copies import run_reference
from phobos.tune.device import TensorArg
from phobos.tune.timing import FakeClock


def host_copy(array):
    """A numpy copy of a host array: numpy's own, or one read through DLPack (torch's)."""
    return np.array(array if hasattr(array, "__array_interface__") else np.from_dlpack(array))


class HostCopies:
    def __init__(self, tensors, args, originals):
        self.tensors = tensors
        self.originals = originals
        self.memory = [np.zeros(t.nbytes + CANARY_BYTES, dtype=np.uint8) for t in tensors]
        arrays = list(args)
        for t, mem in zip(tensors, self.memory, strict=True):
            arrays[t.index] = mem[: t.nbytes].view(np.dtype(t.typestr)).reshape(t.shape)
        self.arrays = tuple(arrays)
        self.freed = False
        self.reset()

    def reset(self):
        for t, mem in zip(self.tensors, self.memory, strict=True):
            mem[: t.nbytes] = self.originals[t.name].reshape(-1).view(np.uint8)
            mem[t.nbytes :] = np.frombuffer(canary(), dtype=np.uint8)

    def canary_reports(self):
        reports = []
        for t, mem in zip(self.tensors, self.memory, strict=True):
            report = canary_report(t.name, mem[t.nbytes :].tobytes())
            if report:
                reports.append(report)
        return reports

    def host(self, tensor):
        return np.array(self.arrays[tensor.index])

    def free(self):
        self.freed = True


class HostRunner:
    def __init__(self, backend, key, view):
        self.backend, self.key, self.view = backend, key, view

    def launch(self, grid, arrays):
        def run():
            self.view[grid](*arrays)
            if self.key in self.backend.overrun:  # a write past the end of the first tensor
                copies = self.backend.live_copies
                copies.memory[0][copies.tensors[0].nbytes + 3] ^= 0xFF

        self.backend.clock_.launch(self.key, run)()


class HostBackend:
    chip = "sm_90"
    card = "Fake GPU"

    def __init__(self, kernel, args, times=None, overrun=(), refuse=None):
        checked = kernel.checked(kernel._variant)
        bound = bind_kernel(checked, args, target="cpu", from_dlpack=_from_dlpack)
        self.kernel = kernel
        self.dims = dict(bound.dims)
        self.args = tuple(args)
        self.tensors = []
        for index, param in enumerate(checked.params):
            info = bound.arrays.get(param.name)
            if info is not None:
                self.tensors.append(
                    TensorArg(param.name, index, tuple(info.shape), info.typestr, info.elem, 0)
                )
        self.clock_ = FakeClock(times or (lambda name, n: 1.0))
        self.overrun = set(overrun)
        self.refuse = dict(refuse or {})
        self.loaded: list[str] = []
        self.live_copies = None

    def reference(self, reference):
        return run_reference(
            reference, self.args, self.tensors, lambda t: host_copy(self.args[t.index])
        )

    def copies(self):
        originals = {t.name: host_copy(self.args[t.index]) for t in self.tensors}
        self.live_copies = HostCopies(self.tensors, self.args, originals)
        return self.live_copies

    def load(self, compiled):
        self.loaded.append(compiled.key)
        if compiled.key in self.refuse:
            return self.refuse[compiled.key]
        return HostRunner(self, compiled.key, self.kernel.variant(**compiled.variant))

    def synchronize(self):
        pass

    def clock(self):
        return contextlib.nullcontext(self.clock_)
