"""Helpers for the lowering's tests: check and lower `.ph` source, run it both ways."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

import numpy as np

from phobos.lower import lir
from phobos.lower.kernel import lower_kernel
from phobos.lower.lirparse import parse_kernel
from phobos.lower.verify import verify
from phobos.sema.check import check_kernel
from phobos.source import SourceFile
from phobos.syntax.parser import parse

DTYPES = {"f32": np.float32, "f16": np.float16, "f64": np.float64, "i32": np.int32,
          "i64": np.int64, "u32": np.uint32, "u8": np.uint8, "i8": np.int8}  # fmt: skip


def checked(source: str, name: str = "k", variant=None, index_width=32):
    program, diags = parse(SourceFile("k.ph", source))
    assert not diags, [d.message for d in diags]
    kernel, diags = check_kernel(program, name, variant, index_width)
    assert kernel is not None, [d.message for d in diags]
    return kernel


def lowered(source: str, name: str = "k", variant=None, index_width=32, chip="sm_90"):
    """(hir kernel, lir kernel) for `chip`: verified, and its text parses back to it."""
    hk = checked(source, name, variant, index_width)
    k, diags = lower_kernel(hk, chip)
    assert k is not None, [(d.code, d.message) for d in diags]
    verify(k)
    assert parse_kernel(lir.print_kernel(k)) == k
    return hk, k


def python_kernel(source: str, folder, name: str):
    """The kernel `k` of `.ph` source, through its Python spelling (`ph2py`'s printer),
    written to `folder/name.py` and imported: the card's tests run the CPU tests' own
    kernels this way."""
    import importlib.util
    from pathlib import Path

    from phobos.syntax.pyprinter import print_python

    program, diags = parse(SourceFile("k.ph", source))
    assert not diags, [d.message for d in diags]
    path = Path(folder) / f"{name}.py"
    path.write_text(print_python(program))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.k


def text(k) -> str:
    return lir.print_kernel(k)


def insts(block):
    """Every instruction of a lir block, nested ones included."""
    for item in block.items:
        if isinstance(item, lir.Inst):
            yield item
        for sub in ("then", "orelse", "body"):
            inner = getattr(item, sub, None)
            if isinstance(inner, lir.Block):
                yield from insts(inner)


def ops(k, op, **attrs):
    return [
        i for i in insts(k.body) if i.op == op and all(i.attr(a) == v for a, v in attrs.items())
    ]


def run_both(hk, k, grid, arrays: dict, scalars: dict | None = None, dims: dict | None = None,
             dynamic_smem: int = 0, races_ok: bool = False):  # fmt: skip
    """Run the hir kernel on the tile interpreter and the lir kernel on the threads
    interpreter with copies of the same inputs; returns (tiles' arrays, threads' arrays).
    `dynamic_smem` is the threads interpreter's dynamic shared window (`@dynshared`).
    A shared-memory race in the threads' run fails the call (`RaceFound`) unless
    `races_ok`."""
    from phobos.interp.threads import GlobalMemory, run_lir
    from phobos.interp.tiles import run_kernel

    scalars = scalars or {}
    ref = {n: a.copy() for n, a in arrays.items()}
    run_kernel(hk, grid, {**ref, **scalars}, dict(dims or {}))
    mem = GlobalMemory()
    params = {}
    addrs = {}
    for n, a in arrays.items():
        addrs[n] = params[n] = mem.place(a.copy(), n)
    for n, v in scalars.items():
        params[n] = v
    shapes = {}
    for p in hk.params:
        if n_dims := getattr(p.type, "dims", None):
            for d, size in zip(n_dims, arrays[p.name].shape, strict=True):
                if not isinstance(d, int):
                    shapes[d.name] = size
    shapes.update(dims or {})
    for name in hk.dyn_dims:
        params[name] = shapes[name]
    result = run_lir(k, grid, params, mem, check_races=True, dynamic_smem=dynamic_smem)
    if not races_ok and not result.race_free:
        raise RaceFound(result.format_races())
    got = {n: mem.read(addrs[n]) for n in arrays}
    return ref, got


class RaceFound(AssertionError):
    """The threads interpreter saw a shared-memory race."""


def ptxas_clean(k, arch="sm_90a"):
    """Assemble the kernel's PTX with `ptxas -v` and hold its report: no warning (C7510,
    C7511, C7515: serialised wgmma), no spill, no stack frame."""
    report = ptxas(k, arch, verbose=True)
    assert "warning" not in report.lower(), report
    assert "0 bytes spill stores" in report and "0 bytes stack frame" in report, report


def ptxas(k, arch="sm_90", verbose=False):
    """Assemble the kernel's PTX with ptxas (skipped where ptxas is absent, not under CI);
    with `verbose`, its `-v` report."""
    import pytest

    from phobos.ptx.emit import emit_module

    exe = shutil.which("ptxas")
    if exe is None:
        if os.environ.get("CI"):
            raise AssertionError("ptxas is missing under CI")
        pytest.skip("ptxas is not installed")
    ptx = emit_module([k], arch)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "k.ptx")
        with open(path, "w") as f:
            f.write(ptx)
        flags = ["-v"] if verbose else []
        r = subprocess.run([exe, f"-arch={arch}", *flags, path, "-o", os.devnull],
                           capture_output=True, text=True)  # fmt: skip
        assert r.returncode == 0, r.stderr + "\n" + ptx
    return r.stderr
