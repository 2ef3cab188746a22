// Functions: inlining rules, each refusal at its line.
fn f(a) = g(a)
fn g(a) = f(a)            //~ ERROR fn `f` calls itself through other fns
fn two(a, b) = a + b
fn stmt_return(a) {
  return                  //~ ERROR `return` in the statement body of fn `stmt_return`
}
fn stmt_break(a) {
  break                   //~ ERROR `break` outside the loops of the body of fn `stmt_break`
}
fn write(t, v) {
  t[0] = v
}
fn block(a) {
  let b = a
}
fn self_call(a) = self_call(a) //~ ERROR fn `self_call` calls itself
kernel fns(A: tensor<f32>[N], x: f32, n: i32) {
  let r = f(x)
  let s = two(x)          //~ ERROR fn `two` takes 2 arguments but 1 was given
  stmt_return(x)
  for i in range(0, n) {
    stmt_break(x)
  }
  write(A[0 :+ 4], x)     //~ ERROR fn `write` indexes or assigns `t`, so it must be passed a name
  let v = block(x)        //~ ERROR fn `block` has a statement body, so it has no value
  let w = self_call(x)
  let k = fns(x)          //~ ERROR `fns` is a kernel, and a kernel cannot be called
}
