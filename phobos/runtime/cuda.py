"""The CUDA driver API through `ctypes`: the calls the runtime makes, each one checked.

`libcuda.so.1` is opened on first use, never at import, so this module imports on a
machine with no GPU. Every call goes through `check(status, call)`: a non-zero
`CUresult` becomes a `CudaError` naming the call and carrying the driver's own name
and string for the code (`cuGetErrorName`, `cuGetErrorString`).

    >>> err = CudaError("cuLaunchKernel", 701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
    ...                 "too many resources requested for launch")
    >>> print(err)
    cuLaunchKernel failed: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (701): too many resources requested for launch
    >>> check(0, "cuInit")

On a machine with the driver, one `Device` per ordinal holds its primary context
(retained once) and its properties, read once:

    dev = device(0)
    dev.chip, dev.sm_count     # ('sm_90', 132) on an H200
    ptr = mem_alloc(4096)      # while dev is current (dev.activate())

The wrappers take and return plain ints for handles (a `CUfunction`, a `CUstream` is
its address); `0` is the legacy default stream. Where the driver exports a `_v2`
symbol for a call (`cuMemAlloc_v2`, `cuMemFree_v2`, ...) the wrapper calls it.
Tests replace the library with a fake object through `use_library`.

A kernel of thread-block clusters (sm_90) is launched by `cuLaunchKernelEx`, whose
`CUlaunchConfig` carries the grid and one `CUlaunchAttribute`, the cluster's
dimension; `LaunchConfig` and `LaunchAttribute` are those structs, laid out as
cuda.h (12.0 on) has them:

    >>> ctypes.sizeof(LaunchConfig), LaunchConfig.attrs.offset, ctypes.sizeof(LaunchAttribute)
    (56, 40, 72)
"""

from __future__ import annotations

import ctypes
import threading
from ctypes import POINTER, c_char_p, c_float, c_int, c_size_t, c_uint, c_uint64, c_void_p
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from phobos.runtime.errors import DriverUnavailable  # one class for no driver, everywhere

LIBRARY = "libcuda.so.1"

# CUdevice_attribute (cuda.h)
ATTR_MAX_THREADS_PER_BLOCK = 1
ATTR_MULTIPROCESSOR_COUNT = 16
ATTR_L2_CACHE_SIZE = 38
ATTR_COMPUTE_CAPABILITY_MAJOR = 75
ATTR_COMPUTE_CAPABILITY_MINOR = 76
ATTR_COOPERATIVE_LAUNCH = 95
ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97

# CUfunction_attribute
FUNC_MAX_THREADS_PER_BLOCK = 0
FUNC_SHARED_SIZE_BYTES = 1
FUNC_LOCAL_SIZE_BYTES = 3
FUNC_NUM_REGS = 4
FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8

# CUpointer_attribute
POINTER_DEVICE_ORDINAL = 9

# CUlaunchAttributeID
LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4

# CUjit_option
JIT_INFO_LOG_BUFFER = 3
JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4
JIT_ERROR_LOG_BUFFER = 5
JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6
JIT_LOG_VERBOSE = 12

LOG_SIZE = 1 << 16  # bytes of JIT info and error log kept


class LaunchAttributeValue(ctypes.Union):
    """cuda.h's `CUlaunchAttributeValue`: a union padded to 64 bytes; only its
    `clusterDim` is written here. Its other members hold pointers (a `CUevent`), so it
    is 8-byte aligned, as `event` makes this one."""

    class _Dim(ctypes.Structure):
        _fields_ = [("x", c_uint), ("y", c_uint), ("z", c_uint)]

    _fields_ = [("pad", ctypes.c_char * 64), ("clusterDim", _Dim), ("event", c_void_p)]


class LaunchAttribute(ctypes.Structure):
    """cuda.h's `CUlaunchAttribute`: the attribute's id (a 4-byte enum), padding to 8
    bytes, then its value: 72 bytes."""

    _fields_ = [("id", c_int), ("pad", ctypes.c_char * 4), ("value", LaunchAttributeValue)]


