// The quantized built-ins: operand types and shapes, tables, the CTA size; each at its line.
@launch(128)
kernel quantized(A: tensor<i8>[M, K], G: tensor<i8>[1, 512], GF: tensor<f32>[1, 512]) {
  var a: tile<i8>[128, 512] = A[0 :+ 128, 0 :+ 512]
  var sa: tile<f32>[128, 16] = 0.0
  var sa8: tile<f32>[128, 8] = 0.0
  var w: tile<i8>[64, 512] = 0
  var sw: tile<f32>[64, 16] = 0.0
  var swt: tile<f32>[16, 64] = 0.0
  var qb: tile<i8>[64, 148] = 0
  var d: tile<f16>[64, 2] = 0.0
  var ok1 = qdot_t(a, sa, w, sw)
  var ok2 = qmma_t(a, sa, w, swt)
  var q1 = qdot_t(a, sa8, w, sw)            //~ ERROR `qdot_t` takes `a_scales` of shape [M, K/32], here [128, 16]
  var q2 = qmma_t(a, sa, w, sw)             //~ ERROR `qmma_t` takes `w_scales` of shape [K/32, N], here [16, 64]
  var q3 = qdot_t(a, sa, sw, sw)            //~ ERROR `qdot_t` takes `w` of `i8`
  var q4 = qdot_t(a[:, 0 :+ 48], sa, w, sw) //~ ERROR contracts K = 48, which is not a multiple of 32
  var q5 = qmma_t(a[0 :+ 12, :], sa[0 :+ 12, :], w, swt) //~ ERROR so M is a multiple of 8, not 12
  var q6 = q50_qdot_t(a, sa, w, sw)         //~ ERROR takes `w` of shape [N, K/32*20], here [64, 320]
  var q7 = iq2xs_qgemm_t(a, sa, qb, d, G)   //~ ERROR `iq2xs_qgemm_t` takes 6 arguments but 5 were given
  var q8 = iq2xs_qgemm_t(a, sa, qb, d, G, GF) //~ ERROR takes its table `masks` as a [1, n] `i8` tensor
  var q9 = iq2xs_qgemm_t(a, sa, qb, d, G, G) //~ ERROR `iq2xs_qgemm_t` needs `@launch(256)`, but the CTA has 128 threads
}
