// Types, shapes, literals and loops (SPEC.md "Types", "Statements", "Subscripts"): the
// refusals tests/ui/check does not show, each at its line.
@launch(48)
kernel types(A: tensor<f32>[N], B: tensor<f32>[N, 4], x: f32, n: i32) {
  var t: tile<f32>[4, R] = 0.0        //~ ERROR a tile's dimension `R` must be a literal or an `@autotune` constant
  var u: tile<f32>[1, 4] = A[0 :+ 0]  //~ ERROR a slice length must be positive, not `0`
  var w: tile<f32>[1, 4] = A[8 : 4]   //~ ERROR a slice's extent must be positive, not `-4`
  let k: i32 = 1.5                    //~ ERROR expected `i32`, found a float literal
  let b: i8 = 300                     //~ ERROR literal `300` does not fit in `i8`
  var h: tile<f16>[1, 4] = 0.0
  h = B[0 :+ 1, :]                    //~ ERROR expected `f16`, found `f32`
  for i in range(0, n, 0) {           //~ ERROR a loop's step must be positive, not `0`
  }
  for i in range(0.5, n) {            //~ ERROR a loop bound must be an index, found `f32`
  }
  let g = ctx.warps                   //~ ERROR `ctx.warps` needs whole warps, but the CTA has 48 threads
  let v: f32 = true                   //~ ERROR expected `f32`, found `bool`
  let m = i8(3) + 200                 //~ ERROR literal `200` does not fit in `i8`
  var s: tile<f32>[1, 4] = 0.0
  s = where(!(s > 0.0), 1.0, s)       //~ ERROR `!` takes a scalar `bool`, not a tile
}
