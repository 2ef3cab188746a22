"""The launch fast path: a launch whose arguments look like an earlier one's skips binding.

The first launch with a given argument *signature* — each tensor's type, element type,
shape, strides and device; each scalar's Python type — runs the whole binding
(`binding.bind`, every rule checked, every refusal naming its parameter). Its result
becomes a `Plan`: what stays true for every launch of that signature (the extents, the
loaded function, the checks of the card's resources). A later launch with the same
signature only reads each tensor's data pointer and each scalar's value, checks what can
change between launches of one signature (a pointer's alignment, a scalar's range, the
grid), and calls the driver. Anything unusual falls back to the whole path, which
raises the error a user should see: an interface dict whose entries are not exactly of
the types binding takes (an extent `64.0` or `True` equals 64 or 1 in a key, so the
key alone cannot tell), a mask, a pointer that is not a positive int, a `<V2` typestr
(bf16 only by the `descr` or `dtype` binding reads). A kernel walking
the grid's blocks has its block counts written on every launch (the grid may change) and runs the CTAs the whole path
would: min(blocks, CTAs the card holds), the card's count taken once per plan. One of
clusters (`KernelContract.cluster` > 1) runs a cluster per cluster block as the whole
path does, and is launched as it is, by `cuLaunchKernelEx` with its cluster dimension:
the plan keeps the `CUlaunchConfig` and writes its grid x and stream each launch.

Reading a signature must be cheap: a torch tensor's `__cuda_array_interface__` is a
Python property costing microseconds, so torch-like tensors (`data_ptr`, `stride`,
`get_device`) are read through those methods instead; other arrays through their
interface dict.
"""

from __future__ import annotations

import ctypes
import math
from typing import Any

from phobos.runtime import cuda

F32_MAX = 3.4028234663852886e38

# The scalar slots the fast path packs itself; others (f16, bf16) always bind fully.
_FLOAT_SLOTS = {"f32": F32_MAX, "f64": math.inf}
_INT_RANGES = {
    "i32": (-(1 << 31), (1 << 31) - 1),
    "i64": (-(1 << 63), (1 << 63) - 1),
    "u32": (0, (1 << 32) - 1),
    "i8": (-128, 127),
    "u8": (0, 255),
    "u16": (0, 65535),
}
_GRID_LIMITS = ((1 << 31) - 1, 65535, 65535)
_WALK_LIMIT = (1 << 32) - 1  # launch_gpu.WALK_LIMIT: a walking kernel's 32-bit block count
_ADDRESS_LIMIT = 1 << 64  # binding.ADDRESS_LIMIT
_NO_GRID = object()  # a plan's last grid before any: no grid given `is` it


_TORCH_LIKE: dict[type, bool] = {}


def _torch_like(arg: Any) -> bool:
    t = type(arg)
    found = _TORCH_LIKE.get(t)
    if found is None:
        found = _TORCH_LIKE[t] = hasattr(t, "data_ptr") and hasattr(t, "get_device")
    return found


def read(args, tensor_slots) -> tuple[tuple, list[int]] | None:
    """The signature of `args` and their tensors' data pointers, in one pass; None
    when they cannot be read cheaply (the whole path then binds, and refuses what it
    must, with its own errors)."""
    try:
        return _read(args, tensor_slots)
    except Exception:  # a sparse tensor has no strides, an odd object no dtype
        return None


def _read(args, tensor_slots):
    if len(args) != len(tensor_slots):
        return None
    key = []
    pointers = []
    for arg, is_tensor in zip(args, tensor_slots, strict=False):  # lengths equal, as checked
        t = type(arg)
        if not is_tensor:
            key.append(t)
        elif _TORCH_LIKE.get(t) or _torch_like(arg):
            # torch.Size and stride() are tuples already: hashable as they come.
            key.append((t, arg.dtype, arg.shape, arg.stride(), arg.get_device(),
                        arg.requires_grad))  # fmt: skip
            pointers.append(arg.data_ptr())
        else:
            cai = getattr(arg, "__cuda_array_interface__", None)
            if cai is None:
                return None
            shape, strides, data = cai["shape"], cai.get("strides"), cai["data"]
            # Only entries of exactly the types binding takes: 64.0 and True equal 64 and
            # 1 in a key (numpy's ints, which binding takes too, always bind fully).
            if type(shape) is not tuple or type(data) is not tuple:
                return None
            ptr, readonly = data
            if type(readonly) is not bool or type(cai["version"]) is not int:
                return None
            if cai.get("mask") is not None:
                return None
            typestr = cai["typestr"]
            if type(typestr) is not str or typestr[1:2] == "V":
                return None  # `<V2` is bf16 only by its descr or dtype: bound fully
            for n in shape:
                if type(n) is not int:
                    return None
            if strides is not None:
                if type(strides) is not tuple:
                    return None
                for n in strides:
                    if type(n) is not int:
                        return None
            key.append((t, typestr, shape, strides, readonly))
            pointers.append(ptr)  # its type and value checked by `Plan.launch`
    return tuple(key), pointers


