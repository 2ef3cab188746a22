"""Clusters as PTX: `.reqnctapercluster`, the cluster's special registers, its split
barrier and the multicast TMA load; assembled for sm_90a, refused below sm_90 and, by the
verifier, in a kernel that runs no cluster."""

import pytest

from phobos.lower.lir import Block, Imm, Kernel, Param, Reg, SharedBuffer, TensorMap, inst
from phobos.lower.verify import LirError, verify
from phobos.ptx import TargetError, emit_kernel, emit_module

s, bar, rank, mask = Reg("s", "u32"), Reg("bar", "u32"), Reg("rank", "u32"), Reg("k", "u16")
m = Reg("m", "u64")
MAP = TensorMap("g_tmap", "g", "f16", (64, 64), (8, 64), "128B")


def kernel(*items, cluster=2) -> Kernel:
    head = (
        inst("sreg", (rank,), (), name="cluster_ctarank"),
        inst("mov", (bar,), (Imm(1024, "u32"),), type="u32"),
        inst("mov", (s,), (Imm(0, "u32"),), type="u32"),
        inst("tmap_addr", (m,), (), map="g_tmap"),
    )
    k = Kernel("clu", (Param("g", "u64"),), Block(head + tuple(items)), threads=128,
               smem=1040, shared=(SharedBuffer("tile", 0, 1024, 1024),
                                  SharedBuffer("bars", 1024, 16, 8)),
               maps=(MAP,), cluster=cluster)  # fmt: skip
    verify(k)
    return k


CLUSTER = kernel(
    inst("sreg", (rank,), (), name="clusterid.x"),
    inst("sreg", (rank,), (), name="nclusterid.x"),
    inst("mov", (mask,), (Imm(3, "u16"),), type="u16"),
    inst("cluster_arrive"),
    inst("cluster_wait"),
    inst("cluster_arrive", relaxed=1),
    inst("cluster_wait"),
    inst("tma_load", (), (s, m, Imm(0, "s32"), Imm(8, "s32"), bar, Imm(3, "u16"))),
    inst("tma_load", (), (s, m, Imm(0, "s32"), Imm(0, "s32"), bar, mask)),
)


def lines(text: str) -> list[str]:
    return [line.strip().rstrip(";") for line in text.splitlines()]


def test_the_ptx_text():
    text = lines(emit_kernel(CLUSTER, "sm_90a"))
    assert text[text.index(".maxntid 128, 1, 1") + 1] == ".reqnctapercluster 2, 1, 1"
    assert "mov.u32 %r0, %cluster_ctarank" in text
    assert "mov.u32 %r0, %clusterid.x" in text and "mov.u32 %r0, %nclusterid.x" in text
    at = text.index("barrier.cluster.arrive.aligned")
    assert text[at + 1] == "barrier.cluster.wait.aligned"
    assert text[at + 2] == "barrier.cluster.arrive.relaxed.aligned"
    assert text[at + 3] == "barrier.cluster.wait.aligned"
    loads = [line for line in text if "tensor" in line]
    head = ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
            ".multicast::cluster [%r")  # fmt: skip
    assert all(line.startswith(head) for line in loads) and len(loads) == 2
    # An immediate mask goes through a b16 register; a register mask is named.
    imm = loads[0].rsplit(", ", 1)[1]
    assert f"mov.b16 {imm}, 3" in text
    assert loads[1].endswith(", %rs0")


def test_a_kernel_without_clusters_has_no_directive():
    text = emit_kernel(kernel(cluster=1), "sm_90a")
    assert ".reqnctapercluster" not in text


def test_it_assembles_for_sm_90a(assemble):
    assemble(emit_module([CLUSTER], "sm_90a"), "sm_90a")


@pytest.mark.parametrize("item", [inst("cluster_arrive"), inst("cluster_wait"),
                                  inst("sreg", (rank,), (), name="cluster_ctarank")],
                         ids=lambda i: i.op + str(i.attr("name") or ""))  # fmt: skip
def test_sm_80_is_refused(item):
    with pytest.raises(TargetError, match=r"needs sm_90 or newer"):
        emit_kernel(kernel(item), "sm_80")


@pytest.mark.parametrize(
    "item, message",
    [
        (inst("cluster_arrive"), r"`cluster_arrive` needs a kernel of clusters"),
        (inst("cluster_wait"), r"`cluster_wait` needs a kernel of clusters"),
        (
            inst("tma_load", (), (s, m, Imm(0, "s32"), Imm(0, "s32"), bar, Imm(1, "u16"))),
            r"`tma_load` needs a kernel of clusters",
        ),
    ],
)
def test_the_cluster_ops_need_a_kernel_of_clusters(item, message):
    with pytest.raises(LirError, match=message):
        kernel(item, cluster=1)


@pytest.mark.parametrize(
    "mask, message",
    [
        (Imm(4, "u16"), r"mask of 0x4 names no rank or a rank past the cluster's 2 CTAs"),
        (Imm(0, "u16"), r"mask of 0x0 names no rank"),
        (Imm(3, "u32"), r"CTA mask is 16-bit \(u16 or b16\), not `3:u32`"),
    ],
)
def test_a_bad_multicast_mask_is_refused(mask, message):
    with pytest.raises(LirError, match=message):
        kernel(inst("tma_load", (), (s, m, Imm(0, "s32"), Imm(0, "s32"), bar, mask)))


@pytest.mark.parametrize("item", [inst("cluster_arrive", relaxed=2),
                                  inst("cluster_wait", relaxed=1)], ids=["two", "wait"])  # fmt: skip
def test_relaxed_is_an_arrives_0_or_1(item):
    with pytest.raises(LirError, match=r"`relaxed`"):
        kernel(item)


def test_the_cluster_barrier_takes_no_guard():
    with pytest.raises(LirError, match=r"guard"):
        kernel(inst("cluster_arrive", guard=Reg("p", "pred")))


def test_the_text_form_keeps_the_cluster():
    from phobos.lower.lir import print_kernel
    from phobos.lower.lirparse import parse_kernel

    text = print_kernel(CLUSTER)
    assert " cluster=2 {" in text.splitlines()[0]
    assert parse_kernel(text) == CLUSTER
