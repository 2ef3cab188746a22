"""Once-per-block operations: atomics, `grid_barrier`, `load_acquire`/`store_release`.

SPEC.md ("Indexing and synchronization") runs each of these once per CTA, between two
CTA barriers, every thread getting the result. The lowering has thread 0 do the
memory operation and hand its result to the others through a 4-byte broadcast slot
in shared memory (`bcast`, one per kernel, reused by every such call):

| Phobos                    | thread 0, between `bar.sync 0` and `bar.sync 0`          | then      |
|---------------------------|-----------------------------------------------------------|-----------|
| `atomic_add(t, i, v)`     | `atom.acq_rel.gpu.global.add.{s32,f32}` -> `st.shared [bcast]` | all `ld.shared [bcast]` |
| `atomic_cas(t, i, e, v)`  | `atom.acq_rel.gpu.global.cas.b32` -> `st.shared [bcast]`   | all `ld.shared [bcast]` |
| `load_acquire(t, i)`      | `ld.acquire.sys.global.s32` -> `st.shared [bcast]`        | all `ld.shared [bcast]` |
| `store_release(t, i, v)`  | `st.release.sys.global.s32` (after the first barrier only)| -         |
| `grid_barrier(bar)`       | the generation barrier below                              | -         |

The slot follows the kernel's other shared buffers, in `$smem` or, for a `@dynshared`
kernel, in its dynamic window (whose launch size, `smem`, includes it).

The first barrier keeps thread 0 from overwriting the slot before every thread has
read the previous result, and (for `store_release` and the atomics) makes every
thread's earlier writes visible to thread 0, whose release is cumulative over them.

The atomics are acquire-release at device scope (Phobos's reading: SPEC.md says
"atomically" and leaves the ordering unsaid). A block's writes before the call are
then visible to any block whose call reads the value it left, once that block's
second barrier has passed: the last block of a group to count itself in may read what
the others wrote (examples/decode.py's `decode_mma` merges its splits so). A relaxed
atomic would order nothing but the word itself, and the pattern would read stale
partials.

`grid_barrier(bar)` is a counting barrier on two words: `bar[0]` counts the blocks
arrived, `bar[1]` is the generation. Thread 0 of each block, after `bar.sync 0`:

    gen = ld.acquire.gpu bar[1]          # read before arriving: it cannot move yet
    old = atom.acq_rel.gpu.add bar[0], 1
    if old == nblocks - 1:               # the last to arrive
        st.relaxed.gpu bar[0], 0         # re-arm the count for the next use
        st.release.gpu bar[1], gen + 1   # open the barrier
    else:
        loop { g = ld.acquire.gpu bar[1]; break if g != gen }

then `bar.sync 0` lets the block's other threads on. The count is reset before the
generation moves (release), and a block arrives at the next barrier only after it has
seen the new generation (acquire), so the reset is ordered before every later
arrival: the barrier can be reused any number of times with `bar` zeroed once before
launch. Each block's writes reach every other block through the chain bar.sync ->
release add -> the last arriver's acquire -> its release of `bar[1]` -> the spinner's
acquire -> bar.sync. Every block must be resident at once (`@persistent`): a
spinning block never yields its SM.

    >>> sorted(ONCE)
    ['atomic_add', 'atomic_cas', 'grid_barrier', 'load_acquire', 'store_release']
"""

from __future__ import annotations

from phobos.lower import lir, memory, scalars
from phobos.lower.errors import NotLowered
from phobos.lower.lir import Imm, Reg, Value
from phobos.lower.types import REG, elem_of
from phobos.sema import hir

E_PERSISTENT = "E0531"
BCAST = "bcast"


def lower(lw, e: hir.Builtin) -> Value:
    """One once-per-block built-in call; its value (0 for the ones with none)."""
    return ONCE[e.name](lw, e)