class LaunchConfig(ctypes.Structure):
    """cuda.h's `CUlaunchConfig`, what `cuLaunchKernelEx` and
    `cuOccupancyMaxActiveClusters` read: the grid and block dimensions, the dynamic
    shared bytes, the stream (at offset 32, after 4 bytes of padding), the attributes
    and their count: 56 bytes."""

    _fields_ = [
        ("gridDimX", c_uint),
        ("gridDimY", c_uint),
        ("gridDimZ", c_uint),
        ("blockDimX", c_uint),
        ("blockDimY", c_uint),
        ("blockDimZ", c_uint),
        ("sharedMemBytes", c_uint),
        ("hStream", c_void_p),
        ("attrs", POINTER(LaunchAttribute)),
        ("numAttrs", c_uint),
    ]


_p = POINTER
# name -> (symbol, argtypes). Handles are c_void_p, device pointers c_size_t (64-bit).
_SIGNATURES: dict[str, tuple[str, list[Any]]] = {
    "cuGetErrorName": ("cuGetErrorName", [c_int, _p(c_char_p)]),
    "cuGetErrorString": ("cuGetErrorString", [c_int, _p(c_char_p)]),
    "cuInit": ("cuInit", [c_uint]),
    "cuDriverGetVersion": ("cuDriverGetVersion", [_p(c_int)]),
    "cuDeviceGetCount": ("cuDeviceGetCount", [_p(c_int)]),
    "cuDeviceGet": ("cuDeviceGet", [_p(c_int), c_int]),
    "cuDeviceGetName": ("cuDeviceGetName", [c_char_p, c_int, c_int]),
    "cuDeviceGetAttribute": ("cuDeviceGetAttribute", [_p(c_int), c_int, c_int]),
    "cuDevicePrimaryCtxRetain": ("cuDevicePrimaryCtxRetain", [_p(c_void_p), c_int]),
    "cuCtxSetCurrent": ("cuCtxSetCurrent", [c_void_p]),
    "cuCtxGetCurrent": ("cuCtxGetCurrent", [_p(c_void_p)]),
    "cuCtxSynchronize": ("cuCtxSynchronize", []),
    "cuPointerGetAttribute": ("cuPointerGetAttribute", [c_void_p, c_int, c_size_t]),
    "cuModuleLoadDataEx": (
        "cuModuleLoadDataEx",
        [_p(c_void_p), c_char_p, c_uint, _p(c_int), _p(c_void_p)],
    ),
    "cuModuleUnload": ("cuModuleUnload", [c_void_p]),
    "cuModuleGetFunction": ("cuModuleGetFunction", [_p(c_void_p), c_void_p, c_char_p]),
    "cuFuncGetAttribute": ("cuFuncGetAttribute", [_p(c_int), c_int, c_void_p]),
    "cuFuncSetAttribute": ("cuFuncSetAttribute", [c_void_p, c_int, c_int]),
    "cuOccupancyMaxActiveBlocksPerMultiprocessor": (
        "cuOccupancyMaxActiveBlocksPerMultiprocessor",
        [_p(c_int), c_void_p, c_int, c_size_t],
    ),
    "cuLaunchKernel": (
        "cuLaunchKernel",
        [c_void_p, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_void_p, c_void_p]
        + [c_void_p],
    ),
    "cuLaunchCooperativeKernel": (
        "cuLaunchCooperativeKernel",
        [c_void_p, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_void_p, c_void_p],
    ),
    # CUDA 12.0 on; the occupancy of clusters 11.8 on
    "cuLaunchKernelEx": ("cuLaunchKernelEx", [_p(LaunchConfig), c_void_p, c_void_p, c_void_p]),
    "cuOccupancyMaxActiveClusters": (
        "cuOccupancyMaxActiveClusters",
        [_p(c_int), c_void_p, _p(LaunchConfig)],
    ),
    "cuStreamCreate": ("cuStreamCreate", [_p(c_void_p), c_uint]),
    "cuStreamSynchronize": ("cuStreamSynchronize", [c_void_p]),
    "cuStreamDestroy": ("cuStreamDestroy_v2", [c_void_p]),
    "cuEventCreate": ("cuEventCreate", [_p(c_void_p), c_uint]),
    "cuEventRecord": ("cuEventRecord", [c_void_p, c_void_p]),
    "cuEventSynchronize": ("cuEventSynchronize", [c_void_p]),
    "cuEventElapsedTime": ("cuEventElapsedTime", [_p(c_float), c_void_p, c_void_p]),
    "cuEventDestroy": ("cuEventDestroy_v2", [c_void_p]),
    "cuMemAlloc": ("cuMemAlloc_v2", [_p(c_size_t), c_size_t]),
    "cuMemFree": ("cuMemFree_v2", [c_size_t]),
    "cuMemcpyHtoD": ("cuMemcpyHtoD_v2", [c_size_t, c_void_p, c_size_t]),
    "cuMemcpyDtoH": ("cuMemcpyDtoH_v2", [c_void_p, c_size_t, c_size_t]),
    "cuMemsetD8": ("cuMemsetD8_v2", [c_size_t, ctypes.c_ubyte, c_size_t]),
    "cuMemcpyDtoD": ("cuMemcpyDtoD_v2", [c_size_t, c_size_t, c_size_t]),
    "cuStreamIsCapturing": ("cuStreamIsCapturing", [c_void_p, _p(c_int)]),
    "cuTensorMapEncodeTiled": (
        "cuTensorMapEncodeTiled",
        [c_void_p, c_int, c_uint, c_void_p, _p(c_uint64), _p(c_uint64), _p(c_uint), _p(c_uint)]
        + [c_int, c_int, c_int, c_int],
    ),
}


