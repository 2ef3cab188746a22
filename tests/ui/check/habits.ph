// Triton's names and `print` in a `.ph` kernel: the help names the Phobos spelling.
kernel habits(x: tensor<f32>[N]) {
  let pid = program_id(0)     //~ ERROR cannot find fn `program_id` in this scope
  let offs = arange(0, 16)    //~ ERROR cannot find fn `arange` in this scope
  let v = load(x)             //~ ERROR cannot find fn `load` in this scope
  let w = num_warps           //~ ERROR cannot find `num_warps` in this scope
  print(x[0])                 //~ ERROR cannot find fn `print` in this scope
}
