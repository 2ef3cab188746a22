// @registers: the tiles it keeps, their sizes, and where they may be updated.
@registers(acc, b, c, e)
@launch(128)
kernel registers(A: tensor<f32>[1, N], n: i32) {
  var acc: tile<f32>[64, 256] = 0.0         //~ ERROR `acc` keeps 128 elements per thread in registers, more than 64
  var b: tile<f32>[1, 96] = 0.0             //~ ERROR the CTA's 128 threads do not divide the 96 elements of `b`
  var c = A[0, 0 :+ 128]                    //~ ERROR `c` is declared without a tile type
  var e: tile<f32>[1, 128] = 0.0
  for i in range(0, n) {
    e += 1.0
  }
  if n > 0 {
    e += 1.0                                //~ ERROR `e` is kept in registers, so it cannot be updated inside an `if` or `while`
  }
  while n > 3 {
    e[0, 0 :+ 4] = 2.0                      //~ ERROR `e` is kept in registers
  }
}
