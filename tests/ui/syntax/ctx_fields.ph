// `ctx` is read through its fields, with an axis exactly where the field has one.
kernel k(A: tensor<f32>[N]) {
  let b = ctx.bloc.x  //~ ERROR `ctx` has no field `bloc`
  let t = ctx.thread.x  //~ ERROR `ctx.thread` has no axes
  let g = ctx.block  //~ ERROR `ctx.block` is read along an axis
  let w = ctx.blocks.w  //~ ERROR `ctx.blocks` has no axis `w`
  let ok = ctx.block.x + ctx.lanes
}
