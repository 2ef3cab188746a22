"""`@padstage`: a shared staging tile (`var t = <tensor slice>`) whose rows are a
multiple of 128 bytes gets 16 bytes more a row (128 f32 -> a pitch of 132 elements);
other tiles, and kernels without the attribute, keep the pitch of their extent."""

import numpy as np
import pytest
from lowerkit import lowered, ptxas, run_both, text

rng = np.random.default_rng(7)

# Each thread reads its elements of the staged rows reversed: point reads keep `t` in
# shared memory, at another thread's bytes than the sweep that wrote them.
STAGE = """
{attr}
kernel k(X: tensor<{elem}>[M, {C}], Y: tensor<{elem}>[M, {C}]) {{
  let r = ctx.block.x * 8
  var t: tile<{elem}>[8, {C}] = X[r :+ 8, 0 :+ {C}]
  barrier()
  for q in range(0, 8 * {C} / ctx.threads) {{
    let e = q * ctx.threads + ctx.thread
    let row = e / {C}
    let col = e % {C}
    let v = t[7 - row, {C} - 1 - col]
    if r + row < M {{ Y[r + row, col] = v }}
  }}
}}
"""


def source(attr="@padstage", elem="f32", c=128):
    return STAGE.format(attr=attr, elem=elem, C=c)


def tile_buffer(k):
    (buf,) = [b for b in k.shared if b.name.startswith("tile_t")]
    return buf


@pytest.mark.parametrize(("elem", "c", "pitch"), [("f32", 128, 132), ("f16", 64, 72),
                                                  ("f32", 64, 68), ("f16", 96, 96)])  # fmt: skip
def test_padded_pitch_only_for_rows_a_multiple_of_128_bytes(elem, c, pitch):
    _, k = lowered(source(elem=elem, c=c))
    size = 8 * pitch * (4 if elem == "f32" else 2)
    assert tile_buffer(k).size == size


@pytest.mark.parametrize("m", [16, 13])
def test_padded_tile_agrees_with_the_tile_interpreter(m):
    hk, k = lowered(source())
    x = rng.standard_normal((m, 128)).astype(np.float32)
    ref, got = run_both(hk, k, ((m + 7) // 8,), {"X": x, "Y": np.zeros_like(x)})
    np.testing.assert_array_equal(got["Y"], ref["Y"])
    np.testing.assert_array_equal(got["Y"][:8], x[:8][::-1, ::-1])


def test_padded_rows_start_at_the_pitch():
    _, k = lowered(source())
    t = text(k)
    assert t.count(", 132:s32") == 2  # the row index times the pitch: the sweep, the read
    _, plain = lowered(source(attr=""))
    assert ", 132:s32" not in text(plain)


def test_without_padstage_the_kernel_is_unchanged():
    _, plain = lowered(source(attr=""))
    assert tile_buffer(plain).size == 8 * 128 * 4
    _, padded = lowered(source())
    assert text(plain) != text(padded)
    _, other = lowered(source(attr="@padstage", elem="f16", c=96))
    _, other_plain = lowered(source(attr="", elem="f16", c=96))
    assert text(other) == text(other_plain)  # 192-byte rows: not padded


@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_padded_kernel_assembles(arch):
    _, k = lowered(source())
    ptxas(k, arch)
