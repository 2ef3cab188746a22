// A `[64]` operand meets a `[1, 64]` tile: Phobos adds no axes, and says what to declare.
kernel ranks(b: tensor<f32>[64], out: tensor<f32>[4, 64]) {
  var t: tile<f32>[1, 64] = out[0 :+ 1, 0 :+ 64]
  t = t + b[0 :+ 64]            //~ ERROR shapes [1, 64] and [64] do not broadcast
  var u: tile<f32>[64] = b[0 :+ 64]
  t += u                        //~ ERROR shapes [1, 64] and [64] do not broadcast
  var s: tile<f32>[1, 64] = b[0 :+ 64]  //~ ERROR a value of shape [64] does not fit [1, 64]
  var v: tile<f32>[2, 64] = out[0 :+ 2, 0 :+ 64]
  v = v + out[0 :+ 4, 0 :+ 64]  //~ ERROR shapes [2, 64] and [4, 64] do not broadcast
}
