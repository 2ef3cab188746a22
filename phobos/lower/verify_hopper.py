"""The verifier's rules for Hopper's asynchronous ops (`lir.HOPPER`), invariant 9 of
`phobos.lower.verify`.

An mbarrier is named by a `u32` shared address register, first among the sources.
`mbarrier_init` takes it and an arrival count (1 to 2^20 - 1); `mbarrier_arrive` takes it
alone and `mbarrier_arrive_expect_tx` it and a transaction byte count (0 to 2^20 - 1),
each writing nothing (the `_` sink) or the state token, one `b64` register;
`mbarrier_try_wait_parity` takes it and a phase parity (an immediate 0 or 1, or a 32-bit
integer register) and writes one `pred`. `fence_mbarrier_init` takes nothing.
`cp_async_bulk` takes a `u32` shared destination, a `u64` global source, a 32-bit size
(an immediate one positive and a multiple of 16) and the mbarrier. `elect_sync` writes a
`pred` and optionally the elected lane (`u32`), reads nothing and carries no guard.
`tmap_addr` writes one u64 and names one of the kernel's `maps`; `tma_load` takes a u32
shared destination, that u64, two 32-bit coordinates and the mbarrier, then, multicast, a
16-bit CTA mask (an immediate or a u16/b16 register) in a kernel of clusters, an
immediate naming only ranks below the cluster's size. `cluster_arrive` (`relaxed` 0 or
1) and `cluster_wait` take nothing and carry no guard, in a kernel of clusters only.
`setmaxnreg` has `action` inc or dec and `regs` a multiple of 8 from 24 to 256, no
operand and no guard. Integer sources are 32-bit (`u32`, `s32`, `b32`).
`wgmma_mma` has shape `m64nNk16` (N a multiple of 8 to 256), f16 or bf16 into f32,
writes N / 2 f32 registers (f16 into f16: N / 4 b32 registers, two elements each) and reads A (a u64 descriptor, or four b32 registers), B's
u64 descriptor, a pred scale and those same registers in order; `major_a` (for a
descriptor A) and `major_b` are K or MN. `wgmma_fence`, `wgmma_commit` and `wgmma_wait`
(`pending` 0 to 7) take no operand; none of the four takes a guard (a warpgroup runs
them together). `wgmma_desc` reads a u32 shared offset and writes a u64, its `lbo` and
`sbo` multiples of 16 below 2^18 and its `swizzle` none, 32B, 64B or 128B.

The stores (`lir.HOPPER_STORES`): `stmatrix` writes nothing and reads one u32 shared
address register and 1, 2 or 4 b32 registers, `trans` 0 or 1, with no guard (a warp runs
it together, as ldmatrix). `tma_store` writes nothing and reads a u64 tensor map (from
`tmap_addr`), two 32-bit coordinates and a u32 shared source register. `bulk_commit`
takes nothing; `bulk_wait` takes nothing but a `pending` count from 0 and a `read` of 0
or 1.

    >>> from phobos.lower.lir import Block, Imm, Kernel, Reg, inst
    >>> from phobos.lower.verify import LirError, verify
    >>> bar = Reg("bar", "u64")
    >>> k = Kernel("k", (), Block((inst("mov", (bar,), (Imm(0, "u64"),), type="u64"),
    ...     inst("mbarrier_init", (), (bar, Imm(1, "u32"))))))
    >>> try:
    ...     verify(k)
    ... except LirError as exc:
    ...     print(exc)
    `k`: an mbarrier is named by a u32 shared address register, not `%bar` (u64) in `mbarrier_init %bar, 1:u32`
"""

from __future__ import annotations

from phobos.lower import lir
from phobos.lower.warpgroup import SHAPES_N, Descriptor

INT32 = ("u32", "s32", "b32")
MAX_COUNT = (1 << 20) - 1  # the ISA's range for arrival and transaction counts


def check(v, i: lir.Inst, type_: str | None) -> None:
    """Check one Hopper op for the `_Verifier` `v` (its `fail` raises `LirError`)."""
    RULES[i.op](v, i)


def _mbarrier(v, i: lir.Inst, srcs: int) -> None:
    if len(i.srcs) != srcs:
        v.fail(f"`{i.op}` takes {srcs} operand{'s' if srcs > 1 else ''}, not {len(i.srcs)}", i)
    bar = i.srcs[0]
    if not isinstance(bar, lir.Reg) or bar.type != "u32":
        v.fail(f"an mbarrier is named by a u32 shared address register, not `{bar}` "
               f"({bar.type})", i)  # fmt: skip


