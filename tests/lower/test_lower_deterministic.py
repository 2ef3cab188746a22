"""A kernel lowers to the same lir, and so the same PTX, whatever the process lowered
before it: the lowering's temporaries (a reduction bound out of an expression, a
staged operand) are numbered per kernel. A contract made from the PTX takes its cache
key from the PTX's hash, and `--jobs N` lowers kernels in other processes."""

from lowerkit import checked

from phobos.lower import lir
from phobos.lower.kernel import lower_kernel
from phobos.ptx import emit_module

TEMPORARIES = """kernel k(X: tensor<f32>[N, 32], W: tensor<f32>[32, 32], Y: tensor<f32>[N, 32]) {
  let r = ctx.block.x * 32
  let t = X[r :+ 32, :]
  Y[r :+ 32, :] = exp(tril(t) - rowmax(t)) + dot(X[r :+ 32, :], W)
}
"""


def _texts(kernel):
    k, diags = lower_kernel(kernel, "sm_80")
    assert k is not None, [(d.code, d.message) for d in diags]
    return lir.print_kernel(k), emit_module([k], "sm_80")


def test_a_kernel_lowers_alike_after_others():
    kernel = checked(TEMPORARIES)
    first = _texts(kernel)
    assert "tril_" in first[0] and "rowmax_" in first[0], first[0]
    for _ in range(3):
        _texts(checked(TEMPORARIES.replace("* 32", "* 64").replace(":+ 32", ":+ 64")))
    assert _texts(kernel) == first