def _slot(lw) -> lir.SharedBuffer:
    """The kernel's broadcast slot, placed after its other shared memory the first time.

    The layout is the same with `@dynshared`: the kernel's shared memory is then its
    dynamic window, whose size (`smem`, the contract's `dynamic_smem`) covers the slot.
    """
    buf = lw.memo.get(BCAST)
    if buf is None:
        offset = -(-lw.smem // 16) * 16
        buf = lir.SharedBuffer(BCAST, offset, 4)
        lw.shared = [*lw.shared, buf]
        lw.smem = offset + 16
        lw.memo[BCAST] = buf
    return buf


def _thread0(lw) -> Reg:
    b = lw.b
    return b.once(("thread0",), lambda: b.op("setp", "pred", lw.sreg("tid.x"), Imm(0, "u32"),
                                             cmp="eq", type="u32", hint="t0"))  # fmt: skip


def _address(lw, e: hir.Builtin) -> Reg:
    """The address of `t[i]`, `i` the flat element index."""
    t = e.args[0]
    acc = memory.whole_tensor(lw, t.sym)
    return memory.address(lw, acc, lw.index_value(e.args[1]))


def _operand(lw, e: hir.Expr, t: str) -> Value:
    return scalars.materialize(lw.b, lw.value(e), t)


def _once(lw, e: hir.Builtin, make, result: str | None) -> Value:
    """bar.sync; thread 0 runs `make()` (its result to the slot); bar.sync; all read it."""
    b = lw.b
    slot = _slot(lw) if result else None
    lw.tracker.barrier()
    with b.region() as body:
        value = make()
        if slot is not None:
            addr = b.copy(Imm(slot.offset, "u32"), "u32", hint="s")
            b.emit("st", (), (addr, value), space="shared", type=result)
    b.add(lir.If(_thread0(lw), body.block, span=e.span))
    lw.tracker.barrier()
    if slot is None:
        return Imm(0, REG[elem_of(e.type)])
    addr = b.copy(Imm(slot.offset, "u32"), "u32", hint="s")
    old = b.reg(result, "old")
    b.emit("ld", (old,), (addr,), space="shared", type=result)
    want = REG[elem_of(e.type)]
    return old if want == result else b.op("mov", "b32", old, dest_type=want)


def atomic_add(lw, e: hir.Builtin) -> Value:
    et = elem_of(e.args[0].type)
    t = REG[et]  # s32 or f32
    v = _operand(lw, e.args[2], et)
    addr = _address(lw, e)

    def make():
        old = lw.b.reg(t, "old")
        lw.b.emit("atom", (old,), (addr, v), space="global", atom="add", type=t,
                  sem="acq_rel", scope="gpu")  # fmt: skip
        return old

    return _once(lw, e, make, t)


def atomic_cas(lw, e: hir.Builtin) -> Value:
    want, new = _operand(lw, e.args[2], "i32"), _operand(lw, e.args[3], "i32")
    addr = _address(lw, e)

    def make():
        old = lw.b.reg("s32", "old")
        lw.b.emit("atom", (old,), (addr, want, new), space="global", atom="cas", type="s32",
                  sem="acq_rel", scope="gpu")  # fmt: skip
        return old

    return _once(lw, e, make, "s32")


def load_acquire(lw, e: hir.Builtin) -> Value:
    addr = _address(lw, e)

    def make():
        v = lw.b.reg("s32", "flag")
        lw.b.emit("ld", (v,), (addr,), space="global", type="s32", sem="acquire", scope="sys")
        return v

    return _once(lw, e, make, "s32")


def store_release(lw, e: hir.Builtin) -> Value:
    v = _operand(lw, e.args[2], "i32")
    addr = _address(lw, e)

    def make():
        lw.b.emit("st", (), (addr, v), space="global", type="s32", sem="release", scope="sys")

    return _once(lw, e, make, None)


def grid_barrier(lw, e: hir.Builtin) -> Value:
    if not getattr(lw.k.attrs, "persistent", False):
        raise NotLowered(
            "`grid_barrier`",
            e.span,
            code=E_PERSISTENT,
            message="`grid_barrier` needs a co-resident grid: the kernel is not `@persistent`",
            note="a block spinning at the barrier never gives its SM up, so every block must "
            "be resident at once; mark the kernel `@persistent`",
        )
    b = lw.b

    count = lw.env[e.args[0].sym]
    gen_addr = b.op("add", "u64", count, Imm(4, "u64"), hint="a")
    blocks = lw.sreg("nctaid.x")
    for axis in ("y", "z"):
        blocks = b.op("mul", "u32", blocks, lw.sreg(f"nctaid.{axis}"))
    last = b.op("sub", "u32", blocks, Imm(1, "u32"))

    def make():
        gen = b.reg("u32", "gen")
        b.emit("ld", (gen,), (gen_addr,), space="global", type="u32", sem="acquire", scope="gpu")
        old = b.reg("u32", "old")
        b.emit("atom", (old,), (count, Imm(1, "u32")), space="global", atom="add", type="u32",
               sem="acq_rel", scope="gpu")  # fmt: skip
        is_last = b.op("setp", "pred", old, last, cmp="eq", type="u32")
        with b.region() as opener:
            b.emit("st", (), (count, Imm(0, "u32")), space="global", type="u32", sem="relaxed",
                   scope="gpu")  # fmt: skip
            nxt = b.op("add", "u32", gen, Imm(1, "u32"))
            b.emit("st", (), (gen_addr, nxt), space="global", type="u32", sem="release",
                   scope="gpu")  # fmt: skip
        with b.region() as waiter:
            with b.region() as spin:
                now = b.reg("u32", "gen")
                b.emit("ld", (now,), (gen_addr,), space="global", type="u32", sem="acquire",
                       scope="gpu")  # fmt: skip
                moved = b.op("setp", "pred", now, gen, cmp="ne", type="u32")
                b.add(lir.Break(moved))
            b.add(lir.Loop(spin.block, span=e.span))
        b.add(lir.If(is_last, opener.block, waiter.block, span=e.span))

    return _once(lw, e, make, None)


ONCE = {
    "atomic_add": atomic_add,
    "atomic_cas": atomic_cas,
    "load_acquire": load_acquire,
    "store_release": store_release,
    "grid_barrier": grid_barrier,
}