def _int(v, i: lir.Inst, value: lir.Value, what: str, lo: int, hi: int, step: int = 1) -> None:
    if value.type not in INT32:
        v.fail(f"{what} is a 32-bit integer, not {value.type}", i)
    if isinstance(value, lir.Imm) and not (lo <= value.value <= hi and value.value % step == 0):
        every = f" in steps of {step}" if step > 1 else ""
        v.fail(f"{what} of {value.value} is not {lo} to {hi}{every}", i)


def _token(v, i: lir.Inst) -> None:
    if len(i.dests) > 1 or any(d.type != "b64" for d in i.dests):
        v.fail(f"`{i.op}` writes its state token to one b64 register, or none (the sink)", i)


def _no_dests(v, i: lir.Inst) -> None:
    if i.dests:
        v.fail(f"`{i.op}` writes no register", i)


def _init(v, i: lir.Inst) -> None:
    _mbarrier(v, i, 2)
    _no_dests(v, i)
    _int(v, i, i.srcs[1], "an arrival count", 1, MAX_COUNT)


def _arrive(v, i: lir.Inst) -> None:
    _mbarrier(v, i, 1)
    _token(v, i)


def _expect_tx(v, i: lir.Inst) -> None:
    _mbarrier(v, i, 2)
    _token(v, i)
    _int(v, i, i.srcs[1], "a transaction byte count", 0, MAX_COUNT)


def _try_wait(v, i: lir.Inst) -> None:
    _mbarrier(v, i, 2)
    if len(i.dests) != 1 or i.dests[0].type != "pred":
        v.fail("`mbarrier_try_wait_parity` writes one pred register", i)
    _int(v, i, i.srcs[1], "a phase parity", 0, 1)


def _fence_init(v, i: lir.Inst) -> None:
    if i.dests or i.srcs:
        v.fail("`fence_mbarrier_init` takes no operand and writes no register", i)


def _bulk(v, i: lir.Inst) -> None:
    _no_dests(v, i)
    if len(i.srcs) != 4:
        v.fail("`cp_async_bulk` takes a shared destination, a global source, a size and an "
               f"mbarrier, not {len(i.srcs)} operands", i)  # fmt: skip
    dst, src, size, bar = i.srcs
    if not isinstance(dst, lir.Reg) or dst.type != "u32":
        v.fail(f"a bulk copy's destination is a u32 shared address register, not `{dst}`", i)
    if not isinstance(src, lir.Reg) or src.type != "u64":
        v.fail(f"a bulk copy's source is a u64 global address register, not `{src}`", i)
    _int(v, i, size, "a bulk copy's size", 16, MAX_COUNT, 16)
    if not isinstance(bar, lir.Reg) or bar.type != "u32":
        v.fail(f"an mbarrier is named by a u32 shared address register, not `{bar}` "
               f"({bar.type})", i)  # fmt: skip


def _tmap_addr(v, i: lir.Inst) -> None:
    if i.srcs or len(i.dests) != 1 or i.dests[0].type != "u64":
        v.fail("`tmap_addr` reads nothing and writes one u64 register", i)
    names = [m.name for m in v.kernel.maps]
    if i.attr("map") not in names:
        v.fail(f"`tmap_addr` names a tensor map of the kernel ({', '.join(names) or 'none'}), "
               f"not {i.attr('map')!r}", i)  # fmt: skip


def _tma_load(v, i: lir.Inst) -> None:
    _no_dests(v, i)
    if len(i.srcs) not in (5, 6):
        v.fail("`tma_load` takes a shared destination, a tensor map, two coordinates and an "
               f"mbarrier (and a multicast's CTA mask), not {len(i.srcs)} operands", i)  # fmt: skip
    dst, tmap, x, y, bar = i.srcs[:5]
    _box(v, i, "load", "destination", dst, tmap, x, y)
    if not isinstance(bar, lir.Reg) or bar.type != "u32":
        v.fail(f"an mbarrier is named by a u32 shared address register, not `{bar}` "
               f"({bar.type})", i)  # fmt: skip
    if len(i.srcs) == 6:
        _clustered(v, i)
        mask = i.srcs[5]
        if mask.type not in ("u16", "b16"):
            v.fail(f"a multicast's CTA mask is 16-bit (u16 or b16), not `{mask}` ({mask.type})", i)
        if isinstance(mask, lir.Imm) and not 0 < mask.value < 1 << v.kernel.cluster:
            v.fail(f"a multicast's CTA mask of {mask.value:#x} names no rank or a rank past the "
                   f"cluster's {v.kernel.cluster} CTAs", i)  # fmt: skip


def _clustered(v, i: lir.Inst) -> None:
    if v.kernel.cluster < 2:
        v.fail(f"`{i.op}` needs a kernel of clusters (`cluster` of 2 or more CTAs)", i)


