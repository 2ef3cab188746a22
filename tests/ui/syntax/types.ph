// Types: a scalar, `tensor<T>[dims]` or `tile<T>[dims]`; a dimension is a name or an integer.
kernel a(A: tensr<f32>[N]) { }           //~ ERROR unknown type `tensr`
kernel b(A: tensor[N]) { }               //~ ERROR expected `<` after `tensor`
kernel c(A: tensor<float>[N]) { }        //~ ERROR unknown type `float`
kernel d(A: tensor<f32>[N, 2 * M]) { }   //~ ERROR expected a literal, found an expression
kernel e(A: tensor<f32>[]) { }           //~ ERROR a tensor needs at least one dimension
kernel f(A: f32, n) { }                  //~ ERROR expected `:`, found `)`
kernel g(A: tensor<f32>[N]) {
  var t: tile<f32> = 0.0                 //~ ERROR expected `[` and the dimensions of the tile
}
