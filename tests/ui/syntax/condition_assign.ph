// `=` assigns; a condition compares with `==`.
kernel k(A: tensor<i32>[N]) {
  let i = ctx.thread
  if A[i] = 0 {                  //~ ERROR `=` in a condition
    A[i] = 1
  }
  var n = 0
  while n = 4 {                  //~ ERROR `=` in a condition
    n += 1
  }
}
