// `@pipeline(cluster = C)` (ours): clusters of C CTAs sharing a TMA ring's tiles, C 1
// (none) or 2, or an `@autotune` dimension searching only those; beside `stages` too.

@autotune(C in [1, 2])
@pipeline(cluster = C)
kernel tuned(x: tensor<f32>[N]) { }

@pipeline(stages = 4, cluster = 2)
kernel both(x: tensor<f32>[N]) { }

@pipeline(cluster = 3)                      //~ ERROR `@pipeline` cluster must be 1 or 2, found 3
kernel three(x: tensor<f32>[N]) { }

@autotune(C in [1, 4])
@pipeline(cluster = C)                      //~ ERROR but `C` searches 4
kernel wide(x: tensor<f32>[N]) { }

@autotune(CTAS in [1, 2])
@pipeline(cluster = CTA)                    //~ ERROR `CTA` is not a cluster size
kernel misspelt(x: tensor<f32>[N]) { }

@pipeline(cluster = 2, cluster = 2)         //~ ERROR takes `stages` and `cluster`, once each
kernel twice(x: tensor<f32>[N]) { }

@pipeline(stages = 4, cluster = 2, depth = 1) //~ ERROR `@pipeline` takes at most two arguments
kernel more(x: tensor<f32>[N]) { }
