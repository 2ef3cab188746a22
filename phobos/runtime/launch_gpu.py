"""Launching on the GPU: bind by the contract, pack the `.entry` slots, call the driver.

A launch reads only the launch contract (`contract.KernelContract`). Its arguments
are bound by `binding.bind` — the rules every launch shares, each refusal naming the
parameter before the driver is called — against parameters made from the contract
(`params_of`). A `Packer`, built once per contract, holds one ctypes value per slot
and the array of their addresses `cuLaunchKernel` reads; a launch only reassigns the
values (the driver copies them at the call, so reuse is safe). Packing follows the
slot convention `phobos.runtime.contract` sets down; a TMA tensor map's slot holds the
128 bytes `cuTensorMapEncodeTiled` made from its tensor's pointer and extents, encoded
again only when they change (`phobos.runtime.tensormap`).

    kernel = GpuKernel(contract, ptx)             # one kernel of a K.ptx / K.json pair
    kernel.launch((blocks,), (x, y, out, 2.0))    # arrays: CUDA array interface or DLPack

`launch_gpu(function, contract, grid, bound)` is the step after binding: grid (a
`@persistent` kernel's from the occupancy API: CTAs per SM times SMs), dynamic
shared memory (raising the kernel's limit past 48 KB), then `cuLaunchKernel`, or
`cuLaunchCooperativeKernel` for a persistent kernel, whose CTAs must all be resident.

A kernel that walks the grid's blocks (`KernelContract.walks`, an sm_90a GEMM) takes
the grid as any kernel does, but its block counts go into its `blocks` slots, and it
runs a 1-D grid of min(x*y*z, CTAs the card holds at once) CTAs, each looping over
blocks ctaid.x, ctaid.x + nctaid.x, .. by itself. Its CTAs never wait on each other,
so the launch is an ordinary one: the cap is only for speed.

A walking kernel of clusters (`KernelContract.cluster` C > 1: its PTX's
`.reqnctapercluster C, 1, 1`, CTAs pairing up to share TMA loads) walks *cluster
blocks* instead, C blocks along x each, ceil(x/C)*y*z of them: cluster q (ctaid.x // C,
of nclusterid.x) takes cluster blocks q, q + nclusterid.x, .., its CTA of rank r the
block C*qx + r of each. It is launched by `cuLaunchKernelEx` with the cluster
dimension {C, 1, 1} as its one attribute, on C * min(cluster blocks, clusters the card
runs at once) CTAs, a multiple of C as the driver needs; the clusters resident come
from `cuOccupancyMaxActiveClusters` (the CTAs resident, in whole clusters, where the
driver has no such call), one at least. Its block-count slots hold the grid's counts
as for any walking kernel: it derives the cluster blocks itself. The CTAs of a
cluster wait on each other, which the hardware guarantees by running a cluster's CTAs
together; clusters never wait on each other, so the grid need not be resident.
"""

from __future__ import annotations

import ctypes
import struct
import threading
from collections.abc import Callable, Sequence
from typing import Any

from phobos.runtime import cuda, tensormap
from phobos.runtime.binding import Bound, bind, resolve_grid
from phobos.runtime.cache import KernelCache, Key, compiler_fingerprint, entry_key
from phobos.runtime.contract import KernelContract
from phobos.runtime.errors import ArgumentValueError, GpuUnavailable, GridError, LaunchError
from phobos.runtime.fastpath import Plan, read
from phobos.sema import hir

DEFAULT_SHARED_LIMIT = 48 * 1024  # dynamic shared memory allowed without opting in

# .param type -> the ctypes value packed into it
SLOT_CTYPES = {
    "u64": ctypes.c_uint64,
    "s64": ctypes.c_int64,
    "u32": ctypes.c_uint32,
    "s32": ctypes.c_int32,
    "b16": ctypes.c_uint16,
    "f32": ctypes.c_float,
    "f64": ctypes.c_double,
}


def _f16_bits(value: float) -> int:
    return struct.unpack("<H", struct.pack("<e", value))[0]


def _bf16_bits(value: float) -> int:
    # binding rounded the value to bf16 already: its f32 bits end in 16 zeros
    return struct.unpack("<I", struct.pack("<f", value))[0] >> 16


