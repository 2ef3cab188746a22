"""Launch errors: a bad argument or grid, refused before anything runs.

Every refusal names the kernel, the parameter and the rule it breaks, and says how
to fix it where there is one fix:

    >>> err = ArgumentTypeError("saxpy", "x", "argument `x` has element type float64, "
    ...     "but the kernel declares f32", help="convert it first, as in `x.astype(numpy.float32)`")
    >>> print(err)
    `saxpy`: argument `x` has element type float64, but the kernel declares f32
      = help: convert it first, as in `x.astype(numpy.float32)`
    >>> isinstance(err, TypeError), err.param
    (True, 'x')

A wrong kind of value (a scalar for a tensor, a wrong element type, the wrong
number of arguments) is an `ArgumentTypeError`, also a `TypeError`; a value of the
right kind that breaks a rule (extent, stride, alignment, device) is an
`ArgumentValueError`, also a `ValueError`; a bad grid is a `GridError`. A GPU
launch of arguments that bind, on a machine with no driver (or no device) to run it,
is a `GpuUnavailable`, also the driver's own `DriverUnavailable`. All are
`LaunchError`s. An uncaught one prints as its message alone (`phobos.lang`'s hook).
"""

from __future__ import annotations


class DriverUnavailable(OSError):
    """`libcuda.so.1` cannot be opened: no NVIDIA driver on this machine. Defined here,
    not in `phobos.runtime.cuda`, so that compiling (which raises launch errors' kin)
    never imports the driver's bindings; `cuda.DriverUnavailable` is this class."""


class LaunchError(Exception):
    """A launch refused before the kernel runs: `kernel`, `param` (or None) and why."""

    def __init__(self, kernel: str, param: str | None, message: str, *, help: str | None = None):
        self.kernel = kernel
        self.param = param
        self.message = message
        self.help = help
        super().__init__(str(self))

    def __str__(self) -> str:
        text = f"`{self.kernel}`: {self.message}"
        if self.help:
            text += f"\n  = help: {self.help}"
        return text


class ArgumentTypeError(LaunchError, TypeError):
    """An argument of the wrong kind: count, scalar vs array, element type, rank."""


class ArgumentValueError(LaunchError, ValueError):
    """An argument of the right kind that breaks a binding rule."""


class GridError(LaunchError, TypeError, ValueError):
    """A grid that is not 1 to 3 positive block counts (or a function giving them)."""


class LaunchUnavailable(LaunchError, NotImplementedError):
    """A launch this version cannot run: on the GPU, for now."""


class GpuUnavailable(LaunchError, DriverUnavailable):
    """A GPU launch whose arguments bind, on a machine whose driver cannot run it:
    no driver library, or no device. Raised after binding, so a wrong argument is
    refused as it would be with a GPU."""
