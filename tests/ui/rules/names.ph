// Names and fns (SPEC.md "Statements", "Functions"): the refusals tests/ui/check does
// not show, each at its line.
fn bump(t) {
  t = t + 1.0
}
fn stmt_continue(a) {
  continue                //~ ERROR `continue` outside the loops of the body of fn `stmt_continue`
}
fn self_call(a) = self_call(a) //~ ERROR fn `self_call` calls itself
fn block(a) {
  let b = a
}
fn shfl(a) = a * 2.0
kernel names(A: tensor<f32>[N], x: f32, n: i32) {
  bump(x + 1.0)           //~ ERROR fn `bump` indexes or assigns `t`, so it must be passed a name
  let s = x
  s[0] = 1.0              //~ ERROR cannot index `s`, a scalar `f32`
  let a = s(2.0)          //~ ERROR `s` is a value, not a fn
  let b = A[0](1.0)       //~ ERROR only a fn or a built-in can be called
  let c = shfl<xor 1>(x)  //~ ERROR fn `shfl` takes no `<...>` configuration
  let d = nothing(x)      //~ ERROR cannot find fn `nothing` in this scope
  let v = block(x)        //~ ERROR fn `block` has a statement body, so it has no value
  let w = self_call(x)
  let z = names(x)        //~ ERROR `names` is a kernel, and a kernel cannot be called
  for i in range(0, n) {
    stmt_continue(x)
  }
  var q: f32 = 0.0
  q[1] = 2.0              //~ ERROR cannot index `q`, a scalar `f32`
}