def _cluster_barrier(v, i: lir.Inst) -> None:
    _no_operands(v, i)
    _clustered(v, i)
    relaxed = i.attr("relaxed", 0)
    if relaxed not in (0, 1) or isinstance(relaxed, bool) or (relaxed and i.op != "cluster_arrive"):
        v.fail(f"`{i.op}` has no `relaxed` but 0 (`cluster_arrive`: 0 or 1), not {relaxed!r}", i)


def _stmatrix(v, i: lir.Inst) -> None:
    _collective(v, i)
    _no_dests(v, i)
    trans = i.attr("trans", 0)
    if trans not in (0, 1) or isinstance(trans, bool):
        v.fail(f"`stmatrix` has `trans` 0 or 1, not {trans!r}", i)
    if not i.srcs or not isinstance(i.srcs[0], lir.Reg) or i.srcs[0].type != "u32":
        v.fail("`stmatrix` takes a u32 shared address register first", i)
    regs = i.srcs[1:]
    if len(regs) not in (1, 2, 4) or any(not isinstance(r, lir.Reg) or r.type != "b32"
                                         for r in regs):  # fmt: skip
        v.fail(f"`stmatrix` stores 1, 2 or 4 b32 registers, one a matrix, not {len(regs)} "
               f"({', '.join(str(r) for r in regs) or 'none'})", i)  # fmt: skip


def _tma_store(v, i: lir.Inst) -> None:
    _no_dests(v, i)
    if len(i.srcs) != 4:
        v.fail("`tma_store` takes a tensor map, two coordinates and a shared source, not "
               f"{len(i.srcs)} operands", i)  # fmt: skip
    tmap, x, y, src = i.srcs
    _box(v, i, "store", "source", src, tmap, x, y)


def _box(v, i: lir.Inst, what: str, side: str, shared, tmap, x, y) -> None:
    """A TMA load's or store's box operands: its shared side, its map, its coordinates."""
    if not isinstance(shared, lir.Reg) or shared.type != "u32":
        v.fail(f"a TMA {what}'s {side} is a u32 shared address register, not `{shared}`", i)
    if not isinstance(tmap, lir.Reg) or tmap.type != "u64":
        v.fail(f"a TMA {what}'s tensor map is a u64 register (`tmap_addr`), not `{tmap}`", i)
    for c in (x, y):
        if c.type not in INT32:
            v.fail(f"a TMA coordinate is a 32-bit integer, not `{c}` ({c.type})", i)


def _bulk_commit(v, i: lir.Inst) -> None:
    if i.dests or i.srcs:
        v.fail("`bulk_commit` takes no operand and writes no register", i)


def _bulk_wait(v, i: lir.Inst) -> None:
    if i.dests or i.srcs:
        v.fail("`bulk_wait` takes no operand and writes no register", i)
    pending, read = i.attr("pending"), i.attr("read", 0)
    if not isinstance(pending, int) or isinstance(pending, bool) or pending < 0:
        v.fail(f"`bulk_wait` needs a `pending` count of groups from 0, not {pending!r}", i)
    if read not in (0, 1) or isinstance(read, bool):
        v.fail(f"`bulk_wait` has `read` 0 or 1, not {read!r}", i)


def _collective(v, i: lir.Inst) -> None:
    if i.guard is not None:
        v.fail(f"`{i.op}` runs on the whole warp and takes no guard", i)


def _elect(v, i: lir.Inst) -> None:
    _collective(v, i)
    types = tuple(d.type for d in i.dests)
    if i.srcs or types not in (("pred",), ("pred", "u32")):
        v.fail("`elect_sync` reads nothing and writes a pred, then optionally the lane (u32)", i)


def _setmaxnreg(v, i: lir.Inst) -> None:
    _collective(v, i)
    _no_dests(v, i)
    if i.srcs:
        v.fail("`setmaxnreg` takes no operand: the count is its `regs`", i)
    if i.attr("action") not in ("inc", "dec"):
        v.fail(f"`setmaxnreg` has `action` inc or dec, not {i.attr('action')!r}", i)
    regs = i.attr("regs")
    if not isinstance(regs, int) or isinstance(regs, bool) or not 24 <= regs <= 256 or regs % 8:
        v.fail(f"`setmaxnreg` sets a multiple of 8 registers from 24 to 256, not {regs!r}", i)


def _wgmma_shape(v, i: lir.Inst) -> int:
    """N of the `m64nNk16` an mma names (a failure for any other shape or type)."""
    shape = i.attr("shape")
    n = int(shape[4:-3]) if isinstance(shape, str) and shape.startswith("m64n") and \
        shape.endswith("k16") and shape[4:-3].isdigit() else 0  # fmt: skip
    if n not in SHAPES_N:
        v.fail(f"`wgmma_mma` has shape m64nNk16 with N a multiple of 8 up to 256, not {shape!r}", i)
    pair = (i.attr("from_type"), i.attr("type"))
    if pair not in (("f16", "f32"), ("bf16", "f32"), ("f16", "f16")):
        v.fail(f"`wgmma_mma` sums f16 or bf16 products in f32, or f16 ones in f16, not "
               f"{pair[0]!r} into {pair[1]!r}", i)  # fmt: skip
    return n


