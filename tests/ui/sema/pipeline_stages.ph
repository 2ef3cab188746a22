// `@pipeline(stages = S)` (ours): the rings' depth, a number from 2 to 8 or an
// `@autotune` dimension searching only such numbers.

@autotune(S in [3, 4, 5])
@pipeline(stages = S)
kernel tuned(x: tensor<f32>[N]) { }

@pipeline(stages = 4)
kernel fixed(x: tensor<f32>[N]) { }

@pipeline(stages = 9)                       //~ ERROR `@pipeline` stages must be from 2 to 8, found 9
kernel deep(x: tensor<f32>[N]) { }

@autotune(S in [1, 4])
@pipeline(stages = S)                       //~ ERROR but `S` searches 1
kernel shallow(x: tensor<f32>[N]) { }

@autotune(STAGES in [3, 4, 5])
@pipeline(stages = STAGE)                   //~ ERROR `STAGE` is not a number of stages
kernel misspelt(x: tensor<f32>[N]) { }

@pipeline(depth = 3)                        //~ ERROR `@pipeline` takes only `stages`
kernel other(x: tensor<f32>[N]) { }

@pipeline(3)                                //~ ERROR `@pipeline` takes only `stages`
kernel positional(x: tensor<f32>[N]) { }

@pipeline(stages = 2.5)                     //~ ERROR `2.5` is not a number of stages
kernel fraction(x: tensor<f32>[N]) { }
