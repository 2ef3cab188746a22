"""interp.threads: divergent control — if/else, per-thread for bounds, break, continue,
return, guards — and trap and endless loops stopping at their spans."""

import numpy as np
import pytest

from phobos.interp import GlobalMemory, InterpError, run_lir
from phobos.lower.lir import (
    Block,
    Break,
    Continue,
    For,
    If,
    Imm,
    Kernel,
    Loop,
    Param,
    Reg,
    Return,
    inst,
)
from phobos.lower.lirparse import parse_kernel
from phobos.lower.verify import verify
from phobos.source import SourceFile

s32, u32, u64 = "s32", "u32", "u64"
t, acc, k, a = Reg("t", s32), Reg("acc", s32), Reg("k", s32), Reg("a", u64)
p, q = Reg("p", "pred"), Reg("q", "pred")
OUT = Reg("out", u64)
THREADS = 70  # three warps, the last partial


def run(items, threads=THREADS, **options):
    """Run `items` after `t = tid; acc = -1`, then store acc to out[t]."""
    body = Block(
        (
            inst("sreg", (t,), (), name="tid.x"),
            inst("mov", (acc,), (Imm(-1, s32),), type=s32),
            *items,
            inst("mul_wide", (a,), (t, Imm(4, s32)), type=s32),
            inst("add", (a,), (a, OUT), type=u64),
            inst("st", (), (a, acc), space="global", type=s32),
        )
    )
    kernel = Kernel("k", (Param("out", u64),), body, threads=threads)
    verify(kernel)
    mem = GlobalMemory()
    out = mem.place(np.full(threads, -7, np.int32))
    run_lir(kernel, 1, {"out": out}, mem, **options)
    return mem.read(out)


TID = np.arange(THREADS)


def setp(dest, cmp, lhs, rhs):
    return inst("setp", (dest,), (lhs, rhs), cmp=cmp, type=s32)


def test_if_else_diverges_per_thread():
    got = run(
        (
            inst("rem", (k,), (t, Imm(3, s32)), type=s32),
            setp(p, "eq", k, Imm(0, s32)),
            If(
                p,
                Block((inst("mov", (acc,), (Imm(10, s32),), type=s32),)),
                Block((inst("mul", (acc,), (t, Imm(2, s32)), type=s32),)),
            ),
        )
    )
    np.testing.assert_array_equal(got, np.where(TID % 3 == 0, 10, 2 * TID))


def test_a_condition_rewritten_in_then_does_not_move_threads_to_else():
    got = run(
        (
            setp(p, "lt", t, Imm(10, s32)),
            If(
                p,
                Block(
                    (setp(p, "ge", t, Imm(100, s32)), inst("mov", (acc,), (Imm(1, s32),), type=s32))
                ),
                Block((inst("mov", (acc,), (Imm(2, s32),), type=s32),)),
            ),
        )
    )
    np.testing.assert_array_equal(got, np.where(TID < 10, 1, 2))


