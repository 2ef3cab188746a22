"""interp.threads: atomics in global and shared memory, one thread after another in
thread order (deterministic), and a shared histogram that is race-free."""

import numpy as np
import pytest

from phobos.interp import GlobalMemory, InterpError, run_lir
from phobos.lower.lir import Block, If, Imm, Kernel, Param, Reg, SharedBuffer, inst
from phobos.lower.verify import verify

u32, s32, f32, u64 = "u32", "s32", "f32", "u64"
t, b, one = Reg("t", u32), Reg("b", u32), Reg("one", u32)
IN, HIST = Reg("inp", u64), Reg("hist", u64)
ga, sa, v, old = Reg("ga", u64), Reg("sa", u32), Reg("v", u32), Reg("old", u32)
p = Reg("p", "pred")
BINS = 16


def element_of_thread():
    """v = inp[ctaid * threads + tid] (u32), b = v % BINS."""
    return (
        inst("sreg", (t,), (), name="tid.x"),
        inst("sreg", (Reg("c", u32),), (), name="ctaid.x"),
        inst("sreg", (Reg("n", u32),), (), name="ntid.x"),
        inst("mad", (Reg("g", u32),), (Reg("c", u32), Reg("n", u32), t), type=u32),
        inst("mul_wide", (ga,), (Reg("g", u32), Imm(4, u32)), type=u32),
        inst("add", (ga,), (ga, IN), type=u64),
        inst("ld", (v,), (ga,), space="global", type=u32),
        inst("rem", (b,), (v, Imm(BINS, u32)), type=u32),
    )


def hist_addr(reg):
    return (
        inst("mul_wide", (ga,), (reg, Imm(4, u32)), type=u32),
        inst("add", (ga,), (ga, HIST), type=u64),
    )


def run(kernel, data, blocks, **options):
    verify(kernel)
    mem = GlobalMemory()
    pi = mem.place(data)
    ph = mem.place(np.zeros(BINS, np.uint32))
    report = run_lir(kernel, blocks, {"inp": pi, "hist": ph}, mem, **options)
    run.inp = mem.read(pi)
    return mem.read(ph), report


PARAMS = (Param("inp", u64), Param("hist", u64))


def test_global_histogram():
    data = np.random.default_rng(0).integers(0, 1000, 4 * 64).astype(np.uint32)
    body = Block(
        (
            *element_of_thread(),
            *hist_addr(b),
            inst("red", (), (ga, Imm(1, u32)), space="global", atom="add", type=u32),
        )
    )
    got, _ = run(Kernel("h", PARAMS, body, threads=64), data, 4)
    np.testing.assert_array_equal(got, np.bincount(data % BINS, minlength=BINS))


def shared_histogram(second_barrier=True) -> Kernel:
    items = [
        *element_of_thread(),
        inst("shl", (sa,), (t, Imm(2, u32)), type="b32"),
        inst("setp", (p,), (t, Imm(BINS, u32)), cmp="lt", type=u32),
        inst("st", (), (sa, Imm(0, u32)), space="shared", type=u32, guard=p),
        inst("bar", (), (Imm(0, u32),)),
        inst("shl", (sa,), (b, Imm(2, u32)), type="b32"),
        inst("atom", (old,), (sa, Imm(1, u32)), space="shared", atom="add", type=u32),
    ]
    if second_barrier:
        items.append(inst("bar", (), (Imm(0, u32),)))
    items += [
        inst("shl", (sa,), (t, Imm(2, u32)), type="b32"),
        If(
            p,
            Block(
                (
                    inst("ld", (v,), (sa,), space="shared", type=u32),
                    *hist_addr(t),
                    inst("red", (), (ga, v), space="global", atom="add", type=u32),
                )
            ),
        ),
    ]
    return Kernel(
        "sh",
        PARAMS,
        Block(tuple(items)),
        threads=128,
        smem=4 * BINS,
        shared=(SharedBuffer("bins", 0, 4 * BINS),),
    )


def test_shared_histogram_is_right_and_race_free():
    data = np.random.default_rng(1).integers(0, 1000, 3 * 128).astype(np.uint32)
    got, report = run(shared_histogram(), data, 3, check_races=True)
    np.testing.assert_array_equal(got, np.bincount(data % BINS, minlength=BINS))
    assert report.race_free


def test_reading_a_bin_while_others_update_it_is_a_race():
    data = np.random.default_rng(1).integers(0, 1000, 128).astype(np.uint32)
    _, report = run(shared_histogram(second_barrier=False), data, 1, check_races=True)
    assert {r.kind for r in report.races} == {"atomic/read"}


