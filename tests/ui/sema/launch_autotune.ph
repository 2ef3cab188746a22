// `@launch(T)`: the CTA size searched by `@autotune` (min_blocks and max_regs too, ours),
// refused where a name is not one of its dimensions or a variant's value is out of range.

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

@autotune(T in [128, 256], MB in [1, 2], R in [64, 128])
@launch(T, MB, R)
kernel caps(x: tensor<f32>[N]) { }

@autotune(T in [128, 256])
@launch(T, M)                               //~ ERROR `M` is not an `@autotune` dimension
kernel unsearched_blocks(x: tensor<f32>[N]) { }

@autotune(R in [8, 64])
@launch(256, 1, R)                          //~ ERROR `@launch` max_regs must be from 16 to 255, but the variant `R=8` gives `R` = 8
kernel few_registers(x: tensor<f32>[N]) { }

@launch(256, 2.5)                           //~ ERROR `@launch` takes only integer literals and `@autotune` names
kernel fractional(x: tensor<f32>[N]) { }

@autotune(T in [2048, 256, 128])
@launch(T)                                  //~ ERROR `@launch` threads must be from 1 to 1024, but the variant `T=2048` gives `T` = 2048
kernel too_many(x: tensor<f32>[N]) { }
