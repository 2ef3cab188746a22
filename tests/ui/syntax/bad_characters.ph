// Characters and numbers the lexer refuses; lexing goes on after each.
kernel k(A: tensor<f32>[N], B: tensor<f16>[N]) {
  let i = ctx.thread
  let x = A[i] $ 2.0             //~ ERROR unexpected character `$`
  let h = 1.5f                   //~ ERROR invalid suffix `f`
  let m = 0x1f                   //~ ERROR invalid suffix `x1f`
  let big = 1.0e                 //~ ERROR expected at least one digit in exponent
  let half = .5                  //~ ERROR need a digit before the `.`
  B[i] = f16(x * half + big)
}