# Phobos scalar type -> the value its slot holds (widening is the ctypes type's)
_SCALAR_VALUE = {"f16": _f16_bits, "bf16": _bf16_bits, "bool": int}

_PTR, _SCALAR, _EXTENT = 0, 1, 2


class Packer:
    """The `.entry` slots of one contract as ctypes values, and `params`, the array
    of their addresses. `pack(bound, counts)` writes a launch's values and returns
    `params`.

    A tensor map's slot is a 64-byte-aligned 128-byte buffer; `maps` holds (slot, map)
    for each, and `map_keys` the (pointer, rows, cols) each slot's bytes encode. A
    walking kernel's block-count slots are `blocks` (x, y, z; empty for others).

        >>> from phobos.runtime.contract import KernelContract
        >>> k = KernelContract.build("k", [("x", "tensor", ("f32", ("N",))),
        ...     ("flag", "scalar", "bool")], dyn_dims=("N",), chip="sm_90", fingerprint="")
        >>> p = Packer(k)
        >>> len(p.params), [ctypes.sizeof(v) for v in p.values]
        (3, [8, 4, 4])
        >>> w = Packer(KernelContract.build("w", [], dyn_dims=(), chip="sm_90a",
        ...     fingerprint="", walk=True))
        >>> w.write_blocks((3, 2)); [v.value for v in w.blocks]
        [3, 2, 1]
    """

    def __init__(self, contract: KernelContract):
        self.contract = contract
        self.values = [_slot_value(p) for p in contract.params]
        self.params = (ctypes.c_void_p * max(len(self.values), 1))(
            *(ctypes.addressof(v) for v in self.values)
        )
        self.lock = threading.Lock()  # one launch at a time writes the values
        kinds = {"ptr": _PTR, "scalar": _SCALAR, "extent": _EXTENT}
        by_name = {m.name: m for m in contract.maps}
        self.plan = []
        self.maps: list[tuple[Any, Any]] = []
        self.blocks: list[Any] = []  # in x, y, z order, as the contract checked
        for p, value in zip(contract.params, self.values, strict=True):
            if p.kind == "tmap":
                tensormap.check_map(by_name[p.name])
                self.maps.append((value, by_name[p.name]))
                continue
            if p.kind == "blocks":
                self.blocks.append(value)
                continue
            convert = _SCALAR_VALUE.get(contract.scalars.get(p.name, ""))
            limit = None
            if p.kind == "extent":
                limit = (1 << (8 * p.width - 1)) - 1
            self.plan.append((value, kinds[p.kind], p.name, convert, limit))
        self.map_keys: list[tuple | None] = [None] * len(self.maps)

    def pack(self, bound: Bound, counts: Sequence[int] = ()):
        """Write `bound`'s pointers, scalars, extents and tensor maps into the slots,
        and a walking kernel's block counts: `counts`, the launch grid's 1 to 3."""
        for value, kind, name, convert, limit in self.plan:
            if kind == _PTR:
                value.value = bound.arrays[name].ptr
            elif kind == _SCALAR:
                v = bound.scalars[name]
                value.value = convert(v) if convert else v
            else:
                n = bound.dims[name]
                if n > limit:
                    raise self._too_long(name, n)
                value.value = n
        for i, (_slot, m) in enumerate(self.maps):
            rows, cols = map_extents(m, bound.dims)
            self.write_map(i, bound.arrays[m.tensor].ptr, rows, cols)
        if self.blocks:
            self.write_blocks(counts)
        return self.params

    def write_blocks(self, counts: Sequence[int]) -> None:
        """Write the launch grid's block counts (1 to 3, the others 1) into the
        block-count slots of a walking kernel."""
        if not 1 <= len(counts) <= 3:
            raise ValueError(f"a walking kernel's launch has 1 to 3 block counts, not {counts}")
        x, y, z = (*counts, 1, 1)[:3]
        self.blocks[0].value, self.blocks[1].value, self.blocks[2].value = x, y, z

    def write_map(self, i: int, ptr: int, rows: int, cols: int) -> None:
        """Encode tensor map `i` into its slot for a tensor at `ptr` of `rows` x `cols`,
        unless the slot holds that encoding already; refuses a tensor TMA cannot read
        (an `ArgumentValueError`) before any launch."""
        key = (ptr, rows, cols)
        if self.map_keys[i] != key:
            slot, m = self.maps[i]
            data = tensormap.encode(m, ptr, rows, cols, kernel=self.contract.name)
            ctypes.memmove(slot, data, len(data))
            self.map_keys[i] = key

    def _too_long(self, dim: str, n: int) -> LaunchError:
        c = self.contract
        param = next(t for t, spec in c.tensors.items() if dim in spec.dims)
        return ArgumentValueError(
            c.name,
            param,
            f"argument `{param}` binds {dim} = {n}, more than a {c.index_width}-bit index holds",
            help="compile the kernel with 64-bit indices",
        )


