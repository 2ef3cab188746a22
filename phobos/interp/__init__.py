"""The tile interpreter: runs a checked kernel (`phobos.sema.hir`) on numpy arrays.

It is the reference semantics of the language and the CPU mode of launches:

    >>> from phobos.interp import run_kernel, InterpError
    >>> callable(run_kernel), issubclass(InterpError, Exception)
    (True, True)

numpy is imported only when a kernel runs.
"""

from __future__ import annotations

from phobos.interp.errors import InterpError


def run_kernel(kernel, grid, args, dims=None, *, max_iterations=None, max_seconds=None) -> None:
    """Run `kernel` over `grid` on numpy arrays: see `phobos.interp.tiles.run_kernel`."""
    from phobos.interp.tiles import run_kernel as run

    run(kernel, grid, args, dims, max_iterations=max_iterations, max_seconds=max_seconds)


def run_lir(kernel, grid, params, memory, **options):
    """Run a lir kernel on numpy: see `phobos.interp.threads.run_lir`."""
    from phobos.interp.threads import run_lir as run

    return run(kernel, grid, params, memory, **options)


def __getattr__(name: str):
    # The threads interpreter's memory and report, imported (with numpy) on first use.
    if name in ("GlobalMemory", "RunReport"):
        from phobos.interp import threads

        return getattr(threads, name)
    raise AttributeError(f"module 'phobos.interp' has no attribute '{name}'")


__all__ = ["GlobalMemory", "InterpError", "RunReport", "run_kernel", "run_lir"]
