"""What the runtime tests share: device arrays known only by their
`__cuda_array_interface__` (at addresses the fake driver hands out)."""

from __future__ import annotations


class Dev:
    """A device array known only by its `__cuda_array_interface__`."""

    def __init__(self, shape, typestr="<f4", ptr=0x10_0000):
        self.__cuda_array_interface__ = {
            "shape": tuple(shape),
            "typestr": typestr,
            "data": (ptr, False),
            "strides": None,
            "version": 3,
        }
