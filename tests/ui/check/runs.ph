// A thread's runs: sum(e) with no group, elem, store, word; each refusal at its line.
kernel runs(W: tensor<i8>[N, K], X: tensor<i8>[K], O: tensor<i32>[N], F: tensor<f32>[N, K]) {
  let col = ctx.thread
  let v = W[col, 0 :+ 16]
  var t: tile<f32>[4, 16] = 0.0
  let ok = sum(i32(W[col, 0 :+ 16]) * i32(X[0 :+ 16]))
  let a = sum(v)                            //~ ERROR not the `let` slice `v`
  let b = sum(i32(W[col, 0 :+ 16]) * i32(X[0 :+ 8])) //~ ERROR the runs of one `sum` have one length
  let c = sum(W[0 :+ 2, 0 :+ 16])           //~ ERROR `sum` takes a thread's run, with exactly one `:+` span
  let d = sum(t)                            //~ ERROR over runs and scalars, not `tile<f32>[4, 16]`
  let e = sum(col)                          //~ ERROR `sum` with no group sums a thread's runs, and this has none
  let f = elem(W[col, 0 :+ 16], 16)         //~ ERROR `elem` takes a constant element below 16
  let g = word(W[col, 0 :+ 6])              //~ ERROR `word` takes a whole number of words
  let h = word(F[col, 0 :+ 4])              //~ ERROR `word` takes a run of `i8`, not `f32`
  store(O[col * 2 :+ 2], ok)                //~ ERROR `store` writes a run of 2, so it takes 2 values, not 1
  let i = dp4a(1.0, col, 0)                 //~ ERROR `dp4a` takes integers, not `f32`
}
