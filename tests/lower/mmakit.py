"""Helpers of the tensor-core tests: f16 and bf16 inputs for the two interpreters (which
hold bf16 differently), a run of both, and their agreement."""

import numpy as np

rng = np.random.default_rng(23)


def inputs(elem: str, shape):
    """(the tile interpreter's array, the threads interpreter's) of random `elem` values:
    bf16 is float32 rounded to bf16 for the one, its upper halves' bits for the other."""
    x = rng.standard_normal(shape).astype(np.float32)
    if elem == "f16":
        h = x.astype(np.float16)
        return h, h
    word = x.view(np.uint32).astype(np.uint64)
    bits = ((word + 0x7FFF + ((word >> 16) & 1)) >> 16).astype(np.uint16)
    return (bits.astype(np.uint32) << 16).view(np.float32), bits


def run(hk, k, grid, arrays: dict, scalars=None):
    """`lowerkit.run_both` where the two interpreters hold bf16 differently: the tile
    interpreter's arrays, then the threads', by name (both given for a bf16 tensor)."""
    from phobos.interp.threads import GlobalMemory, run_lir
    from phobos.interp.tiles import run_kernel

    scalars = scalars or {}
    ref = {n: a.copy() for n, (a, _) in arrays.items()}
    run_kernel(hk, grid, {**ref, **scalars}, {})
    mem = GlobalMemory()
    addrs = {n: mem.place(b.copy(), n) for n, (_, b) in arrays.items()}
    params = {**addrs, **scalars}
    for p in (p for p in hk.params if p.name in arrays):
        for d, size in zip(p.type.dims, arrays[p.name][1].shape, strict=True):
            if not isinstance(d, int):
                params[d.name] = size
    dynamic = k.smem if k.dynamic_smem else 0  # `@dynshared`: the whole window at launch
    result = run_lir(k, grid, params, mem, check_races=True, dynamic_smem=dynamic)
    assert result.race_free, result.format_races()
    return ref, {n: mem.read(a) for n, a in addrs.items()}


def agree(got, want, rtol=1e-5, atol=1e-5, outputs=("C",)):
    for name in outputs:
        assert not np.isnan(got[name]).any(), f"`{name}` has elements never written"
        np.testing.assert_allclose(got[name], want[name], rtol=rtol, atol=atol, err_msg=name)


def nan(*shape):
    a = np.full(shape, np.nan, np.float32)
    return a, a
