"""SAXPY, out = alpha * x + y, one BLOCK of elements per CTA (PYTHON.md's first kernel)."""

from __future__ import annotations

import phobos.lang as ph


@ph.kernel
@ph.autotune(BLOCK=[16, 8192])
def saxpy(x: ph.tensor[ph.f32][N], y: ph.tensor[ph.f32][N], out: ph.tensor[ph.f32][N], alpha: ph.f32):
    base: ph.let = ph.ctx.block.x * BLOCK
    out[base:+BLOCK] = alpha * x[base:+BLOCK] + y[base:+BLOCK]


if __name__ == "__main__":
    import numpy as np

    print(saxpy.source)  # the Phobos it spells

    # numpy arrays run the kernel on the CPU, in the tile interpreter; no GPU needed.
    rng = np.random.default_rng()
    n = 1000  # not a multiple of BLOCK: the last CTA's slice is masked
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    out = np.full(n, np.nan, dtype=np.float32)  # poisoned, so an unwritten element shows
    saxpy[lambda meta: (-(-meta["N"] // meta["BLOCK"]),)](x, y, out, 2.0)

    expected = 2.0 * x.astype(np.float64) + y.astype(np.float64)
    error = float(np.max(np.abs(out - expected)))
    print(f"saxpy on {n} elements: max error {error:.2e} against numpy float64")
    assert error < 1e-5, "saxpy disagrees with numpy"
