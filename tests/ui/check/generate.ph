// generate(f): a statement fn of no parameters that ends in a bare expression.
fn three() {
  let a = 1 + 2
  a * x
}
fn ex(a) = a
fn params(a) {
  a
}
fn noend() {
  let q = 1
}
kernel generates(O: tensor<i32>[N], x: i32) {
  O[0] = generate(three)
  O[1] = generate(ex)                       //~ ERROR `generate` takes a statement fn, and `ex` is an expression fn
  O[2] = generate(params)                   //~ ERROR `generate` takes a fn with no parameters, and `params` has 1
  O[3] = generate(noend)                    //~ ERROR fn `noend` does not end in a bare expression
  O[4] = generate(x)                        //~ ERROR `generate` takes a fn of this module
}
