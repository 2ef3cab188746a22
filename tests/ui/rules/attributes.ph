// Attribute rules of SPEC.md "Attributes" not covered by tests/ui/sema: each refusal
// at the line of the attribute that breaks it.
@lanuch(128)              //~ ERROR unknown attribute `@lanuch`
@assert_coalesced         //~ ERROR `@assert_coalesced` is planned but not implemented yet
@tensorcore(1)            //~ ERROR unknown tensor-core path `1`
@launch()                 //~ ERROR `@launch` needs the CTA size
kernel calls(x: tensor<f32>[N]) { }

@tensorcore(sync, wmma)   //~ ERROR `@tensorcore` takes at most one path
@registers(3)             //~ ERROR `@registers` takes only names of `var` tiles
@aligned(N = 0)           //~ ERROR `N` cannot be aligned to `0`
@launch(256, 0)           //~ ERROR `@launch` min_blocks must be from 1 to 32, found 0
kernel args(x: tensor<f32>[N]) {
  var t: tile<f32>[1, 64] = 0.0
}

@aligned()                //~ ERROR `@aligned` needs a dimension and its tile
@cluster()                //~ ERROR `@cluster` needs at least one search dimension
@readonly                 //~ ERROR `@readonly` is planned but not implemented yet
kernel empty(x: tensor<f32>[N]) { }