class CudaError(RuntimeError):
    """A driver call that returned an error: `call`, `code`, the driver's `name` and
    `text` for it, and `log` (the JIT's error log, for a module load)."""

    def __init__(self, call: str, code: int, name: str, text: str, log: str = ""):
        self.call = call
        self.code = code
        self.name = name
        self.text = text
        self.log = log
        super().__init__(str(self))

    def __str__(self) -> str:
        message = f"{self.call} failed: {self.name} ({self.code}): {self.text}"
        if self.log:
            message += "\n" + self.log.rstrip()
        return message


# ---------------------------------------------------------------------------
# The library


_LIB: Any = None
_FUNCS: dict[str, Any] = {}
_RAW_LAUNCH: Any = None  # raw_launch_kernel's function, once per library
_LOCK = threading.RLock()
_INITIALISED = False
_COUNT: int | None = None


def library() -> Any:
    """The driver library, opened on first use; `DriverUnavailable` when absent."""
    global _LIB
    if _LIB is None:
        try:
            _LIB = ctypes.CDLL(LIBRARY)
        except OSError as exc:
            raise DriverUnavailable(
                f"cannot load the CUDA driver library `{LIBRARY}`: {exc}; running a kernel "
                "on the GPU needs an NVIDIA driver (PHOBOS_INTERPRET=1 runs it on the CPU)"
            ) from None
    return _LIB


def use_library(lib: Any) -> Any:
    """Call `lib` (an object with the driver's functions as attributes) from now on;
    returns the one it replaces (None when none was opened). For tests."""
    global _LIB, _INITIALISED, _COUNT, _RAW_LAUNCH
    previous, _LIB = _LIB, lib
    _COUNT = None
    _RAW_LAUNCH = None
    _FUNCS.clear()
    _DEVICES.clear()
    _CURRENT.__dict__.clear()
    _INITIALISED = False
    return previous


def _fn(name: str):
    found = _FUNCS.get(name)
    if found is None:
        symbol, argtypes = _SIGNATURES[name]
        lib = library()
        try:
            found = getattr(lib, symbol)
        except AttributeError:
            raise DriverUnavailable(
                f"the CUDA driver `{LIBRARY}` has no `{symbol}`: update the NVIDIA driver"
            ) from None
        if isinstance(found, ctypes._CFuncPtr):
            found.argtypes = argtypes
            found.restype = c_int
        _FUNCS[name] = found
    return found


def check(status: int, call: str, log: str = "") -> None:
    """Raise `CudaError` for a non-zero `status` returned by `call`; `log` is added.

    >>> check(0, "cuCtxSynchronize") is None
    True
    """
    if status == 0:
        return
    raise CudaError(call, status, *_describe(status), log=log)


def _describe(status: int) -> tuple[str, str]:
    """The driver's name and string for `status` (its own words, when it knows them)."""
    texts = []
    for call in ("cuGetErrorName", "cuGetErrorString"):
        out = c_char_p()
        try:
            ok = _fn(call)(status, ctypes.pointer(out)) == 0 and out.value
        except Exception:
            ok = False
        texts.append(out.value.decode(errors="replace") if ok else "")
    name = texts[0] or "CUDA_ERROR_UNKNOWN_CODE"
    return name, texts[1] or "the driver gives no description of this code"


def _call(name: str, *args) -> None:
    check(_fn(name)(*args), name)


# ---------------------------------------------------------------------------
# Initialisation and devices


