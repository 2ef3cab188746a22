"""What is not lowered yet is a diagnostic at the statement, never an exception; the
driver's `lir` stage prints each kernel's text form."""

from lowerkit import checked

from phobos.diagnostics.codes import title
from phobos.driver import compile_source
from phobos.lower.kernel import lower_kernel
from phobos.source import SourceFile


def line_of(diag) -> int:
    return diag.primary.span.source.line_col(diag.primary.span.start)[0]


def test_a_product_of_an_extent_bound_at_launch_is_refused_at_its_line():
    hk = checked("""
kernel k(A: tensor<f32>[M, K], B: tensor<f32>[K, N], C: tensor<f32>[M, N]) {
  let a = A[0 :+ 16, :]
  let b = B[:, 0 :+ 16]
  var acc: tile<f32>[16, 16] = 0.0
  acc += dot(a, b)
  C[0 :+ 16, 0 :+ 16] = acc
}""")
    k, diags = lower_kernel(hk)
    assert k is None
    [d] = diags
    assert d.code == "E0500" and "extent bound at launch" in d.message
    assert line_of(d) == 6


def test_shared_memory_past_48_kb_is_refused():
    hk = checked("""
kernel k(A: tensor<f32>[M, N], B: tensor<f32>[M, N]) {
  var a = A[0 :+ 128, 0 :+ 64]
  var b = A[0 :+ 128, 0 :+ 64]
  var c: tile<f32>[128, 1] = a[0 :+ 128, 0 :+ 1]
  var d: tile<f32>[128, 1] = b[0 :+ 128, 0 :+ 1]
  B[0 :+ 128, 0 :+ 1] = c + d
}""")
    k, diags = lower_kernel(hk)
    assert k is None and diags[0].code == "E0501"


def test_dynamic_shared_memory_past_what_a_cta_can_take_is_refused_before_the_body():
    # 2 x 512 x 64 f32 tiles alive together: 256 KB, past sm_90's 227 KB opt-in. Refused
    # by `place`, so a huge tile costs no seconds of lowering before the launch refuses it.
    source = """@dynshared
kernel k(A: tensor<f32>[M, N], B: tensor<f32>[M, N]) {
  var a = A[0 :+ ROWS, 0 :+ 64]
  var b = A[0 :+ ROWS, 0 :+ 64]
  var c: tile<f32>[ROWS, 1] = a[0 :+ ROWS, 0 :+ 1]
  var d: tile<f32>[ROWS, 1] = b[0 :+ ROWS, 0 :+ 1]
  B[0 :+ ROWS, 0 :+ 1] = c + d
}"""
    k, diags = lower_kernel(checked(source.replace("ROWS", "512")), "sm_90a")
    assert k is None and [d.code for d in diags] == ["E0501"]
    assert "262144 bytes of shared memory, more than the 232448 a CTA can take" in (
        diags[0].message
    )
    k, diags = lower_kernel(checked(source.replace("ROWS", "256")), "sm_90a")
    assert k is not None and not diags  # 128 KB: under the opt-in maximum


def test_codes_have_explanations():
    for code in ("E0500", "E0501", "E0502", "E0503"):
        assert title(code)


def test_driver_emits_lir():
    src = SourceFile(
        "k.ph",
        """
kernel k(x: tensor<f32>[N]) {
  x[ctx.block.x * 1024 :+ 1024] = x[ctx.block.x * 1024 :+ 1024] * 2.0
}""",
    )
    result = compile_source(src, "lir")
    assert result.ok, [d.message for d in result.diagnostics]
    assert result.text.startswith("kernel k(%x: u64, %N: s32) threads=256")
    assert "ld.global.v4.f32" in result.text


def test_pipeline_with_nothing_to_pipeline_is_refused_at_the_attribute():
    hk = checked("""
@pipeline
kernel k(A: tensor<f32>[M, N], B: tensor<f32>[M, N]) {
  B[0 :+ 16, 0 :+ 16] = A[0 :+ 16, 0 :+ 16]
}""")
    k, diags = lower_kernel(hk)
    assert k is None
    [d] = diags
    assert d.code == "E0503" and "`@pipeline` finds nothing to pipeline" in d.message
    assert line_of(d) == 2


def test_pipeline_holds_where_a_loop_stages_ahead():
    hk = checked("""
@pipeline
kernel k(A: tensor<f32>[M, K], B: tensor<f32>[K, 16], C: tensor<f32>[M, 16]) {
  var acc: tile<f32>[16, 16] = 0.0
  for kt in range(0, K, 8) {
    var a = A[0 :+ 16, kt :+ 8]
    var b = B[kt :+ 8, 0 :+ 16]
    acc += dot(a, b)
  }
  C[0 :+ 16, 0 :+ 16] = acc
}""")
    k, diags = lower_kernel(hk)
    assert k is not None, [d.message for d in diags]
