// A delimiter left open is reported where its closer belongs, with the opener marked.
kernel k(A: tensor<f32>[N], B: tensor<f32>[N]) {
  let i = ctx.thread
  let x = exp(A[i]               //~ ERROR expected `,` or `)`, found keyword `let`
  let y = (x + 1.0               //~ ERROR expected `)`, found keyword `let`
  let z = A[i :+ 4               //~ ERROR expected `,` or `]`, found keyword `let`
  let w = y * 2.0
  if w > 0.0 {
    B[i] = w                     //~ ERROR this file contains an unclosed delimiter