def test_atomics_run_in_thread_order():
    # Every thread takes a ticket from one counter: the old values are 0, 1, 2, ...
    ticket = Reg("ticket", u32)
    body = Block(
        (
            inst("sreg", (t,), (), name="tid.x"),
            inst("mov", (ga,), (HIST,), type=u64),
            inst("atom", (ticket,), (ga, Imm(1, u32)), space="global", atom="add", type=u32),
            inst("mul_wide", (Reg("o", u64),), (t, Imm(4, u32)), type=u32),
            inst("add", (ga,), (Reg("o", u64), IN), type=u64),
            inst("st", (), (ga, ticket), space="global", type=u32),
        )
    )
    got, _ = run(Kernel("tickets", PARAMS, body, threads=40), np.zeros(40, np.uint32), 1)
    assert got[0] == 40
    assert run.inp.tolist() == list(range(40))


@pytest.mark.parametrize(
    ("op", "type_", "start", "operands", "final", "olds"),
    [
        ("add", "f32", 0.5, [1.25, 2.0, -0.5], 3.25, [0.5, 1.75, 3.75]),
        ("max", "s32", -5, [3, -9, 7], 7, [-5, 3, 3]),
        ("min", "u32", 9, [3, 12, 1], 1, [9, 3, 3]),
        ("exch", "u32", 1, [5, 6, 7], 7, [1, 5, 6]),
        ("inc", "u32", 0, [1, 1, 1], 1, [0, 1, 0]),
        ("dec", "u32", 0, [2, 2, 2], 0, [0, 2, 1]),
        ("and", "b32", 0xFF, [0xF0, 0x3C, 0xFF], 0x30, [0xFF, 0xF0, 0x30]),
        ("or", "b32", 1, [2, 4, 8], 15, [1, 3, 7]),
        ("xor", "b32", 1, [3, 3, 1], 0, [1, 2, 1]),
    ],
)
def test_atomic_operations(op, type_, start, operands, final, olds):
    dtype = {"f32": np.float32, "s32": np.int32, "u32": np.uint32, "b32": np.uint32}[type_]
    operand, got_old = Reg("operand", type_), Reg("got", type_)
    ops = Reg("ops", u64)
    body = Block(
        (
            inst("sreg", (t,), (), name="tid.x"),
            inst("mul_wide", (Reg("o", u64),), (t, Imm(4, u32)), type=u32),
            inst("add", (ga,), (Reg("o", u64), ops), type=u64),
            inst("ld", (operand,), (ga,), space="global", type=type_),
            inst("atom", (got_old,), (HIST, operand), space="global", atom=op, type=type_),
            inst("st", (), (ga, got_old), space="global", type=type_),
        )
    )
    kernel = Kernel("a", (Param("hist", u64), Param("ops", u64)), body, threads=3)
    verify(kernel)
    mem = GlobalMemory()
    cell = mem.place(np.array([start], dtype))
    po = mem.place(np.array(operands, dtype))
    run_lir(kernel, 1, {"hist": cell, "ops": po}, mem)
    assert mem.read(cell).tolist() == [final]
    assert mem.read(po).tolist() == olds


def test_compare_and_swap():
    cmp_, new, got = Reg("cmp", u32), Reg("new", u32), Reg("got", u32)
    body = Block(
        (
            inst("sreg", (t,), (), name="tid.x"),
            inst("add", (new,), (t, Imm(10, u32)), type=u32),
            inst("mov", (cmp_,), (t,), type=u32),  # thread k swaps only if the cell holds k
            inst("atom", (got,), (HIST, cmp_, new), space="global", atom="cas", type="b32"),
        )
    )
    kernel = Kernel("cas", (Param("hist", u64),), body, threads=4)
    verify(kernel)
    mem = GlobalMemory()
    cell = mem.place(np.array([0], np.uint32))
    run_lir(kernel, 1, {"hist": cell}, mem)
    assert mem.read(cell).tolist() == [10]  # thread 0 swapped; the others found 10


def test_an_atomic_out_of_bounds_is_refused():
    body = Block(
        (
            inst("add", (ga,), (HIST, Imm(64, u64)), type=u64),
            inst("red", (), (ga, Imm(1, u32)), space="global", atom="add", type=u32),
        )
    )
    with pytest.raises(InterpError, match="updates 4 bytes .* past the end"):
        run(Kernel("o", PARAMS, body, threads=1), np.zeros(1, np.uint32), 1)
