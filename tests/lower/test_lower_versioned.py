"""Sweeps versioned at run time on a dynamic row pitch: `if (N % 8 == 0)` the 16-byte
accesses, else the 8-byte ones.

A 16-bit row `X[row, 0 :+ BLOCK]` of a tensor whose extent `N` is bound at launch
starts at `row * N`: only a multiple of 4 elements is provable (the ABI), so the sweep
runs twice under a uniform branch, computed once at entry. Both branches keep the same
layout (8 elements a thread a group); the narrow one splits each vector in two."""

import dataclasses
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from lowerkit import insts, lowered, ops, ptxas, run_both, text

from phobos.interp.errors import InterpError
from phobos.lower import lir
from phobos.lower.kernel import lower_kernel
from phobos.lower.lirparse import parse_kernel
from phobos.lower.verify import verify

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks import kernels  # noqa: E402

NORMS = ["layer_norm", "rms_norm"]


def lowered_benchmark(name, block):
    hk = getattr(kernels, name).checked({"BLOCK": block})
    k, diags = lower_kernel(hk)
    assert k is not None, [d.message for d in diags]
    verify(k)
    assert parse_kernel(lir.print_kernel(k)) == k
    return hk, k


def pitch_test(k, dim="N"):
    """The pred register `(N & 7) == 0` computed at entry, or None."""
    low = None
    for i in insts(k.body):
        if i.op == "and" and i.srcs[0] == lir.Reg(dim, i.srcs[0].type) and i.srcs[1].value == 7:
            low = i.dests[0]
        if low is not None and i.op == "setp" and i.srcs[0] == low and i.attr("cmp") == "eq":
            return i.dests[0]
    return None


def versions(k) -> list[lir.If]:
    cond = pitch_test(k)
    return [it for it in k.body.items if isinstance(it, lir.If) and it.cond == cond]


def accesses(block, op):
    return {(i.attr("vec"), i.attr("type")) for i in insts(block) if i.op == op
            and i.attr("space") == "global"}  # fmt: skip


def only_branch(k, keep: str) -> lir.Kernel:
    """`k` with the other branch of every versioned sweep replaced by a trap."""
    trap = lir.Block((lir.inst("trap"),))
    cond = pitch_test(k)
    items = []
    for it in k.body.items:
        if isinstance(it, lir.If) and it.cond == cond:
            it = dataclasses.replace(it, orelse=trap) if keep == "wide" else \
                dataclasses.replace(it, then=trap)  # fmt: skip
        items.append(it)
    return dataclasses.replace(k, body=lir.Block(tuple(items)))


def swapped(k) -> lir.Kernel:
    cond = pitch_test(k)
    items = [dataclasses.replace(it, then=it.orelse, orelse=it.then)
             if isinstance(it, lir.If) and it.cond == cond else it for it in k.body.items]  # fmt: skip
    return dataclasses.replace(k, body=lir.Block(tuple(items)))


def norm_arrays(name, m, n, seed=5):
    rng = np.random.default_rng(seed)
    f16 = lambda *s: rng.standard_normal(s).astype(np.float16)  # noqa: E731
    arrays = {"X": f16(m, n), "Y": np.full((m, n), np.nan, np.float16), "W": f16(1, n)}
    if name == "layer_norm":
        arrays["B"] = f16(1, n)
    return arrays


EPS = {"eps": np.float32(1e-5)}


def within_an_ulp(ref, got) -> bool:
    """Equal but for the last place of an f16 (folds of many floats in another order)."""
    y, want = got.astype(np.float32), ref.astype(np.float32)
    return bool(np.all(np.abs(y - want) <= np.spacing(np.abs(ref)).astype(np.float32)))


@pytest.mark.parametrize("name", NORMS)
@pytest.mark.parametrize("block", [1024, 8192])
def test_norm_sweeps_are_versioned_on_the_row_pitch(name, block):
    _, k = lowered_benchmark(name, block)
    assert pitch_test(k) is not None
    vs = versions(k)
    assert len(vs) == 2  # the load of x, the store of Y: once each, not per access
    load_x, store_y = vs
    # 16 bytes where N % 8 == 0; the row's halves need no test apart then
    assert accesses(load_x.then, "ld") == {(4, "b32")}
    assert (4, "b32") in accesses(store_y.then, "ld")
    assert accesses(store_y.then, "st") == {(4, "b32")}
    # 8 bytes otherwise (W and B, in row 0, keep 16 bytes, split at a bound mid-vector)
    assert accesses(load_x.orelse, "ld") == {(4, "b16")}
    assert accesses(store_y.orelse, "st") == {(4, "b16")}
    assert accesses(store_y.orelse, "ld") == {(4, "b32"), (2, "b32")}
    t = text(k)
    assert re.search(r"= and\.b32 %N, 7", t) and "ld.global.v4.b32" in t and "v4.b16" in t


