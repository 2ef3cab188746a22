// Top-level items and their attributes.
let n = 4                                //~ ERROR expected `kernel` or `fn`, found keyword `let`

@launch(128 + 128)                       //~ ERROR expected a literal, found an expression
@autotune(BM in [], BN in [32, x])       //~ ERROR lists no values
kernel k(A: tensor<f32>[BM, BN]) { }

@launch(256)                             //~ ERROR attributes apply only to kernels
fn twice(a) = a + a

fn g(a, b) {
  a = b
}
}                                        //~ ERROR expected `kernel` or `fn`, found `}`
@                                        //~ ERROR expected an attribute name
kernel z() { }
