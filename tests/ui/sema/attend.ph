// `attend(q, K, V, start, stop, WM, WL, WACC)` (ours): each warp's softmax partials of
// q against its share of the keys [start, stop). q is a [QG, D] tile of its own, K and
// V f16 tensor parameters [Nk, D], WM and WL f32 tiles [QG, W], WACC [QG * W, D], with
// W = @launch threads / 32 (4 here), D % 32 == 0 and QG * D <= 2048.

@launch(128)
kernel decode(Q: tensor<f16>[H, 128], K: tensor<f16>[NK, 128], V: tensor<f16>[NK, 128],
              K32: tensor<f32>[NK, 128], K64: tensor<f16>[NK, 64], V2: tensor<f16>[NV, 128],
              n: i32) {
  let h = ctx.block.x * 4
  var q: tile<f32>[4, 128] = f32(Q[h :+ 4, :])
  var q16: tile<f16>[4, 128] = Q[h :+ 4, :]
  var qi: tile<i32>[4, 128] = 0
  var q48: tile<f32>[4, 48] = 0.0
  var qbig: tile<f32>[32, 128] = 0.0
  var kt: tile<f16>[64, 128] = K[0 :+ 64, :]
  var wm: tile<f32>[4, 4]
  var wl: tile<f32>[4, 4]
  var wacc: tile<f32>[16, 128]
  var wm8: tile<f32>[4, 8]
  var wm16: tile<f16>[4, 4]
  let qv = q[0 :+ 2, :]
  attend(q, K, V, 0, n, wm, wl, wacc)
  attend(q16, K, V, h, n + 64, wm, wl, wacc)
  attend(Q[h :+ 4, :], K, V, 0, n, wm, wl, wacc)     //~ ERROR takes `q` as a declared tile
  attend(qv, K, V, 0, n, wm, wl, wacc)               //~ ERROR takes `q` as a declared tile
  attend(qi, K, V, 0, n, wm, wl, wacc)               //~ ERROR takes `q` of `f16` or `f32`
  attend(q48, K, V, 0, n, wm, wl, wacc)              //~ ERROR with D a multiple of 32
  attend(qbig, K, V, 0, n, wm, wl, wacc)             //~ ERROR keeps QG * D = 4096 sums
  attend(q, kt, V, 0, n, wm, wl, wacc)               //~ ERROR takes `K` as a named tensor parameter
  attend(q, K32, V, 0, n, wm, wl, wacc)              //~ ERROR takes `K` of `f16`
  attend(q, K64, V, 0, n, wm, wl, wacc)              //~ ERROR with `q`'s D = 128
  attend(q, K, V2, 0, n, wm, wl, wacc)               //~ ERROR with the same rows
  attend(q, K, V, 0.5, n, wm, wl, wacc)              //~ ERROR `attend`'s `start` must be an index
  attend(q, K, V, 0, n, wm8, wl, wacc)               //~ ERROR takes `WM` of shape [QG, W] = [4, 4]
  attend(q, K, V, 0, n, wm16, wl, wacc)              //~ ERROR writes `WM` in `f32`
  attend(q, K, V, 0, n, wm, wl, wacc[0 :+ 16, :])    //~ ERROR so it takes a declared `var` tile
  attend(q, K, V, 0, n, wm, wm, wacc)                //~ ERROR but both are `wm`
  attend(q, K, V, 0, n, wm, wl, wm)                  //~ ERROR takes `WACC` of shape [QG * W, D]
  attend(q, K, V, ctx.warp, n, wm, wl, wacc)         //~ ERROR `attend` takes `ctx.warp`
  attend(q, K, V, 0, n)                              //~ ERROR `attend` takes 8 arguments
  let r = attend(q, K, V, 0, n, wm, wl, wacc)        //~ ERROR `attend` is a statement
  if ctx.thread < 64 {
    attend(q, K, V, 0, n, wm, wl, wacc)              //~ ERROR `attend` runs once per CTA
  }
}

@launch(48)
kernel ragged(K: tensor<f16>[NK, 128], V: tensor<f16>[NK, 128]) {
  var q: tile<f32>[1, 128] = 0.0
  var wm: tile<f32>[1, 1]
  var wl: tile<f32>[1, 1]
  var wacc: tile<f32>[1, 128]
  attend(q, K, V, 0, 8, wm, wl, wacc)                //~ ERROR splits its keys over whole warps
}
