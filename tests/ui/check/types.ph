// Types and shapes: each refusal at its line.
@autotune(R in [4, 8])
kernel types(A: tensor<f32>[M, 64], B: tensor<u8>[M, 64], I: tensor<i8>[M, 64], x: f32, n: i32, b: bool) {
  let a1 = x & 3                          //~ ERROR no bitwise `&` on `f32`
  let a2 = b && n                         //~ ERROR mismatched types `bool` and `i32`
  let a3 = !n                             //~ ERROR `!` takes a `bool`
  var a4 = B[0 :+ 4, :] + 1               //~ ERROR no arithmetic on `u8`
  let a5 = f32(b)                         //~ ERROR there is no conversion from `bool`
  let a6 = u8(x)                          //~ ERROR there is no conversion to `u8`
  var t: tile<f32>[R, 64] = A[0 :+ R, :]
  var t8: tile<f32>[8, 64] = t            //~ ERROR a value of shape [4, 64] does not fit [8, 64]
  var t32: tile<f32>[R, 32] = 0.0
  var a7 = t + t32                        //~ ERROR shapes [4, 64] and [4, 32] do not broadcast
  let a8 = A[0 : n, 0]                    //~ ERROR the extent of a slice `s:e` must be a constant
  let a9 = A[0 :+ n, 0]                   //~ ERROR the length after `:+` must be a constant
  let a10 = A[x, 0]                       //~ ERROR a subscript must be an index
  let a11 = A[0]                          //~ ERROR `A` has 2 dimensions but 1 subscript was given
  let a12 = x[0]                          //~ ERROR cannot index a scalar `f32`
  let a13: tensor<f32>[4] = x             //~ ERROR a tensor is a kernel parameter only
  var a14: f32                            //~ ERROR `var a14` needs a value
  let a15 = iota(0)                       //~ ERROR `iota` is only allowed inside the value of a tile assignment
  let a16 = where(t > 0.0, t, 0.0)        //~ ERROR `where` of tiles is only allowed as the value of a tile assignment
  var a17 = t > 0.0                       //~ ERROR `>` of tiles is only allowed inside `where`
  var a18 = dot(t, t)                     //~ ERROR the contracted extents `64` and `4` differ
  var i8t = I[0 :+ R, :]
  var a19 = qdot_t(i8t, i8t, i8t, i8t)    //~ ERROR `qdot_t` takes `a_scales` of `f32`
  let a20 = sum<over ctx.lane, width 6>(x) //~ ERROR a `width` is a constant power of two dividing 32
  let a21 = sum<over ctx.block.x>(x)      //~ ERROR `sum` folds over `ctx.lane` or `ctx.thread`
  let a22 = shfl<width 8>(x)              //~ ERROR `shfl` takes one of `xor`, `from`, `down` or `up`
  let a23 = exp(x, x)                     //~ ERROR `exp` takes 1 argument but 2 were given
  let a24 = rowsum(x)                     //~ ERROR `rowsum` takes a rank-2 tile, not `f32`
  let a25: i32 = x                        //~ ERROR expected `i32`, found `f32`
  if n {                                  //~ ERROR a condition must be a `bool`, found `i32`
  }
  let a26 = 4294967296                    //~ ERROR integer literal `4294967296` is too large for a 32-bit index
  let a27 = 1.0e39                        //~ ERROR float literal `1.0e39` is out of range for `f32`
  let a28 = 10 / 0                        //~ ERROR attempt to divide `10` by zero
  for<unroll n> i in range(0, 8) {        //~ ERROR `unroll` takes a positive constant
  }
  let a29 = cumsum(I[0 :+ R, :])          //~ ERROR `cumsum` takes a float tile, not `i8`
  let a30 = atomic_add(I, 0, 1)           //~ ERROR `atomic_add` takes a tensor of `i32` or `f32`
}
