// Per-thread values: the three rules, each at its line.
fn add(a, b) = a + b
kernel once_per_cta(A: tensor<f32>[N], F: tensor<i32>[4], n: i32) {
  if ctx.thread < 4 {
    barrier()                             //~ ERROR `barrier` runs once per CTA, so every thread must reach it
  }
  var t: tile<f32>[4, 4] = 0.0
  if ctx.lane == 0 {
    t = t * 2.0                           //~ ERROR runs once per CTA, so every thread must reach it
  }
  for i in range(0, n) {
    if ctx.thread < 3 {
      break
    }
    barrier()                             //~ ERROR `barrier` runs once per CTA, so every thread must reach it
  }
  let v = A[ctx.thread]
  if ctx.lane < 4 {
    let s = sum<over ctx.lane>(v)         //~ ERROR `sum` needs every lane of its warp to reach it
  }
  if ctx.warp == 0 {
    let s = sum<over ctx.lane>(v)
    let c = sum<over ctx.thread>(v)       //~ ERROR `sum` runs once per CTA, so every thread must reach it
  }
  if ctx.lane == 0 {
    return
  }
  barrier()                               //~ ERROR `barrier` runs once per CTA, so every thread must reach it
}
kernel differs(A: tensor<f32>[N], F: tensor<i32>[4], n: i32) {
  var i = 0
  if ctx.thread < 4 {
    i = 1
  }
  var t = A[i :+ 4]                       //~ ERROR takes `i`, which differs between lanes
  var j = 0
  for k in range(0, n) {
    var u = A[j :+ 4]                     //~ ERROR takes `j`, which differs between lanes
    j = ctx.lane
  }
  let old = atomic_add(F, ctx.lane, 1)    //~ ERROR `atomic_add` takes `ctx.lane`, which differs between lanes
}
kernel stale(A: tensor<f32>[N], n: i32) {
  var t: tile<f32>[1, 256]
  t[0, ctx.thread] = 1.0
  var s = rowsum(t)                       //~ ERROR `rowsum` reads `t` after a per-thread store to it with no `barrier()` between
  barrier()
  var s2 = rowsum(t)
  var w: tile<f32>[1, 256] = 0.0
  for i in range(0, n) {
    var r = rowsum(w)                     //~ ERROR `rowsum` reads `w` after a per-thread store to it with no `barrier()` between
    w[0, ctx.thread] = 1.0
  }
}
