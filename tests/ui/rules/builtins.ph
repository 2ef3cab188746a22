// Built-ins (SPEC.md "Built-ins", "Collectives and shuffles"): wrong arguments, each
// refused at its line. The runs (`elem`, `word`, `store`) are left to tests/ui/check.
fn one(a) = a
kernel builtins(A: tensor<f32>[N, 64], B: tensor<u8>[N, 64], C: tensor<i8>[N, 64],
                D: tensor<f64>[N, 64], F: tensor<i32>[4], x: f32, n: i32) {
  let a1 = abs(u8(1))                         //~ ERROR there is no conversion to `u8`
  let a2 = exp(true)                          //~ ERROR `exp` takes a number, not `bool`
  var t: tile<f32>[4, 64] = A[0 :+ 4, :]
  var q: tile<i32>[4, 64] = 0
  var e: tile<f32>[4, 64] = exp(q)            //~ ERROR `exp` takes a float tile, not `tile<i32>[4, 64]`
  t = where(x, t, 0.0)                        //~ ERROR `where` takes a condition, not `f32`
  t = where(t > 0.0, t, true)                 //~ ERROR `where` takes two values of one type, not `f32` and `bool`
  var idx: tile<i32>[4, 64] = iota(2)         //~ ERROR `iota` takes a literal axis below the tile's rank 2
  let s1 = argsel(x, n, 1, 2)                 //~ ERROR `argsel` takes `va` and `vb` of one float type
  let s2 = argsel(x, x, n, 2.0)               //~ ERROR `argsel` takes `ia` and `ib` of one type
  var r: tile<f32>[4, 1] = rowmax(B[0 :+ 4, :]) //~ ERROR `rowmax` takes a float or signed integer tile, not `u8`
  var k: tile<f32>[4, 64] = tril(i32(t))      //~ ERROR `tril` takes a float tile, not `i32`
  var f = flat(A[0 :+ 4, :])                  //~ ERROR `flat` takes a declared tile, not a slice or an expression
  var gt: tile<f32>[4, 64] = gather(t, q)     //~ ERROR `gather` takes a table of shape [n] or [1, n]
  var g2: tile<f32>[1, 64] = gather(A[0 :+ 1, :], t) //~ ERROR `gather` takes a tile of integer indices
  var d1: tile<f32>[4, 4] = dot_t(t, q)       //~ ERROR `dot_t` takes operands of one element type, not `f32` and `i32`
  var ci: tile<i8>[4, 64] = C[0 :+ 4, :]
  var d2: tile<i32>[4, 4] = dot(ci, transpose(ci)) //~ ERROR `dot` of `i8` operands is `dot_t`
  var dd: tile<f64>[4, 64] = D[0 :+ 4, :]
  var d3: tile<f64>[4, 4] = dot_t(dd, dd)     //~ ERROR `dot_t` takes `f32`, `f16` or `i8` operands, not `f64`
  var d4: tile<f32>[4, 4] = dot(t, x)         //~ ERROR `dot` takes rank-2 tiles, not `f32`
  let at = atomic_add(F, 0, t)                //~ ERROR `atomic_add` takes scalars after the tensor
  let ac = atomic_cas(F, 0, 1.5, 2)           //~ ERROR `atomic_cas` takes an integer, not `f32`
  let gb = grid_barrier(A)                    //~ ERROR `grid_barrier` takes a tensor of `i32`, not `tensor<f32>[N, 64]`
  let p = popcount(x)                         //~ ERROR `popcount` takes integers, not `f32`
  let r1 = any(x > 0.0)                       //~ ERROR `any` needs a group: `any<over ctx.lane>(...)`
  let r2 = sum<over ctx.lane>(t)              //~ ERROR `sum` folds one scalar per thread, not a tile
  let r3 = all<over ctx.lane>(x)              //~ ERROR `all` folds a condition, not `f32`
  let r4 = sum<over ctx.lane>(true)           //~ ERROR `sum` folds numbers, not `bool`
  let r5 = reduce<over ctx.lane>(x, one)      //~ ERROR `reduce` takes a fn `f(a, b) = e` of two parameters
  let r6 = sum<over ctx.thread, width 8>(x)   //~ ERROR `sum<over ctx.thread>` takes no `width`
  let r7 = sum<over ctx.lane, up 1>(x)        //~ ERROR `sum` takes no `up`
  let r8 = shfl<xor 1, over ctx.lane>(x)      //~ ERROR `shfl` takes no `over`
  let r9 = shfl<xor 1>(t)                     //~ ERROR `shfl` moves a scalar, not a tile
  let r10 = shfl<xor 1, width 3>(x)           //~ ERROR a `width` is a constant power of two dividing 32
}
