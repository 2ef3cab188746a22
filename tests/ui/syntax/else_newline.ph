// `else` follows the `}` of its `if` on the same line.
kernel k(A: tensor<f32>[N]) {
  let i = ctx.thread
  if i < N {
    A[i] = 1.0
  }
  else {                         //~ ERROR `else` must be on the same line
    A[i] = 0.0
  }
  if i == 0 {
    A[i] = 2.0
  } else if i == 1 {
    A[i] = 3.0
  }
  else if i == 2 {               //~ ERROR `else` must be on the same line
    A[i] = 4.0
  }
  A[i] = A[i] * 2.0
  else {                         //~ ERROR `else` without an `if`
    A[i] = 5.0
  }
}
