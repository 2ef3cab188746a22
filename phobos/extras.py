"""Phobos's optional dependencies: each behind a pip extra, and one line when it is missing.

The compiler needs nothing beyond the standard library. The rest is installed on demand:

| extra | brings | needed by |
| --- | --- | --- |
| `numpy` | numpy | the tile interpreter (a kernel launched on the CPU), the autotuner, `--check-races` |
| `plot` | matplotlib | `python -m phobos.tune show --plot` |
| `ptxas` | nvidia-cuda-nvcc | assembling kernels with NVIDIA's `ptxas` where no CUDA toolkit is installed |

`require(module, what)` imports `module` or raises `MissingExtra`, an `ImportError` whose
message is the one line a user needs (the exception hook of `phobos.lang` prints it alone):

    >>> print(MissingExtra("the tile interpreter", "numpy"))
    the tile interpreter needs numpy: pip install "phobos[numpy]"

This module imports nothing optional, so the error paths that use it cannot fail in turn.
"""

from __future__ import annotations

import importlib

# extra -> the pip package it brings
EXTRAS = {"numpy": "numpy", "plot": "matplotlib", "ptxas": "nvidia-cuda-nvcc"}

# a module imported by `require` -> the extra that installs it
EXTRA_OF = {"numpy": "numpy", "matplotlib": "plot"}


class MissingExtra(ImportError):
    """`what` needs the package of `extra`, which is not installed."""

    def __init__(self, what: str, extra: str):
        self.what = what
        self.extra = extra
        super().__init__(
            f'{what} needs {EXTRAS[extra]}: pip install "phobos[{extra}]"', name=EXTRAS[extra]
        )

    def __str__(self) -> str:
        return self.msg


def require(module: str, what: str):
    """`module` imported, for `what` (say, "the tile interpreter"); `MissingExtra` naming
    the extra to install when it cannot be.

    >>> require("numpy", "the tile interpreter").__name__
    'numpy'
    """
    top = module.partition(".")[0]
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name not in (module, top):  # installed, but something it needs is not
            raise
        raise MissingExtra(what, EXTRA_OF[top]) from None