def init() -> None:
    """`cuInit(0)`, once per process."""
    global _INITIALISED
    if not _INITIALISED:
        with _LOCK:
            if not _INITIALISED:
                _call("cuInit", 0)
                _INITIALISED = True


def device_count() -> int:
    """How many CUDA devices the driver sees (asked once: it is fixed for a process)."""
    global _COUNT
    if _COUNT is None:
        init()
        n = c_int()
        _call("cuDeviceGetCount", ctypes.pointer(n))
        _COUNT = n.value
    return _COUNT


def driver_version() -> int:
    """The driver's CUDA version, as 12040 for 12.4."""
    n = c_int()
    _call("cuDriverGetVersion", ctypes.pointer(n))
    return n.value


def ctx_get_current() -> int:
    """The calling thread's current context handle, 0 for none."""
    ctx = c_void_p()
    _call("cuCtxGetCurrent", ctypes.pointer(ctx))
    return ctx.value or 0


def ctx_set_current(ctx: int) -> None:
    _call("cuCtxSetCurrent", ctx)


def ctx_synchronize() -> None:
    """Wait for everything queued in the current context."""
    _call("cuCtxSynchronize")


def pointer_device(ptr: int) -> int:
    """The ordinal of the device that owns the device pointer `ptr` (an array's device)."""
    init()
    ordinal = c_int()
    status = _fn("cuPointerGetAttribute")(
        ctypes.cast(ctypes.pointer(ordinal), c_void_p), POINTER_DEVICE_ORDINAL, ptr
    )
    check(status, "cuPointerGetAttribute")
    return ordinal.value


_DEVICES: dict[int, Device] = {}
_CURRENT = threading.local()


def device(ordinal: int = 0) -> Device:
    """The `Device` of `ordinal`: one object per ordinal, for the process."""
    found = _DEVICES.get(ordinal)
    if found is None:
        with _LOCK:
            found = _DEVICES.get(ordinal)
            if found is None:
                found = _DEVICES[ordinal] = Device(ordinal)
    return found


@dataclass(frozen=True)
class DeviceProperties:
    """What the runtime reads of a device, once."""

    name: str
    major: int
    minor: int
    sm_count: int
    max_shared_optin: int
    l2_bytes: int
    max_threads: int
    cooperative: bool


