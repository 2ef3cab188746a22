// `@launch(T)`: the CTA size searched by `@autotune`, refused where the name is not
// one of its dimensions or a variant's value is no CTA size.

@autotune(BLOCK in [1024, 4096], T in [256, 128, 512])
@launch(T)
kernel tuned(x: tensor<f32>[N], y: tensor<f32>[N]) {
  let base = ctx.block.x * BLOCK
  y[base :+ BLOCK] = x[base :+ BLOCK] * f32(ctx.warps)
}

@autotune(BLOCK in [1024, 4096])
@launch(T)                                  //~ ERROR `T` is not an `@autotune` dimension
kernel unsearched(x: tensor<f32>[N]) { }

@autotune(THREADS in [128, 256])
@launch(THREAD)                             //~ ERROR `THREAD` is not an `@autotune` dimension
kernel misspelt(x: tensor<f32>[N]) { }

@cluster(C in [1, 2])
@launch(C)                                  //~ ERROR `C` is not an `@autotune` dimension
kernel clustered(x: tensor<f32>[N]) { }

@autotune(T in [128, 256], R in [32, 64])
@launch(T, 2, R)                            //~ ERROR `@launch` takes only integer literals
kernel caps(x: tensor<f32>[N]) { }

@autotune(T in [2048, 256, 128])
@launch(T)                                  //~ ERROR `@launch` threads must be from 1 to 1024, but the variant `T=2048` gives `T` = 2048
kernel too_many(x: tensor<f32>[N]) { }
