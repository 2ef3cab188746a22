"""A wgmma group's wait put off past the work that does not need it.

A product on wgmma is issued, committed as a group and then waited for (`wgmma_wait
0`): the statement that follows may read the accumulator. Where what follows reads
neither the group's registers nor anything the group may still be reading, the tensor
cores can go on with the product while the warpgroup does that work, so this pass moves
each such wait down, in its block, to just before the first instruction that needs it:

    wgmma_fence; wgmma_mma s' ..; wgmma_commit; wgmma_wait 0     (the scores of tile t+1)
    ex2 .. of s; cvt .. p; ..                                     (the softmax of tile t)
    wgmma_fence; ..                                               (the next product)

becomes the same with `wgmma_wait 0` just before the second `wgmma_fence`: the scores of
the next tile run under the softmax of this one (FlashAttention-3's overlap within a
warpgroup), where the kernel computes them first.

An instruction the wait may move past is an Inst of arithmetic, bits, comparison,
conversion, approximate math, special registers, warp shuffles or votes, a load, or a
store to global memory, that neither writes a register the group reads or writes (its
accumulators, a register A, its descriptors) nor reads one it writes. Anything else
stops it: another wgmma instruction, any barrier, fence, mbarrier or asynchronous copy
(the group may still be reading its shared operands, which those can free or rewrite),
a store to shared memory, control flow (an `if`, a loop, a `break`), and the block's
end. A kernel with a wait that leaves groups in flight (`pending` > 0: a TMA ring's
carried product) is left as it is: its wait 0 may retire more than the last group.
`PHOBOS_OVERLAP=0` turns the pass off, to measure what it gains.

    >>> sorted(MOVABLE - lir.ARITH - lir.BITS - lir.MATH)
    ['bitcast', 'cvt', 'cvt_x2', 'ld', 'mov', 'selp', 'setp', 'shfl', 'sreg', 'vote', 'wgmma_desc']
"""

from __future__ import annotations

import dataclasses
import os

from phobos.lower import lir

MOVABLE = (lir.ARITH | lir.BITS | lir.COMPARE | lir.CONVERT | lir.MATH | lir.SPECIAL
           | lir.WARP | {"ld", "wgmma_desc"})  # fmt: skip


_WGMMA = {"wgmma_fence", "wgmma_mma", "wgmma_commit", "wgmma_wait"}


def enabled() -> bool:
    return os.environ.get("PHOBOS_OVERLAP") != "0"


def defer_waits(kernel: lir.Kernel) -> lir.Kernel:
    """`kernel` with each wgmma group's `wgmma_wait 0` moved down past the instructions
    that do not need the group (the module docstring says which); `kernel` itself
    where no wait moves."""
    if not enabled() or any(
        i.op == "wgmma_wait" and i.attr("pending") for i in lir.insts(kernel.body)
    ):
        # A group carried in flight past a wait (a ring's `wait 1`) may be what a later
        # wait 0 retires: its registers are not the last group's, so leave them all.
        return kernel
    body = _block(kernel.body)
    return kernel if body == kernel.body else dataclasses.replace(kernel, body=body)


def _block(block: lir.Block) -> lir.Block:
    items = [_nested(item) for item in block.items]
    out: list = []
    i = 0
    while i < len(items):
        item = items[i]
        group = _group_before(out) if _is_wait0(item) else None
        if group is not None:
            touched, written = group
            j = i + 1
            while j < len(items) and _passes(items[j], touched, written):
                j += 1
            out.extend(items[i + 1 : j])
            out.append(item)
            i = j
            continue
        out.append(item)
        i += 1
    return dataclasses.replace(block, items=tuple(out))


def _nested(item):
    """`item` with the blocks inside it (an `if`'s arms, a loop's body) done first."""
    changes = {}
    for name in ("then", "orelse", "body"):
        inner = getattr(item, name, None)
        if isinstance(inner, lir.Block):
            changes[name] = _block(inner)
    return dataclasses.replace(item, **changes) if changes else item


def _is_op(item, op: str) -> bool:
    return isinstance(item, lir.Inst) and item.op == op


def _is_wait0(item) -> bool:
    return _is_op(item, "wgmma_wait") and item.attr("pending") == 0


def _group_before(before: list) -> tuple[set[str], set[str]] | None:
    """The registers of the group a wait after `before` waits for: every one its wgmma
    (those since the fence before the block's last commit) read or write, and those they
    write; None where the block's last wgmma instruction is not a commit. Items may
    stand between the commit and the wait (the other warpgroup's turn, arrived at)."""
    at = len(before) - 1
    while at >= 0 and not (isinstance(before[at], lir.Inst) and before[at].op in _WGMMA):
        at -= 1
    if at < 0 or before[at].op != "wgmma_commit":
        return None
    touched: set[str] = set()
    written: set[str] = set()
    for item in reversed(before[:at]):
        if _is_op(item, "wgmma_fence"):
            break
        if _is_op(item, "wgmma_mma"):
            for r in item.dests:
                touched.add(r.name)
                written.add(r.name)
            touched.update(s.name for s in item.srcs if isinstance(s, lir.Reg))
        elif isinstance(item, lir.Inst) and item.op in _WGMMA:
            return None  # a group left open across an earlier wait: not this pass's
    return touched, written


def _passes(item, touched: set[str], written: set[str]) -> bool:
    """Whether the wait may move past `item`."""
    movable = isinstance(item, lir.Inst) and (
        item.op in MOVABLE or (item.op == "st" and item.attr("space") == "global")
    )
    return movable and _independent(item, touched, written)


def _independent(item: lir.Inst, touched: set[str], written: set[str]) -> bool:
    """Whether `item` leaves alone a wgmma group in flight whose registers are `touched`
    (read or written by it) and `written`: it writes none of the first and reads none of
    the second. (The verifier's invariant 10 checks the same with its own code, so a
    mistake here is not also one there.)"""
    if any(d.name in touched for d in item.dests):
        return False
    reads = [s for s in item.srcs if isinstance(s, lir.Reg)]
    if item.guard is not None:
        reads.append(item.guard)
    return not any(r.name in written for r in reads)
