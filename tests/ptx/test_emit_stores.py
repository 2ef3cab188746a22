"""Hopper's stores as PTX: stmatrix (x1, x2, x4, `.trans`), the TMA store from shared
memory in a bulk group, its commit and its waits (`.read` or not); assembled by ptxas for
sm_90 and sm_90a (the hand-written kernels of tests/interp/storekit.py among them), and
refused on sm_80."""

import sys
from pathlib import Path

import pytest

from phobos.lower.lir import Block, Imm, Kernel, Param, Reg, SharedBuffer, TensorMap, inst
from phobos.lower.verify import verify
from phobos.ptx import TargetError, emit_kernel, emit_module

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interp"))

import storekit  # noqa: E402

s, m, x = Reg("s", "u32"), Reg("m", "u64"), Reg("x", "s32")
p = Reg("p", "pred")
r = tuple(Reg(f"r{j}", "b32") for j in range(4))


def kernel(*items) -> Kernel:
    head = (
        inst("sreg", (s,), (), name="tid.x"),
        *(inst("mov", (reg,), (Imm(j, "b32"),), type="b32") for j, reg in enumerate(r)),
        inst("tmap_addr", (m,), (), map="g_tmap"),
        inst("mov", (x,), (Imm(-8, "s32"),), type="s32"),
        inst("elect_sync", (p,)),
    )
    k = Kernel(
        "stores",
        (Param("g", "u64"),),
        Block(head + tuple(items)),
        threads=128,
        smem=1024,
        shared=(SharedBuffer("tile", 0, 1024, 1024),),
        maps=(TensorMap("g_tmap", "g", "f16", (100, 64), (8, 64), "128B"),),
    )
    verify(k)
    return k


STORES = kernel(
    inst("stmatrix", (), (s, r[0])),
    inst("stmatrix", (), (s, *r[:2]), trans=1),
    inst("stmatrix", (), (s, *r)),
    inst("stmatrix", (), (s, *r), trans=1),
    inst("fence", space="shared", proxy="async"),
    inst("tma_store", (), (m, x, Imm(64, "s32"), s), guard=p),
    inst("bulk_commit", guard=p),
    inst("bulk_wait", pending=1),
    inst("bulk_wait", pending=0, read=1),
)


def lines(text: str) -> list[str]:
    return [line.strip().rstrip(";") for line in text.splitlines()]


def test_the_ptx_text():
    got = lines(emit_kernel(STORES, "sm_90"))
    st = [line for line in got if line.startswith("stmatrix")]
    assert [line.split(" [")[0] for line in st] == [
        "stmatrix.sync.aligned.m8n8.x1.shared.b16",
        "stmatrix.sync.aligned.m8n8.x2.trans.shared.b16",
        "stmatrix.sync.aligned.m8n8.x4.shared.b16",
        "stmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
    ]
    assert st[2].endswith("], {%r1, %r2, %r3, %r4}")
    store = next(line for line in got if "tensor" in line)
    assert store.startswith("@%p0 cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%rd")
    assert ", {%r5, 64}], [%r" in store
    assert "@%p0 cp.async.bulk.commit_group" in got
    assert "cp.async.bulk.wait_group 1" in got
    assert "cp.async.bulk.wait_group.read 0" in got


@pytest.mark.parametrize("arch", ["sm_90", "sm_90a"])
def test_the_stores_assemble(arch, assemble):
    assemble(emit_module([STORES], arch), arch)


@pytest.mark.parametrize("n, trans", [(1, False), (2, True), (4, False), (4, True)])
def test_the_stmatrix_kits_assemble(n, trans, assemble):
    assemble(emit_module([storekit.stmatrix_kernel(n, trans)], "sm_90"), "sm_90")
    assemble(emit_module([storekit.roundtrip_kernel(trans)], "sm_90"), "sm_90")


@pytest.mark.parametrize("mode", ["none", "32B", "64B", "128B"])
def test_the_tma_store_kit_assembles(mode, assemble):
    k = storekit.store_kernel("f16", (8, 16) if mode == "none" else (16, 32), mode)
    assemble(emit_module([k], "sm_90a"), "sm_90a")


@pytest.mark.parametrize(
    "item",
    [
        inst("stmatrix", (), (s, r[0])),
        inst("tma_store", (), (m, x, x, s)),
        inst("bulk_commit"),
        inst("bulk_wait", pending=0),
    ],
    ids=lambda i: i.op,
)
def test_the_stores_need_sm_90(item):
    head = (
        inst("sreg", (s,), (), name="tid.x"),
        inst("mov", (r[0],), (Imm(0, "b32"),), type="b32"),
        inst("mov", (m,), (Imm(0, "u64"),), type="u64"),
        inst("mov", (x,), (Imm(0, "s32"),), type="s32"),
    )
    k = Kernel("bare", (), Block((*head, item)), threads=32, smem=1024)
    verify(k)
    with pytest.raises(TargetError, match=rf"`{item.op}` needs .*sm_90 or newer"):
        emit_kernel(k, "sm_80")
