// `ctx` is read only through its fields.
kernel k(A: tensor<f32>[N], ctx: i32) { //~ ERROR `ctx` is reserved and cannot be bound
  let ctx = 1                    //~ ERROR `ctx` is reserved and cannot be bound
  let t = ctx                    //~ ERROR `ctx` cannot be used as a value
  ctx.thread = 0                 //~ ERROR cannot assign to a `ctx` field
  for ctx in range(0, N) {       //~ ERROR `ctx` is reserved and cannot be bound
    A[0] = 1.0
  }
  let from = ctx.lane
  A[from] = shfl<from from>(A[from])
}

fn f(ctx) = 1                    //~ ERROR `ctx` is reserved and cannot be bound