def _slot_value(p):
    if p.kind == "tmap":
        return cuda.aligned_buffer(cuda.TENSOR_MAP_BYTES, cuda.TENSOR_MAP_ALIGN)
    return SLOT_CTYPES[p.ptx_type]()


def map_extents(m, dims: dict[str, int]) -> tuple[int, int]:
    """The (rows, cols) of map `m`'s tensor at a launch binding `dims`.

    >>> from phobos.runtime.contract import TensorMapSpec
    >>> map_extents(TensorMapSpec("A_tmap", "A", "f16", ("M", 64), (128, 64)), {"M": 256})
    (256, 64)
    """
    rows, cols = (d if isinstance(d, int) else dims[d] for d in m.dims)
    return rows, cols


def params_of(contract: KernelContract) -> tuple[hir.Sym, ...]:
    """The kernel's parameters, as binding takes them, from the contract alone."""
    syms = []
    for i, name in enumerate(contract.arguments):
        if name in contract.tensors:
            spec = contract.tensors[name]
            dims = tuple(hir.Dyn(d) if isinstance(d, str) else d for d in spec.dims)
            t = hir.TensorT(hir.Scalar(spec.elem), dims)
        else:
            t = hir.Scalar(contract.scalars[name])
        syms.append(hir.Sym(name, i, "param", t))
    return tuple(syms)


def stream_handle(stream: Any) -> int:
    """The `CUstream` of `stream`: None (the legacy default stream, 0), an int, or a
    stream object of a library (`.handle`, torch's `.cuda_stream`, CuPy's `.ptr`)."""
    if stream is None:
        return 0
    if isinstance(stream, int):
        return stream
    for attr in ("handle", "cuda_stream", "ptr"):
        value = getattr(stream, attr, None)
        if isinstance(value, int):
            return value
    raise TypeError(f"`stream=` takes a CUDA stream or its handle, not {type(stream).__name__}")


