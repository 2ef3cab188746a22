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
import os
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


def switch_count(name: str, lo: int, hi: int) -> int | None:
    """The number an environment switch such as `PHOBOS_STAGES=N` asks for, at most `hi`;
    None where it is unset, not a number, or below `lo` (the lowering's own choice then).

    >>> os.environ["DOCTEST_SWITCH_N"] = "12"
    >>> switch_count("DOCTEST_SWITCH_N", 2, 8), switch_count("DOCTEST_SWITCH_N", 16, 64)
    (8, None)
    >>> del os.environ["DOCTEST_SWITCH_N"]
    """
    asked = os.environ.get(name, "")
    if not asked.isdigit() or int(asked) < lo:
        return None
    return min(int(asked), hi)


def key_switches() -> dict[str, str]:
    """The options set away from their defaults, for a cache key (empty by default)."""
    return {} if TMA.get() else {"tma": "off"}
