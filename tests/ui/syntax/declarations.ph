// A `let` needs a value; a `var` needs a type or a value.
kernel k(A: tensor<f32>[N]) {
  let scale                      //~ ERROR `let scale` has no value
  let bias: f32                  //~ ERROR `let bias` has no value
  var acc                        //~ ERROR `var acc` needs a type or a value
  var t: tile<f32>[16, 16]
  var u: f32 = 1.0
  let w 2.0                      //~ ERROR expected `=`, found `2.0`
  x: f32 = 1.0                   //~ ERROR expected `;` or newline, found `:`
  A[0] = u
}