class Device:
    """One GPU: its primary context (retained on first use, kept for the process)
    and its properties. `activate()` makes the context current on this thread.

        dev = device(0)
        dev.activate()
        dev.chip, dev.properties.sm_count
    """

    def __init__(self, ordinal: int):
        init()
        handle = c_int()
        _call("cuDeviceGet", ctypes.pointer(handle), ordinal)
        self.ordinal = ordinal
        self.handle = handle.value
        self._context = 0

    @property
    def context(self) -> int:
        """The primary context's handle, retained on first use."""
        if not self._context:
            ctx = c_void_p()
            _call("cuDevicePrimaryCtxRetain", ctypes.pointer(ctx), self.handle)
            self._context = ctx.value or 0
        return self._context

    def activate(self) -> None:
        """Make this device's primary context current on the calling thread.

        With several GPUs the driver is asked each time: torch or CuPy may have made
        another device's context current since the last launch. With one GPU every
        library shares its primary context, so the thread's last answer is kept (a
        foreign context made current behind our back would make the launch fail loudly,
        never run elsewhere).
        """
        ctx = self.context
        if device_count() == 1 and getattr(_CURRENT, "ctx", None) == ctx:
            return
        if ctx_get_current() != ctx:
            ctx_set_current(ctx)
        _CURRENT.ctx = ctx

    def attribute(self, attr: int) -> int:
        value = c_int()
        _call("cuDeviceGetAttribute", ctypes.pointer(value), attr, self.handle)
        return value.value

    @cached_property
    def properties(self) -> DeviceProperties:
        buf = ctypes.create_string_buffer(256)
        _call("cuDeviceGetName", buf, len(buf), self.handle)
        a = self.attribute
        return DeviceProperties(
            name=buf.value.decode(errors="replace"),
            major=a(ATTR_COMPUTE_CAPABILITY_MAJOR),
            minor=a(ATTR_COMPUTE_CAPABILITY_MINOR),
            sm_count=a(ATTR_MULTIPROCESSOR_COUNT),
            max_shared_optin=a(ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
            l2_bytes=a(ATTR_L2_CACHE_SIZE),
            max_threads=a(ATTR_MAX_THREADS_PER_BLOCK),
            cooperative=bool(a(ATTR_COOPERATIVE_LAUNCH)),
        )

    @property
    def name(self) -> str:
        return self.properties.name

    @property
    def chip(self) -> str:
        """The PTX target of this device's compute capability: `sm_90` for 9.0."""
        return f"sm_{self.properties.major}{self.properties.minor}"

    @property
    def target(self) -> str:
        """The chip Phobos compiles for on this device: its arch-specific target where
        Phobos has one (`sm_90a` on 9.0, for wgmma and setmaxnreg; PTX for it runs on
        that compute capability alone), else `chip`."""
        return "sm_90a" if self.chip == "sm_90" else self.chip

    @property
    def sm_count(self) -> int:
        return self.properties.sm_count

    def synchronize(self) -> None:
        self.activate()
        ctx_synchronize()

    def __repr__(self) -> str:
        return f"<cuda.Device {self.ordinal}>"


# ---------------------------------------------------------------------------
# Modules and functions (module.py builds on these)


def _jit_options(*pairs: tuple[int, int]):
    options = (c_int * len(pairs))(*(k for k, _ in pairs))
    values = (c_void_p * len(pairs))(*(v for _, v in pairs))
    return options, values


class _Logs:
    """The JIT's info and error log buffers, passed as options and read after."""

    def __init__(self):
        self.info = ctypes.create_string_buffer(LOG_SIZE)
        self.error = ctypes.create_string_buffer(LOG_SIZE)
        self.options, self.values = _jit_options(
            (JIT_INFO_LOG_BUFFER, ctypes.addressof(self.info)),
            (JIT_INFO_LOG_BUFFER_SIZE_BYTES, LOG_SIZE),
            (JIT_ERROR_LOG_BUFFER, ctypes.addressof(self.error)),
            (JIT_ERROR_LOG_BUFFER_SIZE_BYTES, LOG_SIZE),
            (JIT_LOG_VERBOSE, 1),
        )

    def text(self) -> str:
        parts = [b.value.decode(errors="replace").strip() for b in (self.error, self.info)]
        return "\n".join(p for p in parts if p)


def module_load_data(image: bytes) -> tuple[int, str]:
    """Load a cubin (or PTX, NUL-terminated) into the current context: (module, info log).
    A failure's `CudaError` carries the JIT's log."""
    logs = _Logs()
    module = c_void_p()
    status = _fn("cuModuleLoadDataEx")(
        ctypes.pointer(module), image, len(logs.options), logs.options, logs.values
    )
    check(status, "cuModuleLoadDataEx", logs.text())
    return module.value or 0, logs.text()


def module_unload(module: int) -> None:
    _call("cuModuleUnload", module)


def module_get_function(module: int, name: str) -> int:
    func = c_void_p()
    _call("cuModuleGetFunction", ctypes.pointer(func), module, name.encode())
    return func.value or 0


def func_get_attribute(func: int, attr: int) -> int:
    value = c_int()
    _call("cuFuncGetAttribute", ctypes.pointer(value), attr, func)
    return value.value


def func_set_attribute(func: int, attr: int, value: int) -> None:
    _call("cuFuncSetAttribute", func, attr, value)


def occupancy_max_active_blocks(func: int, threads: int, dynamic_smem: int) -> int:
    """How many CTAs of `threads` threads and `dynamic_smem` bytes fit on one SM."""
    n = c_int()
    _call(
        "cuOccupancyMaxActiveBlocksPerMultiprocessor",
        ctypes.pointer(n),
        func,
        threads,
        dynamic_smem,
    )
    return n.value


def occupancy_max_active_clusters(
    func: int, threads: int, dynamic_smem: int, cluster: int
) -> int | None:
    """How many clusters of `cluster` CTAs (of `threads` threads and `dynamic_smem`
    bytes each) the card runs at once; None where the driver has no
    `cuOccupancyMaxActiveClusters` (before CUDA 11.8)."""
    try:
        call = _fn("cuOccupancyMaxActiveClusters")
    except DriverUnavailable:
        return None
    n = c_int()
    # The grid is one cluster: the call reads the block, the shared bytes and the
    # cluster's dimension, which must match the kernel's `.reqnctapercluster`.
    config = launch_config((cluster, 1, 1), (threads, 1, 1), dynamic_smem, 0, cluster)
    check(call(ctypes.pointer(n), func, ctypes.pointer(config)), "cuOccupancyMaxActiveClusters")
    return n.value


# ---------------------------------------------------------------------------
# Launching


def launch_kernel(func: int, grid, block, shared: int, stream: int, params) -> None:
    """`cuLaunchKernel`: `params` a ctypes array of pointers to the argument values."""
    status = _fn("cuLaunchKernel")(
        func, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared, stream, params, None
    )
    if status:
        check(status, "cuLaunchKernel")


def raw_launch_kernel():
    """`cuLaunchKernel` for the launch fast path: called as
    `f(func, gx, gy, gz, bx, by, bz, shared, stream, params, None)` with `func` and a
    nonzero `stream` as `c_void_p`, the counts as ints below 2**31; returns the status.

    It has no `argtypes`: ctypes then converts nothing (the argument objects are made
    once per plan), a third of the call's cost. `CDLL[name]` gives a function object
    of its own, so `launch_kernel`'s checked one keeps its argument types.
    """
    global _RAW_LAUNCH
    if _RAW_LAUNCH is None:
        lib = library()
        if isinstance(lib, ctypes.CDLL):
            raw = lib[_SIGNATURES["cuLaunchKernel"][0]]
            raw.restype = c_int
        else:  # a stand-in driver (tests) takes plain ints
            checked = _fn("cuLaunchKernel")

            def raw(func, *rest):
                return checked(func.value, *(_plain(v) for v in rest))

        _RAW_LAUNCH = raw
    return _RAW_LAUNCH


def _plain(v):
    return v.value if isinstance(v, c_void_p) else v


def launch_cooperative_kernel(func: int, grid, block, shared: int, stream: int, params) -> None:
    """`cuLaunchCooperativeKernel`: every CTA resident at once (a grid barrier's need)."""
    status = _fn("cuLaunchCooperativeKernel")(
        func, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared, stream, params
    )
    check(status, "cuLaunchCooperativeKernel")


def launch_config(grid, block, shared: int, stream: int, cluster: int) -> LaunchConfig:
    """The `CUlaunchConfig` of a launch in clusters of `cluster` CTAs along x: one
    attribute, `CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION` {cluster, 1, 1}, which the
    config keeps alive (ctypes holds what its pointer field was given). The grid's x
    must be a multiple of `cluster`.

    >>> c = launch_config((8, 1, 1), (256, 1, 1), 1024, 0, 2)
    >>> c.gridDimX, c.numAttrs, c.attrs[0].id, c.attrs[0].value.clusterDim.x
    (8, 1, 4, 2)
    """
    attr = LaunchAttribute(id=LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
    attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = cluster, 1, 1
    return LaunchConfig(*grid, *block, shared, stream or None, ctypes.pointer(attr), 1)


def raw_launch_kernel_ex():
    """`cuLaunchKernelEx` for the launch fast path: called as
    `f(config, func, params, None)` with `config` a pointer to a `LaunchConfig` its
    caller keeps (writing the grid's x and the stream before each call) and `func` a
    `c_void_p`; returns the status."""
    return _fn("cuLaunchKernelEx")


def launch_kernel_ex(func: int, grid, block, shared: int, stream: int, params, cluster: int):
    """`cuLaunchKernelEx` of a kernel of clusters of `cluster` CTAs along x (its PTX's
    `.reqnctapercluster`): `params` as for `launch_kernel`, the grid's x a multiple
    of `cluster`."""
    config = launch_config(grid, block, shared, stream, cluster)
    status = _fn("cuLaunchKernelEx")(ctypes.pointer(config), func, params, None)
    check(status, "cuLaunchKernelEx")


# ---------------------------------------------------------------------------
# Streams, events, memory


def stream_create(flags: int = 0) -> int:
    stream = c_void_p()
    _call("cuStreamCreate", ctypes.pointer(stream), flags)
    return stream.value or 0


def stream_synchronize(stream: int) -> None:
    _call("cuStreamSynchronize", stream)


def stream_destroy(stream: int) -> None:
    _call("cuStreamDestroy", stream)


def event_create(flags: int = 0) -> int:
    event = c_void_p()
    _call("cuEventCreate", ctypes.pointer(event), flags)
    return event.value or 0


def event_record(event: int, stream: int = 0) -> None:
    _call("cuEventRecord", event, stream)


def event_synchronize(event: int) -> None:
    _call("cuEventSynchronize", event)


def event_elapsed_ms(start: int, end: int) -> float:
    """Milliseconds between two recorded events."""
    ms = c_float()
    _call("cuEventElapsedTime", ctypes.pointer(ms), start, end)
    return ms.value


def event_destroy(event: int) -> None:
    _call("cuEventDestroy", event)


def mem_alloc(nbytes: int) -> int:
    """Allocate `nbytes` of device memory in the current context: the device pointer."""
    ptr = c_size_t()
    _call("cuMemAlloc", ctypes.pointer(ptr), nbytes)
    return ptr.value


def mem_free(ptr: int) -> None:
    _call("cuMemFree", ptr)


def memcpy_htod(dst: int, src: int, nbytes: int) -> None:
    """Copy `nbytes` from host address `src` to device pointer `dst`."""
    _call("cuMemcpyHtoD", dst, src, nbytes)


def memcpy_dtoh(dst: int, src: int, nbytes: int) -> None:
    """Copy `nbytes` from device pointer `src` to host address `dst`."""
    _call("cuMemcpyDtoH", dst, src, nbytes)


def memset_d8(dst: int, value: int, nbytes: int) -> None:
    _call("cuMemsetD8", dst, value, nbytes)


def memcpy_dtod(dst: int, src: int, nbytes: int) -> None:
    """Copy `nbytes` between two device pointers."""
    _call("cuMemcpyDtoD", dst, src, nbytes)


# CUstreamCaptureStatus
CAPTURE_NONE = 0
ERROR_STREAM_CAPTURE_IMPLICIT = 906  # the legacy stream, asked during another's capture


def stream_capturing(stream: int) -> bool:
    """Whether `stream` (0: the legacy default stream) is capturing a CUDA graph.

    The legacy stream answers with an error while another stream captures in the
    global mode, where any work on it would break that capture: that counts as
    capturing too.
    """
    status = c_int()
    code = _fn("cuStreamIsCapturing")(stream, ctypes.pointer(status))
    if code == ERROR_STREAM_CAPTURE_IMPLICIT:
        return True
    check(code, "cuStreamIsCapturing")
    return status.value != CAPTURE_NONE


# ---------------------------------------------------------------------------
# TMA tensor maps (phobos.runtime.tensormap decides the arguments)

TENSOR_MAP_BYTES = 128  # sizeof(CUtensorMap)
TENSOR_MAP_ALIGN = 64  # the driver writes it, and PTX reads it, at a 64-byte boundary


def aligned_buffer(size: int, align: int) -> ctypes.Array:
    """A zeroed ctypes array of `size` bytes whose address is a multiple of `align`
    (a view into a larger buffer, which it keeps alive).

    >>> buf = aligned_buffer(TENSOR_MAP_BYTES, TENSOR_MAP_ALIGN)
    >>> ctypes.sizeof(buf), ctypes.addressof(buf) % 64, bytes(buf) == bytes(128)
    (128, 0, True)
    """
    raw = (ctypes.c_ubyte * (size + align - 1))()
    return (ctypes.c_ubyte * size).from_buffer(raw, -ctypes.addressof(raw) % align)


def tensor_map_encode_tiled(
    data_type: int,
    rank: int,
    address: int,
    dims: tuple[int, ...],
    strides: tuple[int, ...],
    box: tuple[int, ...],
    element_strides: tuple[int, ...],
    interleave: int,
    swizzle: int,
    l2_promotion: int,
    oob_fill: int,
) -> bytes:
    """`cuTensorMapEncodeTiled`: the 128 bytes of the `CUtensorMap` it writes. `dims`,
    `box` and `element_strides` have `rank` entries, innermost first; `strides`, in
    bytes, `rank - 1`; the enums are plain ints."""
    init()
    out = aligned_buffer(TENSOR_MAP_BYTES, TENSOR_MAP_ALIGN)
    status = _fn("cuTensorMapEncodeTiled")(
        ctypes.addressof(out), data_type, rank, address,
        (c_uint64 * len(dims))(*dims), (c_uint64 * len(strides))(*strides),
        (c_uint * len(box))(*box), (c_uint * len(element_strides))(*element_strides),
        interleave, swizzle, l2_promotion, oob_fill,
    )  # fmt: skip
    check(status, "cuTensorMapEncodeTiled")
    return bytes(out)
