"""The reference's arguments: copies of the launch's tensors made by their own library.

A reference is written in the user's array library, so it gets arrays of that library:
a copy of a torch tensor is a torch tensor on the same device (`t.detach().clone()`),
so `lambda x, y, out: out.copy_(x + y)` runs as written; a copy of a CuPy array is a
CuPy array on the same device. Any other array (numpy, an object that only offers
`__cuda_array_interface__`) is copied to a numpy array on the host. Scalars are passed
as given. The copies are what the reference may write; the caller's arrays are never
handed to it.

The tuner compares as numpy: `to_numpy` brings each copy back to the host.

    >>> from types import SimpleNamespace as T
    >>> x, out = np.arange(4, dtype=np.float32), np.zeros(4, dtype=np.float32)
    >>> def twice(x, out, a):
    ...     out[:] = a * x
    >>> tensors = [T(name="x", index=0), T(name="out", index=1)]
    >>> args = (x, out, 2.0)
    >>> expected = run_reference(twice, args, tensors, lambda t: np.array(args[t.index]))
    >>> expected["out"], out
    (array([0., 2., 4., 6.], dtype=float32), array([0., 0., 0., 0.], dtype=float32))

A library is told by the module its array type is defined in, so torch and CuPy are
imported only when an argument is one of theirs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

TORCH, CUPY, NUMPY = "torch", "cupy", "numpy"


def kind(array: Any) -> str:
    """The library whose copies `array`'s reference gets: `torch`, `cupy`, else `numpy`.

    >>> kind(np.zeros(2)), kind(2.0)
    ('numpy', 'numpy')
    """
    top = type(array).__module__.partition(".")[0]
    return top if top in (TORCH, CUPY) else NUMPY


def copy_for_reference(array: Any, host: Callable[[], np.ndarray]) -> Any:
    """A copy of `array` in its own library, on its own device; `host()` makes the numpy
    copy of an array that is neither torch's nor CuPy's."""
    found = kind(array)
    if found == TORCH:
        return array.detach().clone()
    if found == CUPY:
        with array.device:  # CuPy copies onto the current device, not the array's
            return array.copy()
    return host()


def to_numpy(array: Any) -> np.ndarray:
    """A reference's copy as a numpy array on the host, to compare with."""
    found = kind(array)
    if found == TORCH:
        return array.detach().cpu().numpy()
    if found == CUPY:
        import cupy

        return cupy.asnumpy(array)
    return np.asarray(array)


def run_reference(
    reference: Callable[..., Any],
    args: tuple,
    tensors: Sequence[Any],
    host: Callable[[Any], np.ndarray],
) -> dict[str, np.ndarray]:
    """Call `reference` on copies of `args`: each of `tensors` (with its `name` and its
    `index` among `args`) copied by `copy_for_reference`, `host(tensor)` making a numpy
    copy; every tensor as the reference leaves it, as numpy, by name."""
    copies = list(args)
    for t in tensors:
        copies[t.index] = copy_for_reference(args[t.index], lambda t=t: host(t))
    reference(*copies)
    return {t.name: to_numpy(copies[t.index]) for t in tensors}
