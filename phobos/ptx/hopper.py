"""PTX rules for Hopper's asynchronous ops (`lir.HOPPER`), registered into
`phobos.ptx.ops.RULES` and `ATTRS` when that module loads.

Every mbarrier, bulk-copy destination and the like is a lir shared offset (a `u32`
register) rebased onto the CTA's window as ld/st rebase it; a CTA's own shared::cta
address is a valid shared::cluster one, which the bulk copy's destination takes (PTX ISA,
"State spaces: shared"). The mbarrier ops, try_wait and fence.mbarrier_init need sm_90;
the bulk copy, the TMA store and its bulk groups the async proxy (sm_90), `stmatrix` its
own feature (sm_90, PTX ISA 7.8); `setmaxnreg` and the wgmma ops sm_90a. A wgmma names its
accumulator once, as its D and its C. A TMA store reads its source from the CTA's own
window (`.shared::cta`) and completes in a bulk group, not on an mbarrier.

    >>> from phobos.lower.lir import Block, Imm, Kernel, Reg, SharedBuffer, inst
    >>> from phobos.ptx import emit_kernel
    >>> bar = Reg("bar", "u32")
    >>> k = Kernel("k", (), Block((inst("mov", (bar,), (Imm(0, "u32"),), type="u32"),
    ...     inst("mbarrier_init", (), (bar, Imm(1, "u32"))))), threads=32, smem=8,
    ...     shared=(SharedBuffer("bars", 0, 8, 8),))
    >>> [line.strip() for line in emit_kernel(k).splitlines() if "mbarrier" in line]
    ['mbarrier.init.shared::cta.b64 [%r1], 1;']
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from phobos.lower import lir
from phobos.lower.warpgroup import Descriptor
from phobos.ptx.ops import ATTRS, FULL_WARP, _regs, _shared_address, arity, rule

if TYPE_CHECKING:
    from phobos.ptx.emit import Emitter


def _bar(e: Emitter, i: lir.Inst, srcs: int) -> str:
    e.needs(i, "mbarrier")
    if len(i.srcs) != srcs:
        e.fail(i, f"takes {srcs} operands, not {len(i.srcs)}")
    return f"[{_shared_address(e, i, i.srcs[0])}]"


def _count(e: Emitter, i: lir.Inst, value: lir.Value) -> str:
    if value.type not in ("u32", "s32", "b32"):
        e.fail(i, f"takes a 32-bit count, not {value.type}")
    return e.operand(value, imm_ok=True)


def _token(e: Emitter, i: lir.Inst) -> str:
    if not i.dests:
        return "_"  # the sink: the state token is not kept
    if len(i.dests) != 1 or i.dests[0].type != "b64":
        e.fail(i, "writes its state token to one b64 register or none")
    return e.name(i.dests[0])


@rule("mbarrier_init")
def _mbarrier_init(e: Emitter, i: lir.Inst) -> str:
    addr = _bar(e, i, 2)
    return f"mbarrier.init.shared::cta.b64 {addr}, {_count(e, i, i.srcs[1])}"


@rule("mbarrier_arrive")
def _mbarrier_arrive(e: Emitter, i: lir.Inst) -> str:
    addr = _bar(e, i, 1)
    return f"mbarrier.arrive.shared::cta.b64 {_token(e, i)}, {addr}"


@rule("mbarrier_arrive_expect_tx")
def _mbarrier_arrive_expect_tx(e: Emitter, i: lir.Inst) -> str:
    addr = _bar(e, i, 2)
    tx = _count(e, i, i.srcs[1])
    return f"mbarrier.arrive.expect_tx.shared::cta.b64 {_token(e, i)}, {addr}, {tx}"


@rule("mbarrier_try_wait_parity")
def _mbarrier_try_wait_parity(e: Emitter, i: lir.Inst) -> str:
    addr = _bar(e, i, 2)
    if len(i.dests) != 1 or i.dests[0].type != "pred":
        e.fail(i, "writes one pred register")
    parity = _count(e, i, i.srcs[1])
    return f"mbarrier.try_wait.parity.shared::cta.b64 {e.name(i.dests[0])}, {addr}, {parity}"


@rule("fence_mbarrier_init")
def _fence_mbarrier_init(e: Emitter, i: lir.Inst) -> str:
    # The ISA's only form: release at cluster scope, so the async proxy sees the inits.
    e.needs(i, "mbarrier")
    arity(e, i, 0)
    return "fence.mbarrier_init.release.cluster"


@rule("cp_async_bulk")
def _cp_async_bulk(e: Emitter, i: lir.Inst) -> str:
    e.needs(i, "async_proxy")
    if i.dests or len(i.srcs) != 4:
        e.fail(i, "takes a shared destination, a global source, a size and an mbarrier")
    dst, src, size, bar = i.srcs
    if not isinstance(src, lir.Reg) or src.type != "u64":
        e.fail(i, "takes a u64 global source register")
    if isinstance(size, lir.Imm) and (size.value <= 0 or size.value % 16):
        e.fail(i, f"copies {size.value} bytes, not a positive multiple of 16")
    ops = [
        f"[{_shared_address(e, i, dst)}]",
        f"[{e.name(src)}]",
        _count(e, i, size),
        f"[{_shared_address(e, i, bar)}]",
    ]
    head = "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
    return f"{head} {', '.join(ops)}"


@rule("tmap_addr")
def _tmap_addr(e: Emitter, i: lir.Inst) -> str:
    # The map is a `.param` of the entry: TMA takes its generic address.
    e.needs(i, "async_proxy")
    arity(e, i, 0)
    names = [m.name for m in e.kernel.maps]
    if i.attr("map") not in names or len(i.dests) != 1 or i.dests[0].type != "u64":
        e.fail(i, "writes one u64 register and names one of the kernel's tensor maps")
    d = e.name(i.dests[0])
    e.pre(f"mov.b64 {d}, {i.attr('map')}")
    return f"cvta.param.u64 {d}, {d}"


@rule("tma_load")
def _tma_load(e: Emitter, i: lir.Inst) -> str:
    e.needs(i, "async_proxy")
    if i.dests or len(i.srcs) not in (5, 6):
        e.fail(i, "takes a shared destination, a tensor map, two coordinates and an mbarrier"
                  " (and a multicast's CTA mask)")  # fmt: skip
    dst, tmap, x, y, bar = i.srcs[:5]
    coords = ", ".join(e.operand(c, imm_ok=True) for c in (x, y))
    ops = [
        f"[{_shared_address(e, i, dst)}]",
        f"[{e.name(tmap)}, {{{coords}}}]",
        f"[{_shared_address(e, i, bar)}]",
    ]
    head = "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
    if len(i.srcs) == 6:  # multicast: the mask is a .b16 register
        e.needs(i, "cluster")
        mask = i.srcs[5]
        if isinstance(mask, lir.Imm):
            reg = e.temp("b16")
            e.pre(f"mov.b16 {reg}, {int(mask.value) & 0xFFFF}")
            ops.append(reg)
        else:
            ops.append(e.name(mask))
        head += ".multicast::cluster"
    return f"{head} {', '.join(ops)}"


@rule("cluster_arrive")
def _cluster_arrive(e: Emitter, i: lir.Inst) -> str:
    e.needs(i, "cluster")
    arity(e, i, 0)
    # .release by default, which waits for the thread's wgmma groups in flight (measured,
    # benchmarks/NOTES.md run 48); `relaxed` orders only the threads' progress.
    if i.attr("relaxed") not in (None, 0, 1):
        e.fail(i, f"has `relaxed` 0 or 1, not {i.attr('relaxed')!r}")
    return (
        "barrier.cluster.arrive.relaxed.aligned"
        if i.attr("relaxed")
        else "barrier.cluster.arrive.aligned"
    )


@rule("cluster_wait")
def _cluster_wait(e: Emitter, i: lir.Inst) -> str:
    e.needs(i, "cluster")
    arity(e, i, 0)
    return "barrier.cluster.wait.aligned"  # .acquire by default


@rule("stmatrix")
def _stmatrix(e: Emitter, i: lir.Inst) -> str:
    e.needs(i, "stmatrix")
    n = len(i.srcs) - 1
    if n not in (1, 2, 4) or i.dests:
        e.fail(i, f"stores {n} matrices; stmatrix stores 1, 2 or 4 and writes no register")
    trans = i.attr("trans", 0)
    if trans not in (0, 1):
        e.fail(i, f"has `trans` {trans!r}, not 0 or 1")
    regs = _regs(e, i, i.srcs[1:], n, ("b32",), "the matrices")
    addr = _shared_address(e, i, i.srcs[0])
    head = f"stmatrix.sync.aligned.m8n8.x{n}{'.trans' if trans else ''}.shared.b16"
    return f"{head} [{addr}], {regs}"


@rule("tma_store")
def _tma_store(e: Emitter, i: lir.Inst) -> str:
    e.needs(i, "async_proxy")
    if i.dests or len(i.srcs) != 4:
        e.fail(i, "takes a tensor map, two coordinates and a shared source")
    tmap, x, y, src = i.srcs
    if not isinstance(tmap, lir.Reg) or tmap.type != "u64":
        e.fail(i, "takes a u64 tensor map register")
    coords = ", ".join(e.operand(c, imm_ok=True) for c in (x, y))
    head = "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"
    return f"{head} [{e.name(tmap)}, {{{coords}}}], [{_shared_address(e, i, src)}]"


@rule("bulk_commit")
def _bulk_commit(e: Emitter, i: lir.Inst) -> str:
    e.needs(i, "async_proxy")
    arity(e, i, 0)
    return "cp.async.bulk.commit_group"


@rule("bulk_wait")
def _bulk_wait(e: Emitter, i: lir.Inst) -> str:
    e.needs(i, "async_proxy")
    arity(e, i, 0)
    pending, read = i.attr("pending"), i.attr("read", 0)
    if not isinstance(pending, int) or pending < 0:
        e.fail(i, f"leaves {pending!r} groups pending, not a count from 0")
    if read not in (0, 1):
        e.fail(i, f"has `read` {read!r}, not 0 or 1")
    # `.read`: only until the groups have read their shared sources
    return f"cp.async.bulk.wait_group{'.read' if read else ''} {pending}"


@rule("elect_sync")
def _elect_sync(e: Emitter, i: lir.Inst) -> str:
    e.needs(i, "elect")
    types = tuple(d.type for d in i.dests)
    if i.srcs or types not in (("pred",), ("pred", "u32")):
        e.fail(i, "writes a pred and optionally the lane, and reads nothing")
    lane = e.name(i.dests[1]) if len(i.dests) == 2 else "_"
    return f"elect.sync {lane}|{e.name(i.dests[0])}, {FULL_WARP}"


@rule("setmaxnreg")
def _setmaxnreg(e: Emitter, i: lir.Inst) -> str:
    e.needs(i, "setmaxnreg")
    arity(e, i, 0)
    action, regs = i.attr("action"), i.attr("regs")
    if action not in ("inc", "dec"):
        e.fail(i, f"has action {action!r}, not inc or dec")
    if not isinstance(regs, int) or not 24 <= regs <= 256 or regs % 8:
        e.fail(i, f"sets {regs!r} registers, not a multiple of 8 from 24 to 256")
    return f"setmaxnreg.{action}.sync.aligned.u32 {regs}"


# -- warpgroup matrix multiply-accumulate (sm_90a) ---------------------------


@rule("wgmma_mma")
def _wgmma_mma(e: Emitter, i: lir.Inst) -> str:
    e.needs(i, "wgmma")
    shape, ab, acc = i.attr("shape"), i.attr("from_type"), i.attr("type")
    n = len(i.dests)
    regs_a = len(i.srcs) == 6 + n
    if len(i.srcs) != (6 if regs_a else 3) + n or tuple(i.srcs[-n:]) != tuple(i.dests):
        e.fail(i, "reads A, B's descriptor, the scale and its own accumulator registers")
    d = _regs(e, i, i.dests, n, ("f32",) if acc == "f32" else ("b32",), "D")
    a = _regs(e, i, i.srcs[:4], 4, ("b32",), "A") if regs_a else e.name(i.srcs[0])
    bdesc, scale = i.srcs[4 if regs_a else 1], i.srcs[5 if regs_a else 2]
    if not isinstance(scale, lir.Reg) or scale.type != "pred":
        e.fail(i, "takes its scale in a pred register")
    trans = {"K": "0", "MN": "1"}
    tail = [] if regs_a else [trans[i.attr("major_a", "K")]]
    tail.append(trans[i.attr("major_b", "K")])
    ops = ", ".join([d, a, e.name(bdesc), e.name(scale), "1", "1", *tail])
    return f"wgmma.mma_async.sync.aligned.{shape}.{acc}.{ab}.{ab} {ops}"


@rule("wgmma_fence")
def _wgmma_fence(e: Emitter, i: lir.Inst) -> str:
    e.needs(i, "wgmma")
    arity(e, i, 0)
    return "wgmma.fence.sync.aligned"


@rule("wgmma_commit")
def _wgmma_commit(e: Emitter, i: lir.Inst) -> str:
    e.needs(i, "wgmma")
    arity(e, i, 0)
    return "wgmma.commit_group.sync.aligned"


@rule("wgmma_wait")
def _wgmma_wait(e: Emitter, i: lir.Inst) -> str:
    e.needs(i, "wgmma")
    arity(e, i, 0)
    pending = i.attr("pending")
    if not isinstance(pending, int) or not 0 <= pending <= 7:
        e.fail(i, f"leaves {pending!r} groups in flight, not 0 to 7")
    return f"wgmma.wait_group.sync.aligned {pending}"


@rule("wgmma_desc")
def _wgmma_desc(e: Emitter, i: lir.Inst) -> str:
    e.needs(i, "wgmma")
    arity(e, i, 1)
    if len(i.dests) != 1 or i.dests[0].type != "u64":
        e.fail(i, "writes one u64 register")
    try:
        high = Descriptor(0, i.attr("lbo"), i.attr("sbo"), i.attr("swizzle")).encode()
    except (ValueError, TypeError) as exc:
        e.fail(i, str(exc))
    addr = _shared_address(e, i, i.srcs[0])  # the CTA's own shared address
    wide = e.temp("u64")
    e.pre(f"cvt.u64.u32 {wide}, {addr}")
    e.pre(f"shr.u64 {wide}, {wide}, 4")
    e.pre(f"and.b64 {wide}, {wide}, 16383")
    return f"or.b64 {e.name(i.dests[0])}, {wide}, {high}"


ATTRS.update(
    {
        "wgmma_mma": ("shape", "type", "from_type", "major_a", "major_b"),
        "wgmma_fence": (),
        "wgmma_commit": (),
        "wgmma_wait": ("pending",),
        "wgmma_desc": ("lbo", "sbo", "swizzle"),
        "mbarrier_init": (),
        "mbarrier_arrive": (),
        "mbarrier_arrive_expect_tx": (),
        "mbarrier_try_wait_parity": (),
        "fence_mbarrier_init": (),
        "cp_async_bulk": (),
        "tmap_addr": ("map",),
        "tma_load": (),
        "cluster_arrive": ("relaxed",),
        "cluster_wait": (),
        "elect_sync": (),
        "setmaxnreg": ("action", "regs"),
        "stmatrix": ("trans",),
        "tma_store": (),
        "bulk_commit": (),
        "bulk_wait": ("pending", "read"),
    }
)