@pytest.mark.parametrize("name", NORMS)
@pytest.mark.parametrize("block, n", [(1024, 1000), (1024, 1004), (1024, 1024), (8192, 8192),
                                      (8192, 8004)])  # fmt: skip
def test_both_versions_agree_with_the_tile_interpreter_and_each_other(name, block, n):
    hk, k = lowered_benchmark(name, block)
    ref, got = run_both(hk, k, (3,), norm_arrays(name, 3, n), EPS)
    assert within_an_ulp(ref["Y"], got["Y"])
    if n % 8 == 0:  # the narrow version on the same rows: same layout, same folds, same bits
        _, other = run_both(hk, swapped(k), (3,), norm_arrays(name, 3, n), EPS)
        assert np.array_equal(other["Y"], got["Y"])


@pytest.mark.parametrize("name", NORMS)
@pytest.mark.parametrize("n, keep", [(1000, "wide"), (1004, "narrow"), (1020, "narrow"),
                                     (1024, "wide")])  # fmt: skip
def test_the_branch_taken_follows_n_mod_8(name, n, keep):
    hk, k = lowered_benchmark(name, 1024)
    k = only_branch(k, keep)  # the other branch traps
    verify(k)
    ref, got = run_both(hk, k, (3,), norm_arrays(name, 3, n), EPS)
    assert within_an_ulp(ref["Y"], got["Y"])


def test_8192_takes_the_wide_branch():
    hk, k = lowered_benchmark("layer_norm", 8192)
    ref, got = run_both(hk, only_branch(k, "wide"), (2,), norm_arrays("layer_norm", 2, 8192), EPS)
    assert within_an_ulp(ref["Y"], got["Y"])


def test_the_wrong_version_is_caught_by_the_memcheck():
    hk, k = lowered_benchmark("rms_norm", 1024)
    with pytest.raises(InterpError, match="misaligned|past the end"):
        run_both(hk, swapped(k), (3,), norm_arrays("rms_norm", 3, 1004), EPS)


def test_the_decision_is_logged(caplog):
    with caplog.at_level(logging.DEBUG, logger="phobos.lower"):
        lowered_benchmark("rms_norm", 1024)
    said = [r.getMessage() for r in caplog.records if "versioned on" in r.getMessage()]
    assert len(said) == 2
    assert all(m.startswith("`rms_norm` line ") and "versioned on N % 8" in m for m in said)


def test_no_version_where_the_width_is_proven_or_cannot_gain():
    for name in ("softmax_rows", "vector_add"):  # f32: 16 bytes is 4 elements, proven
        _, k = lowered_benchmark(name, 1024)
        assert pitch_test(k) is None and not any(isinstance(i, lir.If) for i in k.body.items)
    static = """
kernel k(X: tensor<f16>[M, 1000], Y: tensor<f16>[M, 1000]) {
  let r = ctx.block.x
  Y[r :+ 1, 0 :+ 1024] = X[r :+ 1, 0 :+ 1024] + X[r :+ 1, 0 :+ 1024]
}"""
    _, k = lowered(static)
    assert "if " not in text(k) and ops(k, "ld", space="global", type="b32", vec=4)


def test_a_reduction_fusing_its_load_is_versioned():
    src = """
kernel k(X: tensor<f16>[M, N], S: tensor<f32>[M, 1]) {
  let r = ctx.block.x
  S[r :+ 1, 0 :+ 1] = rowsum(f32(X[r :+ 1, 0 :+ 2048]))
}"""
    hk, k = lowered(src)
    (v,) = versions(k)
    assert accesses(v.then, "ld") == {(4, "b32")} and accesses(v.orelse, "ld") == {(4, "b16")}
    for n in (2000, 2004, 2048):
        rng = np.random.default_rng(n)
        x = rng.standard_normal((3, n)).astype(np.float16)
        ref, got = run_both(hk, k, (3,), {"X": x, "S": np.zeros((3, 1), np.float32)})
        assert np.allclose(ref["S"], got["S"], rtol=1e-5, atol=1e-4)
        assert np.allclose(got["S"][:, 0], x.astype(np.float64).sum(1), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("name", NORMS)
@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_versioned_norms_assemble_without_spills(name, arch):
    for block in (1024, 8192):
        _, k = lowered_benchmark(name, block)
        ptxas(k, arch)
    exe = shutil.which("ptxas")
    if exe is None:
        pytest.skip("ptxas is not installed")
    from phobos.ptx.emit import emit_module

    _, k = lowered_benchmark(name, 8192)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "k.ptx")
        with open(path, "w") as f:
            f.write(emit_module([k], arch))
        r = subprocess.run([exe, "-v", f"-arch={arch}", path, "-o", os.devnull],
                           capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "0 bytes spill stores, 0 bytes spill loads" in r.stderr, r.stderr
