"""Launching on the CPU: bind the arguments, then run the tile interpreter on them.

The binding is `phobos.runtime.binding`'s, the one a GPU launch uses, so an argument
this refuses the card refuses too. Host arrays (`__array_interface__`) run in place:
the interpreter gets numpy views of their memory, and what the kernel stores lands
in them. Device arrays (`__cuda_array_interface__`) run only when the launch copies
(`PHOBOS_INTERPRET=1`): each is copied to the host through the `DeviceCopier` in
use, and back after the kernel ends. numpy is imported here, when a launch needs it.

    >>> copier = current_copier()
    >>> set_copier(copier) is copier
    True

`launch_cpu(kernel, grid, args)` is what `kernel[grid](*args)` calls for a host
launch; `kernel` is the checked `hir.Kernel` of the variant launched.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from phobos.runtime.binding import ArrayInfo, Bound, bind_kernel, resolve_grid
from phobos.runtime.errors import ArgumentValueError, LaunchError
from phobos.sema import hir

# The CTAs a `@persistent` kernel (`kernel[()]`) gets on the CPU, where no occupancy
# sizes its grid. Several, so a kernel striding over its work by `ctx.grid` is run so.
PERSISTENT_CPU_CTAS = 4


class DeviceCopier(Protocol):
    """Moves a device array's contents to host memory and back.

    `to_host(obj, info)` returns a host array (numpy) of `info.shape` and element
    type holding `obj`'s contents; `to_device(obj, host, info)` writes `host` back
    into `obj`.
    """

    def to_host(self, obj: Any, info: ArrayInfo) -> Any: ...

    def to_device(self, obj: Any, host: Any, info: ArrayInfo) -> None: ...


class LibraryCopier:
    """Copies through the array's own library: cupy's `.get()`/`.set()`, torch's
    `.cpu()`/`.copy_()`. Anything else is refused, naming the parameter; the driver
    copies of the GPU runtime replace this one (`set_copier`).
    """

    def to_host(self, obj: Any, info: ArrayInfo) -> Any:
        if hasattr(obj, "get") and hasattr(obj, "set"):  # cupy.ndarray
            return obj.get()
        if hasattr(obj, "cpu") and hasattr(obj, "copy_"):  # torch.Tensor
            return obj.detach().cpu().numpy()
        raise TypeError(f"no way to copy a {type(obj).__name__} to the host is known")

    def to_device(self, obj: Any, host: Any, info: ArrayInfo) -> None:
        if hasattr(obj, "get") and hasattr(obj, "set"):
            obj.set(host)
        elif hasattr(obj, "cpu") and hasattr(obj, "copy_"):
            import torch  # present: obj is one of its tensors

            obj.copy_(torch.from_numpy(host))
        else:
            raise TypeError(f"no way to copy into a {type(obj).__name__} is known")


_COPIER: DeviceCopier = LibraryCopier()


def current_copier() -> DeviceCopier:
    """The `DeviceCopier` a copying launch uses."""
    return _COPIER


def set_copier(copier: DeviceCopier) -> DeviceCopier:
    """Use `copier` for device arrays from now on; returns the one it replaces."""
    global _COPIER
    previous, _COPIER = _COPIER, copier
    return previous


def numpy_module():
    """numpy, or `MissingExtra`: one line saying the CPU launch needs it."""
    from phobos.extras import require

    return require("numpy", "the tile interpreter")


def launch_cpu(
    kernel: hir.Kernel,
    grid: Any,
    args: Sequence[Any],
    *,
    copy_device: bool = False,
    copier: DeviceCopier | None = None,
) -> Bound:
    """Bind `args` to `kernel` and run it on the tile interpreter over `grid`.

    `grid` is 1 to 3 block counts or a function of a dict of the bound extents and
    the variant's `@autotune` constants (`binding.resolve_grid`). With `copy_device`,
    device arrays are copied to the host before and back after (through `copier`, else
    the current one). Returns the `Bound` arguments. Every bad argument or grid is a
    `LaunchError` raised before the kernel runs.
    """
    np = numpy_module()
    bound = bind_kernel(
        kernel, args, target="cpu", copy_device=copy_device, from_dlpack=_from_dlpack
    )
    meta = {**bound.dims, **dict(kernel.variant)}
    attrs = kernel.attrs
    counts = resolve_grid(
        grid,
        meta,
        kernel_name=kernel.name,
        persistent=bool(getattr(attrs, "persistent", False)),
        persistent_ctas=PERSISTENT_CPU_CTAS,
    )
    copier = copier or _COPIER
    values = dict(bound.values)
    copied: dict[str, Any] = {}
    for name, info in bound.arrays.items():
        if info.on_device:
            copied[name] = values[name] = _to_host(np, kernel.name, name, info, copier)
        else:
            values[name] = _host_view(np, kernel.name, name, info)
    from phobos.interp.tiles import run_kernel

    run_kernel(kernel, counts, values, dict(bound.dims))
    for name, host in copied.items():
        info = bound.arrays[name]
        try:
            copier.to_device(info.obj, host, info)
        except LaunchError:
            raise
        except Exception as exc:
            raise ArgumentValueError(
                kernel.name, name, f"argument `{name}` could not be copied back: {exc}"
            ) from exc
    return bound


def _from_dlpack(obj: Any) -> Any:
    return numpy_module().from_dlpack(obj)


def _host_view(np, kernel: str, name: str, info: ArrayInfo):
    """A numpy array over the host array's own memory, so stores land in it."""
    try:
        view = np.asarray(info.obj)
    except (TypeError, ValueError) as exc:  # binding read the dict; numpy reads it again
        raise ArgumentValueError(
            kernel, name, f"argument `{name}` does not give numpy a view of its memory: {exc}"
        ) from None
    if view.shape != info.shape or not view.flags.writeable:
        raise ArgumentValueError(
            kernel, name, f"argument `{name}` does not give numpy a writable view of its memory"
        )
    return view


def _to_host(np, kernel: str, name: str, info: ArrayInfo, copier: DeviceCopier):
    try:
        host = copier.to_host(info.obj, info)
    except LaunchError:
        raise
    except Exception as exc:
        raise ArgumentValueError(
            kernel, name, f"argument `{name}` could not be copied to the host: {exc}"
        ) from exc
    host = np.ascontiguousarray(host)
    if host.shape != info.shape:
        raise ArgumentValueError(
            kernel,
            name,
            f"argument `{name}` came back from the device with shape {host.shape}, "
            f"not {info.shape}",
        )
    return host
