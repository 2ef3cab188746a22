# Declarations in the Python spelling: names the PTX can carry, each once, extents apart
# from parameters and of at least one element.
import phobos.lang as ph


@ph.kernel
def k(xé: ph.f32, A: ph.tensor[ph.f32][Né]):  #~ ERROR the parameter name `xé` is not a PTX identifier
    pass  #~^ ERROR the extent name `Né` is not a PTX identifier


@ph.kernel
def kλ():  #~ ERROR the kernel name `kλ` is not a PTX identifier
    pass


@ph.kernel
def shape(n: ph.i32, A: ph.tensor[ph.f32][n]):  #~ ERROR the extent `n` is named like the parameter `n`
    pass


@ph.kernel
def shape():  #~ ERROR the kernel `shape` is defined twice
    pass


@ph.kernel
def empty(a: ph.f32):
    t: ph.var[ph.tile[ph.f32][4, 0]] = 0.0  #~ ERROR a tile or tensor extent must be at least 1
    t[0, 0] = a


@ph.kernel
def flags(A: ph.tensor[ph.bool][N]):  #~ ERROR a tensor of `bool` is not supported
    pass


@ph.kernel
@ph.launch(32, 4294967296)  #~ ERROR `@ph.launch` min_blocks must be from 1 to 32
def busy():
    pass
