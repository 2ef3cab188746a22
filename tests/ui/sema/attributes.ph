// Every attribute of SPEC.md "Attributes", refused where its arguments are wrong.

@lanuch(128)                                //~ ERROR unknown attribute `@lanuch`
@readonly                                   //~ ERROR `@readonly` is planned but not implemented yet
@pipeline
@pipeline                                   //~ ERROR `@pipeline` is given twice
kernel names(A: tensor<f32>[N]) { }

@autotune(BM in [0, 64])                    //~ ERROR `BM` cannot take the value 0
@cluster(CM in [64, 16])                    //~ ERROR the bounds of `CM` are out of order
kernel bounds(A: tensor<f32>[N]) { }

@autotune(BM in [32, 32])                   //~ ERROR the bounds of `BM` are equal
@cluster(CM in [16, 100])                   //~ ERROR `CM` doubles from 16 and never reaches 100
kernel ranges(A: tensor<f32>[N]) { }

@autotune(BM in [16, 32, 16])               //~ ERROR `BM` lists 16 twice
@cluster(CM in [16, 32], CM in [64])        //~ ERROR `CM` is named twice in `@cluster`
kernel lists(A: tensor<f32>[N]) { }

@autotune(A in [16, 32], K = 4)             //~ ERROR `@autotune` takes only search dimensions
kernel params(A: tensor<f32>[N]) { }        //~^ ERROR the search dimension `A` has the name of a kernel parameter

@autotune(BM in [16, 64])
@aligned(M = BM, Q = 16)                    //~ ERROR `Q` is not a dimension of a tensor parameter
kernel align_dims(A: tensor<f32>[M, 8]) { }

@autotune(BM in [16, 64])
@aligned(M = BN, N = 0, M = 16)             //~ ERROR `BN` is not an `@autotune` constant
kernel align_tiles(A: tensor<f32>[M, N]) { }  //~^ ERROR `N` cannot be aligned to `0`
//~^^ ERROR `M` is named twice in `@aligned`

@aligned(8)                                 //~ ERROR `@aligned` takes only `DIM = tile` arguments
kernel align_kind(A: tensor<f32>[M]) { }

@launch(2048, 0, 8)                         //~ ERROR `@launch` threads must be from 1 to 1024, found 2048
kernel launch_range(A: tensor<f32>[N]) { }  //~^ ERROR `@launch` min_blocks must be from 1 to 32, found 0
//~^^ ERROR `@launch` max_regs must be from 16 to 255, found 8

@launch(256, 1, 64, 2)                      //~ ERROR `@launch` takes at most three arguments
kernel launch_count(A: tensor<f32>[N]) { }

@launch(threads = 256)                      //~ ERROR `@launch` takes only integer literals
kernel launch_kind(A: tensor<f32>[N]) { }

@launch(1.5)                                //~ ERROR `@launch` takes only integer literals
kernel launch_float(A: tensor<f32>[N]) { }

@tensorcore(wma)                            //~ ERROR unknown tensor-core path `wma`
kernel tc(A: tensor<f32>[N]) { }

@registers(acc, acc, nope)                  //~ ERROR `acc` is named twice in `@registers`
kernel regs(A: tensor<f32>[N]) {            //~^ ERROR `@registers` names `nope`, which no `var` of the kernel declares
  var acc: tile<f32>[1, 64] = 0.0
}

@persistent(true)                           //~ ERROR `@persistent` takes no arguments
@autotune                                   //~ ERROR `@autotune` needs at least one search dimension
kernel flags(A: tensor<f32>[N]) { }
