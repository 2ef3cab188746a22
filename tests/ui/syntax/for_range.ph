// A loop runs over `range(lo, hi)` or `range(lo, hi, step)`, nothing else.
kernel k(A: tensor<f32>[N]) {
  var acc: f32 = 0.0
  for i in range(N) {            //~ ERROR `range` takes 2 or 3 arguments, found 1
    acc += A[i]
  }
  for j in 0..N {                //~ ERROR expected `range(...)`
    acc += A[j]
  }
  for k in range(0, N, 4, 1) {   //~ ERROR `range` takes 2 or 3 arguments, found 4
    acc += A[k]
  }
  for<unrol 4> i in range(0, N) { //~ ERROR expected `unroll`
    acc += A[i]
  }
  for<unroll 4> i in range(0, N) {
    acc += A[i] x                //~ ERROR expected `;` or newline, found `x`
  }
}
