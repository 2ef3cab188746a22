// Line numbers of two digits widen the gutter of the whole diagnostic, and the
// lines between an unclosed delimiter and the error are elided with `...`.
kernel k(A: tensor<f32>[N]) {
  let i = ctx.thread
  let a = A[i]
  let b = a + 1.0
  let c = b * 2.0
  let d = c - 3.0
  let e = d / 4.0
  if e > 0.0 {
    A[i] = e                     //~ ERROR this file contains an unclosed delimiter
