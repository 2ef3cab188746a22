"""PTX emission: lir kernels to PTX text for a target chip (`phobos.ptx.targets`).

>>> from phobos.lower.lir import Block, Kernel
>>> print(emit_module([Kernel("k", (), Block(()), threads=64)], "sm_90"))
... # doctest: +NORMALIZE_WHITESPACE
.version 8.0
.target sm_90
.address_size 64
<BLANKLINE>
.visible .entry k()
.maxntid 64, 1, 1
{
    ret;
}
<BLANKLINE>
"""

from phobos.ptx.emit import emit_kernel, emit_module
from phobos.ptx.ops import NoTemplate, PtxError, TargetError
from phobos.ptx.targets import TARGETS, Target, target

__all__ = [
    "TARGETS",
    "NoTemplate",
    "PtxError",
    "Target",
    "TargetError",
    "emit_kernel",
    "emit_module",
    "target",
]
