"""Loading compiled kernels on a device: PTX -> cubin (`phobos.runtime.assemble`), a
module loaded in the device's context, and its functions.

    dev = cuda.device(0)
    cubin = link(ptx_text, dev)              # ptxas, whole program; None without one
    mod = Module.load(cubin, dev)            # cuModuleLoadDataEx
    fn = mod.function("saxpy")               # cuModuleGetFunction
    fn.registers, fn.static_smem, fn.max_threads

`load_kernel(ptx, contract_json, key, dev)` does the same through the kernel cache:
a hit loads the cached cubin and assembles nothing; a miss assembles and stores the
cubin. Without a usable `ptxas` the driver compiles the PTX as it loads it, and the
cache keeps the PTX alone. Every driver failure is a `cuda.CudaError` naming the call,
with the JIT's log (`assemble.AssembleError`, naming `ptxas`, for PTX it refuses).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from phobos.log import logger
from phobos.runtime import assemble, cuda
from phobos.runtime.cache import Entry, KernelCache, Key


def link(ptx: str | bytes, device: cuda.Device, chip: str | None = None) -> bytes | None:
    """The cubin of `ptx` for `chip` (`device`'s own by default; its arch-specific
    `target` for PTX written for that), assembled as a whole program by the toolkit's
    `ptxas`; None when there is no `ptxas` this driver can load the output of (the
    driver then compiles the PTX as `Module.load` loads it)."""
    tool = assemble.usable_ptxas(cuda.driver_version())
    if tool is None:
        return None
    data = ptx.encode() if isinstance(ptx, str) else ptx
    return assemble.assemble(data, chip or device.chip, tool)


def load_image(ptx: str, cubin: bytes | None) -> bytes:
    """What `cuModuleLoadDataEx` takes: the cubin, else the PTX, NUL-terminated."""
    return cubin if cubin is not None else ptx.encode() + b"\0"


def _load(ptx: str, cubin: bytes | None, device: cuda.Device) -> Module:
    """The module from `cubin`; from `ptx`, compiled by the driver, when there is no
    cubin or the driver refuses it (a cache filled on a machine of a newer driver)."""
    if cubin is not None:
        try:
            return Module.load(cubin, device)
        except cuda.CudaError as exc:
            logger.debug("the driver refused the cubin (%s): it compiles the PTX", exc.name)
    return Module.load(load_image(ptx, None), device)


class Module:
    """A module loaded in one device's primary context; unloaded when collected."""

    def __init__(self, handle: int, device: cuda.Device, log: str = ""):
        self.handle = handle
        self.device = device
        self.log = log
        self._functions: dict[str, Function] = {}

    @classmethod
    def load(cls, image: bytes, device: cuda.Device) -> Module:
        """Load a cubin (or NUL-terminated PTX, which the driver then compiles)."""
        device.activate()
        handle, log = cuda.module_load_data(image)
        return cls(handle, device, log)

    def function(self, name: str) -> Function:
        """The kernel `name` (the PTX `.entry` name); found once."""
        found = self._functions.get(name)
        if found is None:
            self.device.activate()
            handle = cuda.module_get_function(self.handle, name)
            found = self._functions[name] = Function(handle, name, self)
        return found

    def __del__(self):
        handle, self.handle = getattr(self, "handle", 0), 0
        if handle:
            try:
                self.device.activate()
                cuda.module_unload(handle)
            except Exception:
                pass  # at interpreter exit the driver may already be gone


@dataclass
class Function:
    """One kernel of a loaded module: its handle and what the driver says of it."""

    handle: int
    name: str
    module: Module
    dynamic_smem_limit: int = 48 * 1024  # raised by set_max_dynamic_shared
    resident_ctas: dict[int, int] = field(default_factory=dict)  # by dynamic shared bytes

    @property
    def device(self) -> cuda.Device:
        return self.module.device

    def attribute(self, attr: int) -> int:
        return cuda.func_get_attribute(self.handle, attr)

    @cached_property
    def registers(self) -> int:
        """Registers per thread."""
        return self.attribute(cuda.FUNC_NUM_REGS)

    @cached_property
    def static_smem(self) -> int:
        """Bytes of static shared memory per CTA."""
        return self.attribute(cuda.FUNC_SHARED_SIZE_BYTES)

    @cached_property
    def local_bytes(self) -> int:
        """Bytes of local memory (spills) per thread."""
        return self.attribute(cuda.FUNC_LOCAL_SIZE_BYTES)

    @cached_property
    def max_threads(self) -> int:
        """The most threads a CTA of this kernel may have (registers allowing)."""
        return self.attribute(cuda.FUNC_MAX_THREADS_PER_BLOCK)

    def set_max_dynamic_shared(self, nbytes: int) -> None:
        """Allow `nbytes` of dynamic shared memory per CTA (needed past 48 KB)."""
        if nbytes > self.dynamic_smem_limit:
            self.device.activate()
            cuda.func_set_attribute(self.handle, cuda.FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes)
            self.dynamic_smem_limit = nbytes

    def max_active_blocks(self, threads: int, dynamic_smem: int = 0) -> int:
        """How many CTAs of `threads` threads fit on one SM at once."""
        self.device.activate()
        return cuda.occupancy_max_active_blocks(self.handle, threads, dynamic_smem)

    def max_active_clusters(self, threads: int, dynamic_smem: int, cluster: int) -> int | None:
        """How many clusters of `cluster` CTAs of `threads` threads the card runs at
        once; None where the driver cannot say (`cuda.occupancy_max_active_clusters`)."""
        self.device.activate()
        return cuda.occupancy_max_active_clusters(self.handle, threads, dynamic_smem, cluster)


@dataclass(frozen=True)
class Loaded:
    """A kernel loaded on a device, and the cache entry it came from (or went to)."""

    module: Module
    entry: Entry
    hit: bool


def load_kernel(
    ptx: str,
    contract_json: str,
    key: Key,
    device: cuda.Device,
    cache: KernelCache | None = None,
) -> Loaded:
    """Load the kernel whose cache entry is `key` on `device`: the cached cubin when
    the cache has a valid one, else `ptx` assembled now and stored with `contract_json`
    (the PTX alone when there is no `ptxas`: the driver compiles it at each load).
    `key.chip` must be the device's chip or its `target`: a cubin runs on the chip it
    was assembled for.
    """
    if key.chip not in (device.chip, device.target):
        raise ValueError(
            f"the cache key is for {key.chip}, but device {device.ordinal} is {device.chip}"
        )
    cache = cache if cache is not None else KernelCache()
    entry = cache.get(key)
    if entry is not None and entry.cubin is not None:
        return Loaded(_load(ptx, entry.cubin, device), entry, True)
    cubin = link(ptx, device, key.chip)
    entry = cache.put(key, ptx, cubin, contract_json)
    return Loaded(_load(ptx, cubin, device), entry, False)