class Plan:
    """One signature's launch: built from a launch that bound fully and succeeded.

    A plan owns its slots (a `Packer` of its own), filled from that first launch (its
    arguments `bound`, its grid's block `counts`): the extents, fixed by the signature,
    are never written again; a later launch writes only the pointers, the scalars and a
    walking kernel's block counts, and encodes a TMA tensor map again when its tensor's
    pointer changed (its extents are the signature's too).
    """

    def __init__(self, kernel, bound, function, counts) -> None:
        from phobos.runtime.launch_gpu import Packer, map_extents, resident_ctas

        contract = kernel.contract
        self.function = function
        self.device = function.device
        self.packer = Packer(contract)
        self.params = self.packer.pack(bound, counts)
        self.lock = self.packer.lock
        self.handle = ctypes.c_void_p(function.handle)
        self.threads = contract.threads
        self.shared = contract.dynamic_smem
        self.meta = {**bound.dims, **contract.variant}
        self._last: tuple = (_NO_GRID, None, None)  # the last tuple grid, its counts, CTAs
        self.blocks = self.packer.blocks  # a walking kernel's block-count slots, or []
        # The CTAs the card holds, which the whole path asked the driver for already.
        self.resident = resident_ctas(function, contract, self.shared) if self.blocks else 0
        # A kernel of clusters: never `cuLaunchKernel`, which would launch no cluster.
        self.cluster = contract.cluster
        self.config = None
        if self.cluster > 1:
            self.config = cuda.launch_config(
                (self.cluster, 1, 1), (self.threads, 1, 1), self.shared, 0, self.cluster
            )
            self.config_ptr = ctypes.pointer(self.config)
            self.launch_ex = cuda.raw_launch_kernel_ex()
        self.single = cuda.device_count() == 1
        # Per slot to write on a launch: pointers by their tensor's position among the
        # tensor arguments; scalars by the argument's position, with their type.
        tensors = [n for n in contract.arguments if n in contract.tensors]
        self.pointers = []
        self.scalars = []
        for value, kind, name, _convert, _limit in self.packer.plan:
            if kind == 0:
                self.pointers.append((value, tensors.index(name)))
            elif kind == 1:
                stype = contract.scalars[name]
                self.scalars.append((value, contract.arguments.index(name), stype))
        # Per tensor map: its slot's index, its tensor's position, the fixed extents.
        self.maps = [
            (i, tensors.index(m.tensor), *map_extents(m, bound.dims))
            for i, (_slot, m) in enumerate(self.packer.maps)
        ]

    def launch(self, grid, args, pointers, stream) -> bool:
        """Launch, or return False for the whole path to handle (and explain) it."""
        last = self._last  # (grid, counts, CTAs), replaced whole: threads may share the plan
        if grid is last[0]:  # the tuple of ints checked last time: it cannot have changed
            counts, ctas = last[1], last[2]
        else:
            counts = self._grid(grid)
            if counts is None:
                return False
            ctas = counts
            if self.blocks:  # one CTA per block, no more than the card holds: each walks on
                # (launch_gpu.walking_ctas: with clusters of c, c CTAs per cluster block
                # of c blocks along x; `resident` is whole clusters, one at least)
                x, y, z = counts
                c = self.cluster
                ctas = (c * min(-(-x // c) * y * z, self.resident // c), 1, 1)
                if x * y * z + ctas[0] > _WALK_LIMIT:  # the whole path refuses it, and says why
                    return False
            if type(grid) is tuple:
                self._last = (grid, counts, ctas)
        with self.lock:
            if self.blocks:
                x, y, z = self.blocks
                x.value, y.value, z.value = counts
            for value, i in self.pointers:
                ptr = pointers[i]
                # Binding for the GPU checked 16-byte alignment and a 64-bit address; keep
                # checking them (a null pointer, for an empty array, binds fully)
                if type(ptr) is not int or ptr & 15 or not 0 < ptr < _ADDRESS_LIMIT:
                    return False
                value.value = ptr
            for i, t, rows, cols in self.maps:  # a cheap no-op while the pointer stays
                self.packer.write_map(i, pointers[t], rows, cols)
            for value, i, stype in self.scalars:
                v = _scalar(args[i], stype)
                if v is None:
                    return False
                value.value = v
            if not (self.single and getattr(cuda._CURRENT, "ctx", None) == self.device._context):
                self.device.activate()
            handle = None if stream is None else _stream(stream)
            if self.config is not None:
                self.config.gridDimX = ctas[0]
                self.config.hStream = handle or None
                status = self.launch_ex(self.config_ptr, self.handle, self.params, None)
                call = "cuLaunchKernelEx"
            else:
                handle = ctypes.c_void_p(handle) if handle else None  # None: a whole NULL
                status = (cuda._RAW_LAUNCH or cuda.raw_launch_kernel())(
                    self.handle, ctas[0], ctas[1], ctas[2], self.threads, 1, 1, self.shared,
                    handle, self.params, None,
                )  # fmt: skip
                call = "cuLaunchKernel"
        if status:
            cuda.check(status, call)
        return True

    def _grid(self, grid):
        if callable(grid):
            grid = grid(dict(self.meta))  # a copy: the grid function may change its own
        if type(grid) is int:
            grid = (grid,)
        if type(grid) is not tuple or not 1 <= len(grid) <= 3:
            return None
        for n, limit in zip(grid, _GRID_LIMITS, strict=False):
            if type(n) is not int or not 0 < n <= limit:
                return None
        return (*grid, 1, 1)[:3]


def _scalar(arg, stype: str):
    t = type(arg)
    if stype in _FLOAT_SLOTS:
        if t is not float and t is not int:
            return None
        try:
            v = float(arg)
        except OverflowError:
            return None
        if abs(v) > _FLOAT_SLOTS[stype] and math.isfinite(v):
            return None
        return v
    limits = _INT_RANGES.get(stype)
    if limits is not None:
        if t is not int or not limits[0] <= arg <= limits[1]:
            return None
        return arg
    if stype == "bool" and t is bool:
        return int(arg)
    return None  # f16, bf16: the whole path packs their bits


def _stream(stream) -> int | None:
    from phobos.runtime.launch_gpu import stream_handle

    return stream_handle(stream)
