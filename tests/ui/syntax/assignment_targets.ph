// Only a name or an indexed name can be assigned.
kernel k(A: tensor<f32>[N, N]) {
  let i = ctx.thread
  exp(A[i, 0]) = 1.0             //~ ERROR invalid left-hand side of assignment
  A[i][0] = 1.0                  //~ ERROR invalid left-hand side of assignment
  i + 1 += 2                     //~ ERROR invalid left-hand side of assignment
  A[i, 0] <<= 1
}