def _wgmma_mma(v, i: lir.Inst) -> None:
    _collective(v, i)
    n = _wgmma_shape(v, i)
    # f32: a register an element; f16: two elements a b32 register, the even column low
    acc, word = (n // 2, "f32") if i.attr("type") == "f32" else (n // 4, "b32")
    if len(i.dests) != acc or any(d.type != word for d in i.dests):
        v.fail(f"`wgmma_mma` {i.attr('shape')} into {i.attr('type')} writes {acc} {word} "
               "registers a thread", i)  # fmt: skip
    regs_a = len(i.srcs) == 6 + acc
    if len(i.srcs) != (6 if regs_a else 3) + acc:
        v.fail(f"`wgmma_mma` takes A (a descriptor or 4 b32 registers), B's descriptor, the "
               f"scale pred and the {acc} accumulator registers, not {len(i.srcs)} operands", i)  # fmt: skip
    a = i.srcs[:4] if regs_a else i.srcs[:1]
    if regs_a and any(not isinstance(r, lir.Reg) or r.type != "b32" for r in a):
        v.fail("a register A operand is four b32 registers", i)
    rest = i.srcs[len(a) :]
    for desc in ([] if regs_a else list(a)) + [rest[0]]:
        if not isinstance(desc, lir.Reg) or desc.type != "u64":
            v.fail(f"a wgmma operand's descriptor is a u64 register, not `{desc}`", i)
    if not isinstance(rest[1], lir.Reg) or rest[1].type != "pred":
        v.fail(f"`wgmma_mma`'s scale is a pred register, not `{rest[1]}`", i)
    if tuple(rest[2:]) != tuple(i.dests):
        v.fail("`wgmma_mma` reads and writes one accumulator: the registers after the scale "
               "are its destinations, in order", i)  # fmt: skip
    majors = (("major_a", i.attr("major_a", "K")),) if not regs_a else ()
    for name, major in (*majors, ("major_b", i.attr("major_b", "K"))):
        if major not in ("K", "MN"):
            v.fail(f"`wgmma_mma`'s {name} is K or MN, not {major!r}", i)
    if regs_a and i.attr("major_a") is not None:
        v.fail("a register A operand has no `major_a`: its layout is the registers'", i)


def _no_operands(v, i: lir.Inst) -> None:
    _collective(v, i)
    if i.dests or i.srcs:
        v.fail(f"`{i.op}` takes no operand and writes no register", i)


def _wgmma_wait(v, i: lir.Inst) -> None:
    _no_operands(v, i)
    pending = i.attr("pending")
    if not isinstance(pending, int) or isinstance(pending, bool) or not 0 <= pending <= 7:
        v.fail(f"`wgmma_wait` leaves 0 to 7 groups in flight, not {pending!r}", i)


def _wgmma_desc(v, i: lir.Inst) -> None:
    if len(i.dests) != 1 or i.dests[0].type != "u64":
        v.fail("`wgmma_desc` writes one u64 register", i)
    if len(i.srcs) != 1 or not isinstance(i.srcs[0], lir.Reg) or i.srcs[0].type != "u32":
        v.fail("`wgmma_desc` reads one u32 shared offset register", i)
    try:
        Descriptor(0, i.attr("lbo", 0), i.attr("sbo", 0), i.attr("swizzle", "")).encode()
    except (ValueError, TypeError) as exc:
        v.fail(f"`wgmma_desc`: {exc}", i)


RULES = {
    "wgmma_mma": _wgmma_mma,
    "wgmma_fence": _no_operands,
    "wgmma_commit": _no_operands,
    "wgmma_wait": _wgmma_wait,
    "wgmma_desc": _wgmma_desc,
    "mbarrier_init": _init,
    "mbarrier_arrive": _arrive,
    "mbarrier_arrive_expect_tx": _expect_tx,
    "mbarrier_try_wait_parity": _try_wait,
    "fence_mbarrier_init": _fence_init,
    "cp_async_bulk": _bulk,
    "tmap_addr": _tmap_addr,
    "tma_load": _tma_load,
    "cluster_arrive": _cluster_barrier,
    "cluster_wait": _cluster_barrier,
    "elect_sync": _elect,
    "setmaxnreg": _setmaxnreg,
    "stmatrix": _stmatrix,
    "tma_store": _tma_store,
    "bulk_commit": _bulk_commit,
    "bulk_wait": _bulk_wait,
}
_ALL = lir.HOPPER | lir.HOPPER_STORES
assert set(RULES) == _ALL, sorted(set(RULES) ^ _ALL)
