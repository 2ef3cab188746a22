// Several independent errors: each is reported, and parsing goes on after it.
@autotune(T in [32, 128])
kernel first(A: tensor<f32>[N], B: tensor<f32>[N]) {
  let i = ctx.block.x * T
  let x = A[i :+ T] *            //~ ERROR expected expression, found keyword `let`
  let y = A[i :+ T] + )          //~ ERROR expected expression, found `)`
  B[i :+ T] = x + y
  for j in range(0, T) {
    let z = (j + )               //~ ERROR expected expression, found `)`
    B[j] = B[j] @ 2.0            //~ ERROR expected `;` or newline, found `@`
  }
}

kernel second(A: tensor<f32>[N]) {
  var s: f32 = 0.0
  s = sum<over ctx.lane, widht 8>(s) //~ ERROR expected a configuration word, found `widht`
  s = A.shape                    //~ ERROR unexpected `.` after an expression
  if s > 0.0 {
    A[0] = s
  }
}

fn h(a, b) = a b                 //~ ERROR expected `;` or newline, found `b`
