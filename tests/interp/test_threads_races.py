"""interp.threads with check_races: a CTA sum through shared memory, with and without
its barriers; shared histograms by atomics do not race."""

import numpy as np
import pytest

from phobos.interp import GlobalMemory, InterpError, run_lir
from phobos.interp.races import RaceRecorder
from phobos.lower.lir import (
    Block,
    Break,
    If,
    Imm,
    Kernel,
    Loop,
    Param,
    Reg,
    Return,
    SharedBuffer,
    inst,
)
from phobos.lower.verify import verify
from phobos.source import SourceFile

LINES = [
    "let t = tid",  # 1
    "part[t] = x[t]",  # 2: the first store to shared
    "barrier()",  # 3
    "let a = part[t]",  # 4: the reduction's loads
    "let b = part[t + s]",  # 5
    "part[t] = a + b",  # 6: the reduction's store
    "barrier()",  # 7
    "out[block] = part[0]",  # 8
]
SRC = SourceFile("sum.ph", "\n".join(LINES) + "\n")


def line(n: int):
    start = sum(len(x) + 1 for x in LINES[: n - 1])
    return SRC.span(start, start + len(LINES[n - 1]))


u32, s32, f32, u64 = "u32", "s32", "f32", "u64"
t, s, sa, sb = Reg("t", s32), Reg("s", s32), Reg("sa", u32), Reg("sb", u32)
x, out, ga = Reg("x", u64), Reg("out", u64), Reg("ga", u64)
v, w, c = Reg("v", f32), Reg("w", f32), Reg("c", u32)
p, done = Reg("p", "pred"), Reg("done", "pred")
THREADS = 128