def test_for_with_per_thread_bounds():
    got = run(
        (
            inst("mov", (acc,), (Imm(0, s32),), type=s32),
            For(k, Imm(0, s32), t, Imm(1, s32), Block((inst("add", (acc,), (acc, k), type=s32),))),
        )
    )
    np.testing.assert_array_equal(got, TID * (TID - 1) // 2)


def test_for_with_a_per_thread_step_and_continue():
    # for k = 0 to 20 step (t % 3 + 1): skip odd k, sum the rest
    step = Reg("step", s32)
    got = run(
        (
            inst("rem", (step,), (t, Imm(3, s32)), type=s32),
            inst("add", (step,), (step, Imm(1, s32)), type=s32),
            inst("mov", (acc,), (Imm(0, s32),), type=s32),
            For(
                k,
                Imm(0, s32),
                Imm(20, s32),
                step,
                Block(
                    (
                        inst("and", (Reg("odd", s32),), (k, Imm(1, s32)), type="b32"),
                        setp(q, "ne", Reg("odd", s32), Imm(0, s32)),
                        Continue(q),
                        inst("add", (acc,), (acc, k), type=s32),
                    )
                ),
            ),
        )
    )
    want = [sum(v for v in range(0, 20, i % 3 + 1) if v % 2 == 0) for i in TID]
    np.testing.assert_array_equal(got, want)


def test_break_leaves_only_the_innermost_loop():
    # loop { for k in 0..5 { acc += 1; break if k == 1 }; outer += 1; break if outer > t % 4 }
    outer = Reg("outer", s32)
    got = run(
        (
            inst("mov", (acc,), (Imm(0, s32),), type=s32),
            inst("mov", (outer,), (Imm(0, s32),), type=s32),
            inst("rem", (Reg("lim", s32),), (t, Imm(4, s32)), type=s32),
            Loop(
                Block(
                    (
                        For(
                            k,
                            Imm(0, s32),
                            Imm(5, s32),
                            Imm(1, s32),
                            Block(
                                (
                                    inst("add", (acc,), (acc, Imm(1, s32)), type=s32),
                                    setp(q, "eq", k, Imm(1, s32)),
                                    Break(q),
                                )
                            ),
                        ),
                        inst("add", (outer,), (outer, Imm(1, s32)), type=s32),
                        setp(p, "gt", outer, Reg("lim", s32)),
                        Break(p),
                    )
                )
            ),
        )
    )
    np.testing.assert_array_equal(got, 2 * (TID % 4 + 1))


def test_break_inside_an_if_inside_a_loop():
    got = run(
        (
            inst("mov", (acc,), (Imm(0, s32),), type=s32),
            Loop(
                Block(
                    (
                        setp(p, "ge", acc, t),
                        If(p, Block((Break(), inst("mov", (acc,), (Imm(99, s32),), type=s32)))),
                        inst("add", (acc,), (acc, Imm(1, s32)), type=s32),
                    )
                )
            ),
        )
    )
    np.testing.assert_array_equal(got, TID)


def test_return_ends_threads_but_not_the_others():
    got = run(
        (
            setp(p, "ge", t, Imm(40, s32)),
            inst("mov", (acc,), (Imm(5, s32),), type=s32),
            Return(p),
            inst("mov", (acc,), (Imm(6, s32),), type=s32),
        )
    )
    # The returned threads never reach the final store: their slots keep -7.
    np.testing.assert_array_equal(got, np.where(TID >= 40, -7, 6))


def test_return_inside_a_loop_leaves_everything():
    got = run(
        (
            inst("mov", (acc,), (Imm(0, s32),), type=s32),
            For(
                k,
                Imm(0, s32),
                Imm(10, s32),
                Imm(1, s32),
                Block(
                    (
                        setp(p, "eq", k, t),
                        Return(p),
                        inst("add", (acc,), (acc, Imm(1, s32)), type=s32),
                    )
                ),
            ),
        )
    )
    np.testing.assert_array_equal(got, np.where(TID < 10, -7, 10))


def test_guards_and_negated_guards():
    got = run(
        (
            setp(p, "lt", t, Imm(30, s32)),
            inst("mov", (acc,), (Imm(1, s32),), type=s32, guard=p),
            inst("mov", (acc,), (Imm(2, s32),), type=s32, guard=p, guard_negated=True),
        )
    )
    np.testing.assert_array_equal(got, np.where(TID < 30, 1, 2))


SRC = SourceFile("trap.ph", "if bad {\n  trap()\n}\nwhile true {}\n")


def test_trap_stops_the_kernel_at_its_span():
    trap = inst("trap", span=SRC.span(11, 17))
    with pytest.raises(InterpError) as info:
        run((setp(p, "eq", t, Imm(3, s32)), If(p, Block((trap,)))))
    assert info.value.message == "the kernel trapped"
    assert str(info.value) == "trap.ph:2:3: the kernel trapped"


def test_a_trap_no_thread_reaches_is_harmless():
    trap = inst("trap", span=SRC.span(11, 17))
    got = run((setp(p, "gt", t, Imm(1000, s32)), If(p, Block((trap,)))))
    assert (got == -1).all()


def test_an_endless_loop_stops_at_its_span():
    loop = Loop(Block((inst("add", (acc,), (acc, Imm(1, s32)), type=s32),)), span=SRC.span(20, 33))
    with pytest.raises(InterpError, match=r"trap.ph:4:1: the loop ran past 100 iterations"):
        run((loop,), max_iterations=100)


def test_division_by_zero_in_a_running_thread_is_an_error():
    with pytest.raises(InterpError, match="integer division by zero in `%acc = div.s32"):
        run((inst("div", (acc,), (Imm(7, s32), t), type=s32),))
    # where the dividing threads skip the zero, it is fine
    got = run(
        (
            setp(p, "ne", t, Imm(0, s32)),
            inst("div", (acc,), (Imm(70, s32), t), type=s32, guard=p),
        )
    )
    assert got[0] == -1 and got[7] == 10


def test_a_parsed_kernel_with_structured_control():
    text = """kernel k(%out: u64) threads=40 smem=0 {
  reg %t: s32
  reg %n: s32
  reg %p: pred
  reg %a: u64
  %t = sreg.tid.x
  %n = mov.s32 0:s32
  loop {
    %p = setp.ge.s32 %n, %t
    break if %p
    %n = add.s32 %n, 2:s32
  }
  %a = mul_wide.s32 %t, 4:s32
  %a = add.u64 %a, %out
  st.global.s32 %a, %n
}"""
    kernel = parse_kernel(text)
    verify(kernel)
    mem = GlobalMemory()
    out = mem.place(np.zeros(40, np.int32))
    run_lir(kernel, 1, {"out": out}, mem)
    np.testing.assert_array_equal(mem.read(out), (np.arange(40) + 1) // 2 * 2)
