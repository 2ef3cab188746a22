"""Running kernels: binding arguments, and the launch paths.

binding.py     the argument rules of PYTHON.md "Launching", shared by every launch
launch_cpu.py  binding, then the tile interpreter over the grid, on numpy arrays
errors.py      LaunchError and its kinds: each refusal names the parameter

>>> from phobos.runtime import LaunchError, bind, launch_cpu
"""

from phobos.runtime.binding import ArrayInfo, Bound, bind, bind_kernel, describe, resolve_grid
from phobos.runtime.errors import (
    ArgumentTypeError,
    ArgumentValueError,
    DriverUnavailable,
    GpuUnavailable,
    GridError,
    LaunchError,
    LaunchUnavailable,
)
from phobos.runtime.launch_cpu import current_copier, launch_cpu, set_copier

__all__ = [
    "ArgumentTypeError",
    "ArgumentValueError",
    "ArrayInfo",
    "Bound",
    "DriverUnavailable",
    "GpuUnavailable",
    "GridError",
    "LaunchError",
    "LaunchUnavailable",
    "bind",
    "bind_kernel",
    "current_copier",
    "describe",
    "launch_cpu",
    "resolve_grid",
    "set_copier",
]
