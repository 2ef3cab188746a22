"""16-bit elements two a b32 word, as the tensor cores take them: an f16 accumulator's
pairs for wgmma, and a 16-bit tile's accumulator fragments as mma.sync's or wgmma's A
operand. A word holds elements 2w and 2w + 1 of its registers, the even one in the low
half (`mov.b32 %w, {%lo, %hi}`).

    >>> from phobos.lower.builder import Builder
    >>> from phobos.lower.lir import Reg
    >>> b = Builder()
    >>> words = pack(b, [Reg(f"h{i}", "f16") for i in range(4)])
    >>> [w.type for w in words], [i.op for i in b.stack[-1]]
    (['b32', 'b32'], ['mov', 'mov'])
"""

from __future__ import annotations

from phobos.lower.lir import Reg


def pack(b, regs, hint: str = "acc2") -> list[Reg]:
    """`regs` (an even count of 16-bit registers) as words: word w holds 2w and 2w + 1."""
    words = []
    for lo, hi in zip(regs[0::2], regs[1::2], strict=True):
        w = b.reg("b32", hint)
        b.emit("mov", (w,), (lo, hi), type="b32")
        words.append(w)
    return words


def unpack(b, words, regs) -> None:
    """`pack`'s inverse: the words' halves back into `regs`."""
    for w, lo, hi in zip(words, regs[0::2], regs[1::2], strict=True):
        b.emit("mov", (lo, hi), (w,), type="b32")


def register_a(b, regs, lay, i: int, step: int) -> list[Reg]:
    """The A fragment (16 x 16, four words) of row block `i` and k step `step` of a
    16-bit tile held in the `MmaAcc` layout `lay`: its accumulator fragments (i, 2 step)
    and (i, 2 step + 1), whose c0 c1 (row g, columns 2t, 2t + 1) and c2 c3 (row g + 8)
    are a0 a1 and a2 a3 of m16n8k16's A (wgmma's register A per warp likewise,
    `warpgroup.a_place`)."""
    first = 4 * (i * lay.frags_n + 2 * step)  # fragment (i, 2 step)'s c0, then 8 more
    return pack(b, regs[first : first + 8], hint="a")
