// A two-phase sum over a grid barrier: partial sums per CTA, then one CTA adds them.
@persistent
@launch(64)
kernel total(X: tensor<f32>[N], Part: tensor<f32>[G], Out: tensor<f32>[1], bar: tensor<i32>[2]) {
  var acc: f32 = 0.0
  for i in range(ctx.block.x * ctx.threads + ctx.thread, N, ctx.blocks.x * ctx.threads) {
    acc += X[i]
  }
  let s = sum<over ctx.thread>(acc)
  if ctx.thread == 0 {
    Part[ctx.block.x] = s
  }
  grid_barrier(bar)
  if ctx.block.x == ctx.blocks.x - 1 {
    var t: f32 = 0.0
    for j in range(0, ctx.blocks.x) {
      t += Part[j]
    }
    if ctx.thread == 0 {
      Out[0] = t
    }
  }
}
