"""Lowering options a caller sets for one compilation, beside the environment's switches
(`phobos.runtime.cache.LOWERING_SWITCHES`); each is part of the kernel cache's key.

`TMA` is False while the launcher compiles the variant without TMA, for a launch whose
tensors' rows TMA cannot read (`phobos.runtime.tensormap`): the same kernel, its loops
staged by the cp.async ring.

    >>> with without_tma():
    ...     TMA.get()
    False
    >>> TMA.get()
    True
"""

from __future__ import annotations

import contextvars
from contextlib import contextmanager

TMA: contextvars.ContextVar[bool] = contextvars.ContextVar("phobos_tma", default=True)


@contextmanager
def without_tma():
    """Lower with no TMA ring while the block runs."""
    token = TMA.set(False)
    try:
        yield
    finally:
        TMA.reset(token)


def key_switches() -> dict[str, str]:
    """The options set away from their defaults, for a cache key (empty by default)."""
    return {} if TMA.get() else {"tma": "off"}
