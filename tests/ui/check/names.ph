// Names and scopes: each refusal at its line.
@autotune(B in [16, 64])
kernel names(A: tensor<f32>[N], x: f32, n: i32) {
  let y = x
  y = 2.0                 //~ ERROR cannot assign twice to immutable `y`
  z = x                   //~ ERROR cannot assign to `z`: it is not declared
  let w = alpah           //~ ERROR cannot find `alpah` in this scope
  x = 1.0                 //~ ERROR cannot assign to parameter `x`
  for i in range(0, n) {
    i = 3                 //~ ERROR cannot assign to loop variable `i`
  }
  if n > 0 {
    let t = 1
  }
  let u = t               //~ ERROR cannot find `t` in this scope
  B = 3                   //~ ERROR cannot assign to `B`, an `@autotune` constant
  N = 4                   //~ ERROR cannot assign to `N`, a tensor dimension
  break                   //~ ERROR `break` outside of a loop
  continue                //~ ERROR `continue` outside of a loop
  let e = exp             //~ ERROR `exp` is a built-in, not a value
  let f = nothing(x)      //~ ERROR cannot find fn `nothing` in this scope
  let v = A[0 :+ 4]
  v[0] = 1.0
}
