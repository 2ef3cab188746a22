// Declarations: each kernel, fn and parameter once, extents apart from parameters,
// names the PTX can carry, extents of at least one element.
kernel k(x: tensor<f32>[N], x: f32) { }   //~ ERROR the parameter `x` is declared twice
kernel shape(n: i32, A: tensor<f32>[n]) { } //~ ERROR the extent `n` is named like the parameter `n`
kernel k() { }                          //~ ERROR the kernel `k` is defined twice
fn twice(a) = a + a
fn twice(a) = a                         //~ ERROR the fn `twice` is defined twice
kernel _(a: f32) { }                    //~ ERROR the kernel name `_` is not a PTX identifier
kernel unused(_: f32, A: tensor<f32>[_N]) { A[0] = _ }
kernel empty(a: f32) {
  var t: tile<f32>[4, 0] = 0.0          //~ ERROR a tile or tensor extent must be at least 1, not `0`
  t[0, 0] = a
}
kernel none(A: tensor<f32>[0]) { }      //~ ERROR a tile or tensor extent must be at least 1, not `0`
kernel flags(A: tensor<bool>[N]) { }    //~ ERROR a tensor of `bool` is not supported
@launch(32, 4294967296)                 //~ ERROR `@launch` min_blocks must be from 1 to 32
kernel busy() { }
kernel folds(A: tensor<i32>[N]) {
  var t: tile<i32>[4] = A[0 :+ 4]
  A[0 :+ 4] = max(min(t, 3), tmax(t, A[4 :+ 4]))
}
kernel lanes(x: f32) {
  let y = shfl<xor 1, width 0.5>(x)     //~ ERROR a `width` is a constant power of two dividing 32
  let z = sum<over ctx.lane, width true>(x) //~ ERROR a `width` is a constant power of two dividing 32
}