def resident_ctas(function, contract: KernelContract, shared: int) -> int:
    """CTAs of the contract's threads and `shared` dynamic bytes the card holds at once:
    the occupancy API's CTAs per SM times the SMs, asked once per `shared` (cached on
    `function`). A `@persistent` kernel runs that many; a walking kernel at most that.

    For a kernel of clusters of C CTAs, in whole clusters: C times the clusters the
    card runs at once, by `cuOccupancyMaxActiveClusters` (a cluster's CTAs share one
    GPC, so fewer may fit than CTAs per SM times SMs would say), or by the CTAs per SM
    times SMs rounded down to a multiple of C where the driver has no such call; one
    cluster at least.
    """
    found = function.resident_ctas.get(shared)
    if found is None:
        # The occupancy API counts no CTA whose dynamic shared memory is past the
        # function's limit: raise it first (past 48 KB, as the launch will).
        function.set_max_dynamic_shared(shared)
        c = contract.cluster
        clusters = function.max_active_clusters(contract.threads, shared, c) if c > 1 else None
        if clusters is None:
            found = _resident_by_sm(function, contract, shared)
        elif clusters < 1:
            raise LaunchError(
                contract.name,
                None,
                f"no cluster of {c} CTAs of {contract.threads} threads and {shared} bytes "
                "of dynamic shared memory fits on the card, so the kernel cannot run",
            )
        else:
            found = clusters * c
        # The entry's `.reqnctapercluster` is fixed: one cluster size per function.
        found = function.resident_ctas[shared] = max(found // c, 1) * c
    return found


def _resident_by_sm(function, contract: KernelContract, shared: int) -> int:
    per_sm = function.max_active_blocks(contract.threads, shared)
    if per_sm < 1:
        what = "persistent kernel" if contract.persistent else "kernel"
        raise LaunchError(
            contract.name,
            None,
            f"no CTA of {contract.threads} threads and {shared} bytes of dynamic shared "
            f"memory fits on an SM, so the {what} cannot run",
        )
    return per_sm * function.device.sm_count


# A walking kernel counts its blocks in 32 bits: block n, then n + nctaid.x, must not wrap.
WALK_LIMIT = (1 << 32) - 1


def walking_ctas(
    counts: Sequence[int], resident: int, kernel_name: str = "", cluster: int = 1
) -> int:
    """CTAs a walking kernel runs for a grid of block `counts`: one per block, but no
    more than the card holds at once (`resident`), each of which then walks on. A
    kernel of clusters of `cluster` CTAs walks cluster blocks instead, ceil(x/cluster)
    * y * z of them, and runs `cluster` times min(cluster blocks, resident clusters)
    CTAs, where `resident` counts the CTAs of whole clusters (`resident_ctas`): a
    multiple of `cluster`, one cluster at least. A grid of more blocks than the
    kernel's 32-bit count reaches is a `GridError`.

    >>> walking_ctas((3, 2), 8), walking_ctas((9, 2, 1), 8)
    (6, 8)
    >>> walking_ctas((5, 2), 16, cluster=2), walking_ctas((5, 2), 8, cluster=2)
    (12, 8)
    >>> walking_ctas((1,), 1, cluster=4)  # a cluster at least
    4
    """
    x, y, z = (*counts, 1, 1)[:3]
    blocks = x * y * z
    walked = -(-x // cluster) * y * z
    ctas = cluster * min(walked, max(resident // cluster, 1))
    # With clusters the kernel counts cluster blocks, and steps by clusters: fewer of
    # each, so the check of the blocks and CTAs covers them.
    if blocks + ctas > WALK_LIMIT:
        raise GridError(
            kernel_name,
            None,
            f"the grid has {blocks} blocks, more than a kernel walking them counts in 32 "
            f"bits ({WALK_LIMIT - ctas}, with {ctas} CTAs)",
        )
    return ctas


def launch_gpu(
    function,
    contract: KernelContract,
    grid: Any,
    bound_args: Bound,
    stream: Any = None,
    shared: int | None = None,
    packer: Packer | None = None,
) -> tuple[int, ...]:
    """Launch `function` (a loaded `module.Function`) with arguments already bound by
    `contract`. `grid` is what `kernel[grid]` took; `shared` the dynamic shared bytes
    (None: the contract's). Returns the block counts the grid asked for (a walking
    kernel's CTAs run them, fewer CTAs than blocks where the card holds fewer; a
    kernel of clusters is launched in clusters, by `cuLaunchKernelEx`).
    """
    device = function.device
    dynamic = contract.dynamic_smem if shared is None else shared
    _check_resources(function, contract, dynamic)
    meta = {**bound_args.dims, **contract.variant}
    ctas = resident_ctas(function, contract, dynamic) if contract.persistent else None
    counts = resolve_grid(
        grid,
        meta,
        kernel_name=contract.name,
        persistent=contract.persistent,
        persistent_ctas=ctas,
    )
    blocks = (*counts, 1, 1)[:3]
    if contract.walks:  # its CTAs walk the blocks: the slots say how many there are
        resident = resident_ctas(function, contract, dynamic)
        blocks = (walking_ctas(counts, resident, contract.name, contract.cluster), 1, 1)
    handle = stream_handle(stream)
    if dynamic > function.dynamic_smem_limit:
        function.set_max_dynamic_shared(dynamic)
    packer = packer or Packer(contract)
    with packer.lock:
        params = packer.pack(bound_args, counts)
        device.activate()
        threads = (contract.threads, 1, 1)
        if contract.persistent:
            cuda.launch_cooperative_kernel(
                function.handle, blocks, threads, dynamic, handle, params
            )
        elif contract.cluster > 1:  # a walking kernel's clusters: x a multiple of them
            cuda.launch_kernel_ex(
                function.handle, blocks, threads, dynamic, handle, params, contract.cluster
            )
        else:
            cuda.launch_kernel(function.handle, blocks, threads, dynamic, handle, params)
    return counts


def _check_resources(function, contract: KernelContract, dynamic: int) -> None:
    """Refuse, before the driver, a launch the card cannot run."""
    props = function.device.properties
    if contract.threads > function.max_threads:
        raise LaunchError(
            contract.name,
            None,
            f"the kernel runs {contract.threads} threads per CTA, but with "
            f"{function.registers} registers per thread the card allows {function.max_threads}",
            help="lower `@launch(threads = ..)`, or cap the registers",
        )
    total = dynamic + function.static_smem
    if total > props.max_shared_optin:
        raise LaunchError(
            contract.name,
            None,
            f"the kernel needs {total} bytes of shared memory per CTA ({function.static_smem} "
            f"static, {dynamic} dynamic), more than {props.name} allows ({props.max_shared_optin})",
        )
    if contract.persistent and not props.cooperative:
        raise LaunchError(
            contract.name, None, f"{props.name} cannot launch cooperatively, as @persistent needs"
        )


# ---------------------------------------------------------------------------
# A kernel from its contract and PTX, loaded on each device it is launched on


class GpuKernel:
    """One compiled kernel: its contract and PTX, loaded lazily on every device
    that a launch's arrays live on (through the kernel cache), one packer.

        kernel = GpuKernel(contract.kernel("saxpy"), ptx_text)
        kernel.launch(lambda m: (m["N"] // 256,), (x, y, out, 2.0), stream=None)
    """

    def __init__(self, contract: KernelContract, ptx: str, cache: KernelCache | None = None):
        from phobos.runtime.contract import Contract

        self.contract = contract
        self.ptx = ptx
        self.cache = cache
        self.params = params_of(contract)
        self.packer = Packer(contract)
        self._contract_json = Contract((contract,)).to_json()
        self._functions: dict[int, Any] = {}
        self._ptx_sha = _sha_text(ptx)
        self._plans: dict[tuple, Plan] = {}
        self._tensor_slots = tuple(name in contract.tensors for name in contract.arguments)

    def bind(self, args: Sequence[Any], stream: Any = None) -> Bound:
        """Bind `args` by the contract, for the GPU (DLPack arrays read too)."""
        from phobos.runtime.dlpack import from_dlpack

        c = self.contract
        handle = None if stream is None else stream_handle(stream)
        return bind(
            self.params,
            args,
            kernel_name=c.name,
            variant=c.variant,
            aligned=c.aligned,
            target="gpu",
            from_dlpack=lambda obj: from_dlpack(obj, handle),
            index_width=c.index_width,
        )

    def function(self, device: cuda.Device):
        """The kernel loaded on `device`, once."""
        found = self._functions.get(device.ordinal)
        if found is None:
            from phobos.runtime.module import load_kernel

            key = self.key_for(device)
            loaded = load_kernel(self.ptx, self._contract_json, key, device, self.cache)
            found = self._functions[device.ordinal] = loaded.module.function(self.contract.entry)
        return found

    def _all_torch_like(self, args) -> bool:
        from phobos.runtime.fastpath import _torch_like

        return all(
            _torch_like(a)
            for a, is_tensor in zip(args, self._tensor_slots, strict=False)
            if is_tensor
        )

    def key_for(self, device: cuda.Device) -> Key:
        """The cache entry of this kernel's cubin for `device`'s chip (its arch-specific
        `target` where the PTX was written for that).

        Addressed by the PTX itself (with the compiler, chip and variant), never by the
        contract's own `cache_key` alone: a contract paired with other PTX must not
        find the first one's cubin.
        """
        c = self.contract
        return entry_key(
            self._ptx_sha,
            c.fingerprint or compiler_fingerprint(),
            device.target if c.chip == device.target else device.chip,
            c.variant,
        )

    def launch(self, grid: Any, args: Sequence[Any], stream: Any = None, shared=None):
        """Bind `args`, then launch on their device.

        A launch whose arguments have the signature of an earlier successful one takes
        that one's `fastpath.Plan` and skips binding; see `phobos.runtime.fastpath`.
        """
        key = None
        if shared is None and not self.contract.persistent:
            found = read(args, self._tensor_slots)
            if found is not None:
                key, pointers = found
                plan = self._plans.get(key)
                if plan is not None and plan.launch(grid, args, pointers, stream):
                    return None
        bound = self.bind(args, stream)
        device = open_device(self.contract.name, lambda: arrays_device(self.contract.name, bound))
        function = self.function(device)
        counts = launch_gpu(function, self.contract, grid, bound, stream, shared, self.packer)
        if key is not None and (cuda.device_count() == 1 or self._all_torch_like(args)):
            # Only a torch tensor's signature names its device: with several GPUs, other
            # arrays always take the whole path, which finds their device.
            self._plans[key] = Plan(self, bound, function, counts)
        return counts


def open_device(kernel: str, ordinal: Callable[[], int]) -> cuda.Device:
    """The device `ordinal()` names, once a launch's arguments are bound. Where the
    driver cannot run anything (no library, or `cuInit` failing: no device), a
    `GpuUnavailable` says so in one line.

        device = open_device("saxpy", lambda: arrays_device("saxpy", bound))
    """
    try:
        return cuda.device(ordinal())
    except cuda.DriverUnavailable as exc:
        raise GpuUnavailable(kernel, None, f"cannot launch on the GPU: {exc}") from None
    except cuda.CudaError as exc:
        if exc.call != "cuInit":
            raise
        raise GpuUnavailable(
            kernel,
            None,
            f"cannot launch on the GPU: {exc}",
            help="PHOBOS_INTERPRET=1 runs the kernel on the CPU",
        ) from None


def _sha_text(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


def first_device(args: Sequence[Any], tensor_slots: Sequence[bool]) -> int:
    """The ordinal of the device the first tensor argument that says so lives on, read
    without binding: it picks the chip a kernel is compiled for before its arguments
    are bound. 0 with one GPU (no driver call) or when no argument says; binding then
    refuses arrays on different devices, naming them (`arrays_device`).

        >>> first_device((2.0,), (False,))
        0
    """
    if not any(tensor_slots) or cuda.device_count() == 1:
        return 0
    for arg, is_tensor in zip(args, tensor_slots, strict=False):
        ordinal = _device_of(arg) if is_tensor else None
        if ordinal is not None:
            return ordinal
    return 0


def _device_of(arg: Any) -> int | None:
    """The device ordinal `arg` gives cheaply: torch's `get_device()`, the driver's
    owner of its interface pointer, or its DLPack device; None when it says nothing."""
    from phobos.runtime.fastpath import _torch_like

    try:
        if _torch_like(arg):
            ordinal = arg.get_device()
            return ordinal if ordinal >= 0 else None
        cai = getattr(arg, "__cuda_array_interface__", None)
        if cai is not None:
            ptr = cai["data"][0]
            return cuda.pointer_device(ptr) if ptr else None
        device_type, ordinal = arg.__dlpack_device__()
        return int(ordinal) if int(device_type) != 1 else None  # 1: DLPack's kDLCPU
    except Exception:  # binding reads the argument again, and explains what is wrong
        return None


def arrays_device(kernel: str, bound: Bound) -> int:
    """The ordinal of the device every tensor argument lives on (0 with no tensor or
    one device); arrays on different devices are refused, naming the parameter."""
    from phobos.runtime.dlpack import DLPackArray

    if not bound.arrays or cuda.device_count() == 1:
        return 0
    ordinals = {}
    for name, info in bound.arrays.items():
        if isinstance(info.obj, DLPackArray):  # it knows its device
            ordinals[name] = info.obj.device[1]
        elif info.ptr:  # an empty tensor's pointer is 0: nothing to ask the driver about
            ordinals[name] = cuda.pointer_device(info.ptr)
    if not ordinals:  # every tensor empty
        return 0
    first, ordinal = next(iter(ordinals.items()))
    for name, other in ordinals.items():
        if other != ordinal:
            raise ArgumentValueError(
                kernel,
                name,
                f"argument `{name}` is on device {other}, but argument `{first}` is on "
                f"device {ordinal}",
                help="a kernel runs on one device: move the arrays to the same one",
            )
    return ordinal
