// `argmax<over ..>` and `reduce<over ..>` (SPEC.md "Collectives and shuffles"): each
// misuse refused at its line. `reduce` folds by a fn `f(a, b) = e` of the module, which
// must be associative and commutative; that is the author's promise, never checked.
fn add(a, b) = a + b
fn twice(a) = a * 2.0
fn three(a, b, c) = a + b + c
fn sum_block(a, b) {
  let s = a + b
}
kernel folds(A: tensor<f32>[N], x: f32, n: i32) {
  let v = A[ctx.thread]
  let r1 = reduce<over ctx.lane>(v, twice)          //~ ERROR `reduce` takes a fn `f(a, b) = e` of two parameters, and `twice` has 1
  let r2 = reduce<over ctx.lane>(v, three)          //~ ERROR and `three` has 3
  let r3 = reduce<over ctx.thread>(v, sum_block)    //~ ERROR and `sum_block` has a statement body
  let r4 = reduce<over ctx.lane>(v, n)              //~ ERROR and `n` is not a fn
  let r5 = reduce<over ctx.lane>(v, v + 1.0)        //~ ERROR and this is no fn's name
  let r6 = reduce<over ctx.lane>(v)                 //~ ERROR `reduce` takes 2 arguments but 1 was given
  let r7 = reduce<over ctx.lane, width 12>(v, add)  //~ ERROR a `width` is a constant power of two dividing 32
  let r8 = reduce<over ctx.thread, width 8>(v, add) //~ ERROR `reduce<over ctx.thread>` takes no `width`
  let r9 = reduce(v, add)                           //~ ERROR `reduce` needs a group
  let a1 = argmax<over ctx.lane>(v > 0.0)           //~ ERROR `argmax` compares numbers, not `bool`
  let a2 = argmax<over ctx.lane, width 64>(v)       //~ ERROR a `width` is a constant power of two dividing 32
  let a3 = argmax<over ctx.lane, width n>(v)        //~ ERROR a `width` is a constant power of two dividing 32
  let a4 = argmax<over ctx.thread, width 4>(v)      //~ ERROR `argmax<over ctx.thread>` takes no `width`
  let a5 = argmax<over ctx.warp>(v)                 //~ ERROR `argmax` folds over `ctx.lane` or `ctx.thread`
  let a6 = argmax(v)                                //~ ERROR `argmax` needs a group
  let a7 = argmax<over ctx.lane>(v, v)              //~ ERROR `argmax` takes 1 argument but 2 were given
  if v > 0.0 {
    let a8 = argmax<over ctx.lane>(v)               //~ ERROR `argmax` needs every lane of its warp to reach it
  }
  if ctx.warp == 0 {
    let r10 = reduce<over ctx.thread>(v, add)       //~ ERROR `reduce` runs once per CTA
  }
}