def cta_sum(*, barrier_in_loop=True, first_barrier=True) -> Kernel:
    """out[block] = sum of x[block * 128 : +128], by a shared-memory tree."""
    loop_body = [
        inst("setp", (done,), (s, Imm(1, s32)), cmp="lt", type=s32),
        Break(done),
        inst("setp", (p,), (t, s), cmp="lt", type=s32),
        If(
            p,
            Block(
                (
                    inst("shl", (sa,), (t, Imm(2, u32)), type="b32"),
                    inst("ld", (v,), (sa,), space="shared", type=f32, span=line(4)),
                    inst("add", (sb,), (t, s), type=u32),
                    inst("shl", (sb,), (sb, Imm(2, u32)), type="b32"),
                    inst("ld", (w,), (sb,), space="shared", type=f32, span=line(5)),
                    inst("add", (v,), (v, w), type=f32),
                    inst("st", (), (sa, v), space="shared", type=f32, span=line(6)),
                )
            ),
        ),
    ]
    if barrier_in_loop:
        loop_body.append(inst("bar", (), (Imm(0, u32),), span=line(7)))
    loop_body.append(inst("shr", (s,), (s, Imm(1, u32)), type=s32))
    body = [
        inst("sreg", (t,), (), name="tid.x", span=line(1)),
        inst("sreg", (c,), (), name="ctaid.x"),
        inst("mad", (c,), (c, Imm(THREADS, u32), t), type=u32),
        inst("mul_wide", (ga,), (c, Imm(4, u32)), type=u32),
        inst("add", (ga,), (ga, x), type=u64),
        inst("ld", (v,), (ga,), space="global", type=f32),
        inst("shl", (sa,), (t, Imm(2, u32)), type="b32"),
        inst("st", (), (sa, v), space="shared", type=f32, span=line(2)),
    ]
    if first_barrier:
        body.append(inst("bar", (), (Imm(0, u32),), span=line(3)))
    body += [
        inst("mov", (s,), (Imm(THREADS // 2, s32),), type=s32),
        Loop(Block(tuple(loop_body))),
        inst("setp", (p,), (t, Imm(0, s32)), cmp="eq", type=s32),
        If(
            p,
            Block(
                (
                    inst("mov", (sa,), (Imm(0, u32),), type=u32),
                    inst("ld", (v,), (sa,), space="shared", type=f32, span=line(8)),
                    inst("sreg", (c,), (), name="ctaid.x"),
                    inst("mul_wide", (ga,), (c, Imm(4, u32)), type=u32),
                    inst("add", (ga,), (ga, out), type=u64),
                    inst("st", (), (ga, v), space="global", type=f32),
                )
            ),
        ),
    ]
    kernel = Kernel(
        "cta_sum",
        (Param("x", u64), Param("out", u64)),
        Block(tuple(body)),
        threads=THREADS,
        smem=4 * THREADS,
        shared=(SharedBuffer("part", 0, 4 * THREADS),),
    )
    verify(kernel)
    return kernel


def run_sum(kernel, blocks=3, check_races=True):
    rng = np.random.default_rng(7)
    data = rng.integers(-50, 50, blocks * THREADS).astype(np.float32)
    mem = GlobalMemory()
    px = mem.place(data, "x")
    po = mem.place(np.zeros(blocks, np.float32), "out")
    report = run_lir(kernel, blocks, {"x": px, "out": po}, mem, check_races=check_races)
    return data.reshape(blocks, THREADS).sum(axis=1), mem.read(po), report


def test_cta_sum_with_barriers_is_right_and_race_free():
    want, got, report = run_sum(cta_sum())
    np.testing.assert_array_equal(got, want)
    assert report.race_free and report.races_found == 0
    assert report.barriers == 3 * (1 + 7)


def test_a_removed_barrier_in_the_tree_is_a_race_at_both_lines():
    want, got, report = run_sum(cta_sum(barrier_in_loop=False))
    np.testing.assert_array_equal(got, want)  # the interpreter's order hides it: not the check
    assert not report.race_free
    first = report.races[0]
    # Thread t + s stored part[t + s] in one step; thread t loads it in the next.
    assert first.kind == "read/write"
    assert first.span_a == line(6) and first.span_b == line(5)
    assert first.buffer == "part" and first.buffer_offset == first.offset
    assert first.thread_a != first.thread_b
    assert first.cta == (0, 0, 0)
    message = first.message()
    assert "sum.ph:6:1" in message and "sum.ph:5:1" in message
    assert "with no barrier between" in message
    diag = first.diagnostic()
    assert diag.primary.span == line(5)
    assert diag.secondary[0].span == line(6)
    # One report per pair of instructions and kind, not one per byte or block.
    keys = [(r.kind, r.span_a, r.span_b) for r in report.races]
    assert len(keys) == len(set(keys))
    assert report.races_found > len(report.races)


def test_a_removed_first_barrier_races_the_first_store_with_the_loads():
    _, _, report = run_sum(cta_sum(first_barrier=False))
    pairs = {(r.span_a, r.span_b) for r in report.races}
    assert (line(2), line(5)) in pairs


def test_races_are_not_checked_unless_asked():
    _, _, report = run_sum(cta_sum(barrier_in_loop=False), check_races=False)
    assert report.race_free


def test_a_barrier_under_divergent_control_is_refused():
    body = Block(
        (
            inst("sreg", (t,), (), name="tid.x"),
            inst("setp", (p,), (t, Imm(5, s32)), cmp="lt", type=s32),
            If(p, Block((inst("bar", (), (Imm(0, u32),), span=line(3)),))),
        )
    )
    kernel = Kernel("k", (), body, threads=32)
    verify(kernel)
    with pytest.raises(InterpError, match=r"sum.ph:3:1: `bar` is reached by 5 of the block's 32"):
        run_lir(kernel, 1, {}, GlobalMemory())


def test_returned_threads_do_not_hold_a_barrier_up():
    body = Block(
        (
            inst("sreg", (t,), (), name="tid.x"),
            inst("setp", (p,), (t, Imm(5, s32)), cmp="ge", type=s32),
            Return(p),
            inst("bar", (), (Imm(0, u32),)),
        )
    )
    kernel = Kernel("k", (), body, threads=32)
    assert run_lir(kernel, 1, {}, GlobalMemory()).barriers == 1


def test_the_recorder_tells_writes_reads_and_atomics_apart():
    st = inst("st", (), (sa, v), space="shared", type=f32)
    ld = inst("ld", (v,), (sa,), space="shared", type=f32)
    at = inst("atom", (c,), (sa, c), space="shared", type=u32, atom="add")
    rec = RaceRecorder(64)
    rec.access("read", ld, np.arange(8), np.zeros(8), 4)  # a broadcast read: no race
    rec.access("atomic", at, np.arange(8), np.full(8, 8), 4)  # atomics together: no race
    assert rec.races == []
    rec.access("write", st, np.array([3]), np.array([0]), 4)  # others read it: a race
    rec.access("read", ld, np.array([1]), np.array([8]), 4)  # others updated it: a race
    rec.access("write", st, np.array([4, 5]), np.array([16, 16]), 4)  # one store, two threads
    assert [(r.kind, r.thread_a, r.thread_b) for r in rec.races] == [
        ("read/write", 0, 3),
        ("atomic/read", 0, 1),
        ("write/write", 4, 5),
    ]
    rec.barrier()
    rec.access("write", st, np.array([6]), np.array([0]), 4)
    assert len(rec.races) == 3
