"""Kernel attributes: every `@name(..)` of SPEC.md "Attributes", checked and read.

`check_attributes` validates a kernel's attributes and returns what they say as one
`KernelAttributes`, with every problem found as a diagnostic (it never raises). A
kernel whose attributes are wrong still gets a `KernelAttributes`: the attributes
that checked are in it, the rest keep their defaults.

    >>> from phobos.source import SourceFile
    >>> from phobos.syntax.parser import parse
    >>> text = '''@autotune(TILE in [16, 64], U in [1, 2, 4])
    ... @launch(128)
    ... @aligned(N = TILE)
    ... kernel k(x: tensor<f32>[N]) { }
    ... '''
    >>> program, _ = parse(SourceFile("k.ph", text))
    >>> attrs, diags = check_attributes(program.items[0])
    >>> attrs.autotune, attrs.launch.threads, attrs.aligned, diags
    ({'TILE': (16, 32, 64), 'U': (1, 2, 4)}, 128, {'N': 'TILE'}, [])

The rules, by attribute (each a row of `_CHECKS`):

1. `@autotune(X in [..], ..)`, `@cluster(X in [..], ..)`: search dimensions only.
   One value fixes X; two are inclusive bounds searched in doubling steps, `a < b`
   and `b` a times a power of two (otherwise refused, the help naming the nearest
   bound the steps reach, so a reader never wonders whether `b` is searched); three
   or more are a list, tried in the order written, with no repeats. Every value is
   a positive integer. A dimension is named once per attribute and is not a kernel
   parameter's name.
2. `@aligned(DIM = tile, ..)`: keyword arguments only. DIM is a symbolic dimension
   of a tensor parameter, aligned once; tile is a positive integer literal or an
   `@autotune` name.
3. `@launch(threads[, min_blocks[, max_regs]])`: integer literals, threads in
   1..1024 (`.maxntid`), min_blocks at least 1, max_regs in 16..255 (`.maxnreg`).
   Each may instead be an `@autotune` name, `@launch(T)` or `@launch(256, MB)`, so
   the CTA size or the occupancy asked of ptxas is searched like a tile size: each
   variant gets its own, checked against the same range when the variant is
   (`Launch.resolve`). Any other name is refused (E0216).
4. `@tensorcore`, `@tensorcore(sync)`, `@tensorcore(wmma)`.
5. `@registers(t, ..)`: one or more names, each a `var` of the kernel.
6. `@pipeline`, `@padstage`, `@dynshared`, `@persistent`: no arguments, but
   `@pipeline(stages = S)` (beyond SPEC.md: ours) sets the depth of the kernel's
   rings, S an integer from 2 to `MAX_RING_STAGES` or an `@autotune` name whose every value
   is (E0217): a cp.async ring takes at most 4 of them, and any ring fewer where they
   do not fit the shared memory; `@pipeline(cluster = C)` (ours too) asks for clusters
   of C CTAs sharing a TMA ring's tiles by multicast, C 1 (none) or 2 or an
   `@autotune` name searching only those (E0218); both may be given.

Any attribute given twice, an unknown one (with a did-you-mean) and a planned one
(`PLANNED_ATTRIBUTES`) are refused. Codes E0200..E0215, explained in
`phobos/diagnostics/explain/`.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from phobos.diagnostics import Diagnostic, Label
from phobos.names import ATTRIBUTES, PLANNED_ATTRIBUTES
from phobos.sema.space import Space
from phobos.source import Span
from phobos.syntax import ast

E_UNKNOWN = "E0200"  # an attribute SPEC.md does not list
E_PLANNED = "E0201"  # @readonly, @fast_math, @assert_coalesced
E_TWICE = "E0202"  # the same attribute on one kernel twice
E_ARG_KIND = "E0203"  # an argument of a kind the attribute does not take
E_ARG_COUNT = "E0204"  # too few or too many arguments
E_NOT_POSITIVE = "E0205"  # a search value of 0
E_NAMED_TWICE = "E0206"  # a dimension, aligned dim or register named twice in one attribute
E_IS_PARAM = "E0207"  # a search dimension named like a kernel parameter
E_BOUNDS = "E0208"  # doubling bounds equal or out of order
E_UNREACHED = "E0209"  # an upper bound the doubling steps do not reach
E_REPEATED = "E0210"  # a value listed twice
E_ALIGN_DIM = "E0211"  # @aligned of something that is not a symbolic tensor dimension
E_ALIGN_TILE = "E0212"  # @aligned to something that is not a positive int or @autotune name
E_LAUNCH_RANGE = "E0213"  # @launch threads, min_blocks or max_regs out of range
E_TC_PATH = "E0214"  # @tensorcore(x) with x not `sync` or `wmma`
E_REGISTER = "E0215"  # @registers(t) with no `var t` in the kernel
E_LAUNCH_NAME = "E0216"  # @launch(T) with T not an @autotune dimension
E_STAGES = "E0217"  # @pipeline(stages = S) with S no ring depth
E_CLUSTER = "E0218"  # @pipeline(cluster = C) with C no cluster size

# SPEC.md "Attributes" and PTX's limits: .maxntid at most 1024 threads per CTA,
# .maxnreg in 16..255 (the spec's range for max_regs).
MAX_THREADS = 1024
MAX_REGS = (16, 255)
# The most CTAs one SM keeps resident on any target Phobos emits for (sm_80 and sm_90:
# 32); `.minnctapersm` beyond it asks for an occupancy no SM has.
MAX_MIN_BLOCKS = 32
DEFAULT_THREADS = 256
LANES = 32  # SPEC.md "Indexing and synchronization": ctx.lanes on NVIDIA
TENSORCORE_PATHS = ("sync", "wmma")
FLAGS = ("pipeline", "padstage", "dynshared", "persistent")
MAX_RING_STAGES = 8  # `@pipeline(stages = S)`: the deepest ring asked for
MAX_CLUSTER_CTAS = 2  # `@pipeline(cluster = C)`: the CTAs of a cluster the lowering pairs


@dataclass(frozen=True)
class Launch:
    """`@launch(threads, min_blocks, max_regs)`; a kernel without one gets `Launch()`.

    Each field is a number, or the name of the `@autotune` dimension that gives it in
    each variant (`@launch(T)`, `@launch(256, MB)`); `resolve` reads them in one variant.

    >>> Launch().threads, Launch(96).warps, Launch(100).warps
    (256, 3, None)
    >>> Launch("T").resolve({"BLOCK": 1024, "T": 128}), Launch("T").warps
    (Launch(threads=128, min_blocks=None, max_regs=None), None)
    >>> Launch(256, "MB").resolve({"MB": 2})
    Launch(threads=256, min_blocks=2, max_regs=None)
    """

    threads: int | str = DEFAULT_THREADS
    min_blocks: int | None = None
    max_regs: int | None = None

    @property
    def warps(self) -> int | None:
        """`ctx.warps`, or None when the CTA is not a whole number of warps (or not
        known before a variant is chosen)."""
        t = self.threads
        return t // LANES if isinstance(t, int) and t % LANES == 0 else None

    def resolve(self, variant: dict[str, int]) -> Launch:
        """This launch in `variant`: every field a number (or None). `KeyError` if the
        variant gives no value to a name."""

        def value(v):
            return variant[v] if isinstance(v, str) else v

        return Launch(value(self.threads), value(self.min_blocks), value(self.max_regs))


@dataclass(frozen=True)
class KernelAttributes:
    """What a kernel's attributes say, with defaults for those it leaves out.

    `autotune` and `cluster` map each search dimension to its choices in order;
    `aligned` maps a tensor dimension to its tile, a literal or an `@autotune` name;
    `tensorcore` is None (off), "sync" or "wmma". `spans` holds the span of every
    attribute given, by name, and `dim_spans` that of every `@autotune` dimension,
    for later diagnostics ("`TILE_M` is 256 in this variant").

    >>> KernelAttributes().launch, KernelAttributes().space.first_choice()
    (Launch(threads=256, min_blocks=None, max_regs=None), {})
    """

    autotune: dict[str, tuple[int, ...]] = field(default_factory=dict)
    cluster: dict[str, tuple[int, ...]] = field(default_factory=dict)
    aligned: dict[str, int | str] = field(default_factory=dict)
    launch: Launch = field(default_factory=Launch)
    tensorcore: str | None = None
    registers: tuple[str, ...] = ()
    pipeline: bool = False
    stages: int | str | None = None  # `@pipeline(stages = S)`: a number or an @autotune name
    cluster_ctas: int | str | None = None  # `@pipeline(cluster = C)`: likewise
    padstage: bool = False
    dynshared: bool = False
    persistent: bool = False
    spans: dict[str, Span] = field(default_factory=dict, compare=False, repr=False)
    dim_spans: dict[str, Span] = field(default_factory=dict, compare=False, repr=False)

    @property
    def space(self) -> Space:
        """The `@autotune` search space."""
        return Space(self.autotune)

    def __hash__(self) -> int:
        # The dicts are never mutated after checking; hash what `==` compares.
        maps = (self.autotune, self.cluster, self.aligned)
        flags = (self.pipeline, self.padstage, self.dynshared, self.persistent)
        items = tuple(tuple(m.items()) for m in maps)
        return hash((items, self.launch, self.tensorcore, self.registers, flags, self.stages,
                     self.cluster_ctas))  # fmt: skip


def check_attributes(kernel: ast.Kernel) -> tuple[KernelAttributes, list[Diagnostic]]:
    """Validate every attribute of `kernel`; the attributes read and the errors found.

    Never raises. Diagnostics come in source order of the attributes.

        >>> from phobos.source import SourceFile
        >>> from phobos.syntax.parser import parse
        >>> program, _ = parse(SourceFile("k.ph", "@lanuch(64)\\nkernel k() { }\\n"))
        >>> _, diags = check_attributes(program.items[0])
        >>> diags[0].code, diags[0].message, diags[0].help
        ('E0200', 'unknown attribute `@lanuch`', ('did you mean `@launch`?',))
    """
    checker = _Checker(kernel)
    attrs = checker.run()
    return attrs, sorted(checker.diags, key=lambda d: d.span.start if d.span else 0)


# ---------------------------------------------------------------------------
# Spelling: messages name constructs as the user wrote them, `.ph` or Python.


def _is_py(span: Span) -> bool:
    return span.source.name.endswith(".py")


def _at(name: str, span: Span) -> str:
    """`@launch` in a `.ph` file, `@ph.launch` in Python."""
    return f"`@ph.{name}`" if _is_py(span) else f"`@{name}`"


def _dim_text(name: str, values: list[int] | tuple[int, ...], span: Span) -> str:
    listed = ", ".join(str(v) for v in values)
    return f"`{name}=[{listed}]`" if _is_py(span) else f"`{name} in [{listed}]`"


def _aligned_text(dim: str, tile: str, span: Span) -> str:
    return f'`@ph.aligned({dim}="{tile}")`' if _is_py(span) else f"`@aligned({dim} = {tile})`"


def _word(name: str, span: Span) -> str:
    """A name as an attribute argument: `acc` in a `.ph` file, `"acc"` in Python."""
    return f'"{name}"' if _is_py(span) else name


def _did_you_mean(name: str, options, spell=lambda s: f"`{s}`") -> tuple[str, ...]:
    close = difflib.get_close_matches(name, list(options), n=1)
    return (f"did you mean {spell(close[0])}?",) if close else ()


def _did_you_mean_word(name: str, options, span: Span) -> tuple[str, ...]:
    """A did-you-mean over names written as attribute arguments (strings in Python)."""
    return _did_you_mean(name, options, lambda s: f"`{_word(s, span)}`")


def _literal_text(node: ast.AttrLiteral) -> str:
    if isinstance(node, ast.Bool):
        return "true" if node.value else "false"
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Float):
        return node.text or repr(node.value)
    return str(node.value)


def _describe(arg: ast.AttrArg) -> str:
    """What an argument is, for a label: "a keyword argument", "`1.5`"."""
    if isinstance(arg, ast.SearchDim):
        return "a search dimension"
    if isinstance(arg, ast.KeywordArg):
        return "a keyword argument"
    return f"`{_literal_text(arg.value)}`"


# ---------------------------------------------------------------------------
# The checker


class _Checker:
    def __init__(self, kernel: ast.Kernel):
        self.kernel = kernel
        self.diags: list[Diagnostic] = []
        self.out: dict = {"spans": {}, "dim_spans": {}}
        self.params = {p.name.id: p for p in kernel.params}
        self.named: set[str] = set()  # every search dimension named, refused or not

    def error(self, code: str, message: str, span: Span, label: str = "", **kw) -> None:
        self.diags.append(Diagnostic.error(code, message, Label(span, label), **kw))

    def run(self) -> KernelAttributes:
        seen: dict[str, ast.Attribute] = {}
        for attr in self.kernel.attrs:
            name = attr.name.id
            if name in PLANNED_ATTRIBUTES:
                self.error(
                    E_PLANNED,
                    f"{_at(name, attr.span)} is planned but not implemented yet",
                    attr.name.span,
                    "not available yet",
                    help="remove it",
                )
            elif name not in ATTRIBUTES:
                self.error(
                    E_UNKNOWN,
                    f"unknown attribute {_at(name, attr.span)}",
                    attr.name.span,
                    "not a Phobos attribute",
                    help=_did_you_mean(name, ATTRIBUTES, lambda s, span=attr.span: _at(s, span)),
                )
            elif name in seen:
                merge = name in ("autotune", "cluster", "aligned", "registers")
                self.error(
                    E_TWICE,
                    f"{_at(name, attr.span)} is given twice",
                    attr.name.span,
                    "given again here",
                    secondary=[Label(seen[name].name.span, "first given here")],
                    help="merge their arguments into one" if merge else "remove one of them",
                )
            else:
                seen[name] = attr
                self.out["spans"][name] = attr.span
        # @aligned names @autotune constants, so the search spaces go first.
        for name in ATTRIBUTES:
            if name in seen:
                _CHECKS[name](self, seen[name])
        return KernelAttributes(**self.out)

    # -- argument shapes ------------------------------------------------------

    def args_of(self, attr: ast.Attribute, kind: type, what: str, example: str) -> list:
        """The arguments of `attr` that are of `kind`; every other one is reported."""
        good = []
        for arg in attr.args or ():
            if isinstance(arg, kind):
                good.append(arg)
            else:
                self.error(
                    E_ARG_KIND,
                    f"{_at(attr.name.id, attr.span)} takes only {what}",
                    arg.span,
                    f"{_describe(arg)} is not one",
                    help=f"write {example}",
                )
        return good

    def too_many(self, at: str, given, count: int, notes=()) -> bool:
        """Report the arguments past the first `count`; whether there were any."""
        if len(given) <= count:
            return False
        self.error(
            E_ARG_COUNT,
            f"{at} takes at most {_COUNTS[count]}",
            given[count].span.to(given[-1].span),
            "extra arguments",
            notes=list(notes),
            help="remove the extra arguments",
        )
        return True

    def none_given(self, attr: ast.Attribute, what: str, example: str) -> None:
        self.error(
            E_ARG_COUNT,
            f"{_at(attr.name.id, attr.span)} needs {what}",
            attr.span,
            "no arguments",
            help=f"write {example}",
        )

    # -- @autotune, @cluster -----------------------------------------------------

    def search(self, attr: ast.Attribute) -> None:
        name = attr.name.id
        example = _dim_text("TILE_M", [32, 256], attr.span)
        dims = self.args_of(attr, ast.SearchDim, "search dimensions", example)
        if not attr.args:
            whole = f"{_at(name, attr.span)[:-1]}({example[1:-1]})`"
            self.none_given(attr, "at least one search dimension", f"{whole}, or remove it")
        space: dict[str, tuple[int, ...]] = {}
        first: dict[str, ast.SearchDim] = {}
        for dim in dims:
            dim_name = dim.name.id
            if dim_name in first:
                self.error(
                    E_NAMED_TWICE,
                    f"`{dim_name}` is named twice in {_at(name, attr.span)}",
                    dim.name.span,
                    "named again here",
                    secondary=[Label(first[dim_name].name.span, "first named here")],
                    help="give each dimension one list of values",
                )
                continue
            first[dim_name] = dim
            self.named.add(dim_name)
            param = self.params.get(dim_name)
            if param is not None:
                self.error(
                    E_IS_PARAM,
                    f"the search dimension `{dim_name}` has the name of a kernel parameter",
                    dim.name.span,
                    "also a parameter",
                    secondary=[Label(param.name.span, "the parameter")],
                    help="rename the dimension or the parameter",
                )
                continue
            choices = self.choices(dim)
            if choices is not None:
                space[dim_name] = choices
                if name == "autotune":
                    self.out["dim_spans"][dim_name] = dim.span
        self.out[name] = space

    def choices(self, dim: ast.SearchDim) -> tuple[int, ...] | None:
        """The values `dim` searches, in order, or None after reporting why not."""
        values = [v.value for v in dim.values]
        name = dim.name.id
        if not values:
            return None  # the front end has reported the empty list
        bad = [v for v in dim.values if v.value <= 0]
        for v in bad:
            self.error(
                E_NOT_POSITIVE,
                f"`{name}` cannot take the value {v.value}",
                v.span,
                "not a positive integer",
                help="search values are tile sizes and counts: positive integers",
            )
        if bad:
            return None
        if len(values) == 1:
            return (values[0],)
        if len(values) == 2:
            return self.doubling(dim)
        return self.listed(dim)

    def doubling(self, dim: ast.SearchDim) -> tuple[int, ...] | None:
        """`X in [a, b]`: a, 2a, 4a, .. b, with b required to be a times a power of two."""
        name, (lo, hi) = dim.name.id, dim.values
        span = lo.span.to(hi.span)
        a, b = lo.value, hi.value
        if a == b:
            self.error(
                E_BOUNDS,
                f"the bounds of `{name}` are equal",
                span,
                "two values are a range, from the first to the second",
                help=f"to fix `{name}` at {a}, write {_dim_text(name, [a], dim.span)}",
            )
            return None
        if a > b:
            self.error(
                E_BOUNDS,
                f"the bounds of `{name}` are out of order",
                span,
                "the lower bound comes first",
                help=f"write {_dim_text(name, [b, a], dim.span)}",
            )
            return None
        steps = [a]
        while steps[-1] * 2 <= b:
            steps.append(steps[-1] * 2)
        if steps[-1] != b:
            below, above = steps[-1], steps[-1] * 2
            # The nearer of the two bounds the steps reach; `below` is no range at all
            # when it is `a` itself.
            nearest = below if below != a and b - below <= above - b else above
            self.error(
                E_UNREACHED,
                f"`{name}` doubles from {a} and never reaches {b}",
                hi.span,
                f"not {a} times a power of two",
                notes=[f"two values are bounds searched in doubling steps: {a}, {2 * a}, .."],
                help=(
                    f"the nearest bound the steps reach is {nearest}: write "
                    f"{_dim_text(name, [a, nearest], dim.span)}, or list three or more "
                    "values to search exactly those"
                ),
            )
            return None
        return tuple(steps)

    def listed(self, dim: ast.SearchDim) -> tuple[int, ...] | None:
        seen: dict[int, ast.Int] = {}
        ok = True
        for v in dim.values:
            if v.value in seen:
                ok = False
                self.error(
                    E_REPEATED,
                    f"`{dim.name.id}` lists {v.value} twice",
                    v.span,
                    "listed again here",
                    secondary=[Label(seen[v.value].span, "first listed here")],
                    help="remove the repeated value",
                )
            else:
                seen[v.value] = v
        return tuple(seen) if ok else None

    # -- @aligned ---------------------------------------------------------------

    def aligned(self, attr: ast.Attribute) -> None:
        example = _aligned_text("M", "TILE_M", attr.span)
        form = "`DIM=tile`" if _is_py(attr.span) else "`DIM = tile`"
        args = self.args_of(attr, ast.KeywordArg, f"{form} arguments", example)
        if not attr.args:
            self.none_given(attr, "a dimension and its tile", example)
        dims = self.tensor_dims()
        out: dict[str, int | str] = {}
        first: dict[str, ast.KeywordArg] = {}
        for arg in args:
            dim = arg.name.id
            if dim in first:
                self.error(
                    E_NAMED_TWICE,
                    f"`{dim}` is named twice in {_at('aligned', attr.span)}",
                    arg.name.span,
                    "named again here",
                    secondary=[Label(first[dim].name.span, "first named here")],
                    help="promise one tile per dimension",
                )
                continue
            first[dim] = arg
            if dim not in dims:
                listed = ", ".join(f"`{d}`" for d in dims)
                self.error(
                    E_ALIGN_DIM,
                    f"`{dim}` is not a dimension of a tensor parameter",
                    arg.name.span,
                    "no tensor has this dimension",
                    notes=[f"the symbolic dimensions are {listed}"] if dims else [],
                    help=_did_you_mean(dim, dims)
                    or "align a symbolic dimension of a tensor parameter",
                )
                continue
            tile = self.tile(arg)
            if tile is not None:
                out[dim] = tile
        self.out["aligned"] = out

    def tensor_dims(self) -> list[str]:
        """The symbolic dimensions of the tensor parameters, in order of appearance."""
        dims: list[str] = []
        for param in self.kernel.params:
            if isinstance(param.type, ast.TensorType):
                for d in param.type.dims:
                    if isinstance(d, ast.Name) and d.id not in dims:
                        dims.append(d.id)
        return dims

    def tile(self, arg: ast.KeywordArg) -> int | str | None:
        value = arg.value
        tunable = self.out.get("autotune", {})
        if isinstance(value, ast.Int) and value.value > 0:
            return value.value
        if isinstance(value, ast.Name) and value.id in tunable:
            return value.id
        autotune = _at("autotune", arg.span)
        explain = f"a tile is a positive integer or a name {autotune} searches"
        if isinstance(value, ast.Name):
            cluster = value.id in self.out.get("cluster", {})
            self.error(
                E_ALIGN_TILE,
                f"`{value.id}` is not an {autotune} constant",
                value.span,
                f"a {_at('cluster', arg.span)} dimension" if cluster else "not a tile size",
                help=_did_you_mean_word(value.id, tunable, arg.span) or explain,
            )
            return None
        self.error(
            E_ALIGN_TILE,
            f"`{arg.name.id}` cannot be aligned to `{_literal_text(value)}`",
            value.span,
            "not a positive integer",
            help=explain,
        )
        return None

    # -- @launch -------------------------------------------------------------------

    def launch(self, attr: ast.Attribute) -> None:
        at = _at("launch", attr.span)
        example = f"{at[:-1]}(256)` or {at[:-1]}(256, 2, 64)`"
        given = attr.args or ()
        if not given:
            self.none_given(attr, "the CTA size", example)
            return
        self.too_many(at, given, 3, ["the arguments are threads, min_blocks and max_regs"])
        args = self.args_of(attr, ast.PositionalArg, "integer literals", example)
        read = [
            self.launch_value(attr, a, i)
            for i, a in enumerate(given)
            if isinstance(a, ast.PositionalArg)
        ]
        if len(read) != len(given) or None in read:
            return
        values: dict[str, int | str] = {}
        for arg, v, (name, lo, hi) in zip(args, read, LAUNCH_RANGES, strict=False):
            if isinstance(v, str) or lo <= v and (hi is None or v <= hi):
                values[name] = v  # a name's values are checked in each variant
                continue
            self.error(
                E_LAUNCH_RANGE,
                f"{at} {name} must be {_bound(lo, hi)}, found {v}",
                arg.span,
                "out of range",
                notes=[LAUNCH_NOTES[name]],
            )
        if len(values) == min(len(read), 3):
            self.out["launch"] = Launch(**values)

    def launch_value(self, attr: ast.Attribute, arg, index: int) -> int | str | None:
        """An argument of `@launch`: an int, an `@autotune` name, or None after
        reporting why it is neither."""
        value = arg.value
        if isinstance(value, ast.Int):
            return value.value
        at = _at("launch", attr.span)
        tunable = self.out.get("autotune", {})
        field = LAUNCH_RANGES[min(index, 2)][0]
        if isinstance(value, ast.Name):
            if value.id in tunable:
                return value.id
            if value.id in self.named and value.id not in self.out.get("cluster", {}):
                return None  # a search dimension refused already: say nothing more
            autotune = _at("autotune", attr.span)
            cluster = value.id in self.out.get("cluster", {})
            dim = _dim_text(value.id, [256, 128, 512], attr.span)
            if cluster:
                advice = f"a {_at('cluster', attr.span)} dimension sizes the cluster, not the CTA"
                advice += f"; write a number such as {at[:-1]}(256)`"
            elif index == 0:
                advice = f"write a number such as {at[:-1]}(256)`, or search it: add {dim} to"
                advice += f" {autotune}"
            else:
                example = "2" if field == "min_blocks" else "128"
                advice = f"write a number such as {example}, or search it: add"
                advice += (
                    f" {_dim_text(value.id, [1, 2] if example == '2' else [128, 168], attr.span)}"
                )
                advice += f" to {autotune}"
            what = {
                "threads": "a CTA size",
                "min_blocks": "a CTA count",
                "max_regs": "a register cap",
            }
            self.error(
                E_LAUNCH_NAME,
                f"`{value.id}` is not an {autotune} dimension",
                value.span,
                f"a {_at('cluster', attr.span)} dimension" if cluster else f"not {what[field]}",
                notes=[
                    f"{field} is a number, or a name {autotune} searches ({what[field]} per "
                    "variant)"
                ],
                help=_did_you_mean_word(value.id, tunable, attr.span) or advice,
            )
            return None
        self.error(
            E_ARG_KIND,
            f"{at} takes only integer literals and {_at('autotune', attr.span)} names",
            arg.span,
            f"{_describe(arg)} is not an integer",
            help="threads, min_blocks and max_regs are written as numbers, or as names "
            f"{_at('autotune', attr.span)} searches",
        )
        return None

    # -- @pipeline ----------------------------------------------------------------

    def pipeline(self, attr: ast.Attribute) -> None:
        """`@pipeline`, `@pipeline(stages = S)`, `@pipeline(cluster = C)` or both: the
        rings' depth and the CTAs a cluster sharing their tiles (ours)."""
        self.out["pipeline"] = True
        at = _at("pipeline", attr.span)
        given = attr.args or ()
        if not given:
            return
        py = _is_py(attr.span)
        example = f"{at[:-1]}(stages=4)`" if py else f"{at[:-1]}(stages = 4)`"
        args = self.args_of(attr, ast.KeywordArg, "`stages` and `cluster`", example)
        if self.too_many(at, given, 2):
            return
        seen = set()
        for arg in args:
            name = arg.name.id
            if name not in ("stages", "cluster") or name in seen:
                self.error(
                    E_ARG_KIND,
                    f"{at} takes `stages` and `cluster`, once each"
                    if name in seen
                    else f"{at} takes only `stages` and `cluster`",
                    arg.name.span,
                    "given again" if name in seen else "not an argument of it",
                    help=f"write {example}",
                )
                return
            seen.add(name)
            if name == "stages":
                self._ranged(at, attr.span, arg.value, "stages", "a number of stages", E_STAGES, 2,
                             MAX_RING_STAGES,
                             f"a ring's depth is from 2 to {MAX_RING_STAGES} stages", example)  # fmt: skip
            else:
                cluster = f"{at[:-1]}(cluster=2)`" if py else f"{at[:-1]}(cluster = 2)`"
                self._ranged(at, attr.span, arg.value, "cluster_ctas", "a cluster size", E_CLUSTER, 1,
                             MAX_CLUSTER_CTAS, f"a cluster is 1 CTA (none) or {MAX_CLUSTER_CTAS}, "
                             "pairing the blocks along x", cluster)  # fmt: skip

    def _ranged(self, at, span, value, key, what, code, lo, hi, note, example) -> None:
        """An argument `value` of `at` that is a number from `lo` to `hi` or an
        `@autotune` dimension searching only such numbers: kept as `key`."""
        tunable = self.out.get("autotune", {})
        word = "stages" if key == "stages" else "cluster"
        span_text = f"{lo} or {hi}" if hi == lo + 1 else f"from {lo} to {hi}"
        if isinstance(value, ast.Int):
            if lo <= value.value <= hi:
                self.out[key] = value.value
                return
            self.error(code, f"{at} {word} must be {span_text}, found {value.value}",
                       value.span, "out of range", notes=[note])  # fmt: skip
            return
        if isinstance(value, ast.Name) and value.id in tunable:
            bad = [v for v in tunable[value.id] if not lo <= v <= hi]
            if not bad:
                self.out[key] = value.id
                return
            self.error(
                code,
                f"{at} {word} must be {span_text}, but `{value.id}` searches {bad[0]}",
                value.span,
                "out of range in some variants",
                notes=[note],
            )
            return
        autotune = _at("autotune", span)
        self.error(
            code,
            f"`{_literal_text(value)}` is not {what}",
            value.span,
            "not an integer or an " + autotune + " dimension",
            notes=[note],
            help=(_did_you_mean_word(value.id, tunable, value.span) if isinstance(value, ast.Name)
                  else None) or f"write {example}, or name a dimension {autotune} searches",
        )  # fmt: skip

    # -- @tensorcore -------------------------------------------------------------

    def tensorcore(self, attr: ast.Attribute) -> None:
        at = _at("tensorcore", attr.span)
        paths = " and ".join(f"`{p}`" for p in TENSORCORE_PATHS)
        wmma, sync = _word("wmma", attr.span), _word("sync", attr.span)
        args = self.args_of(attr, ast.PositionalArg, "a path", f"{at[:-1]}({wmma})`")
        if not attr.args:
            self.out["tensorcore"] = "sync"  # SPEC.md: @tensorcore(sync) is @tensorcore
            return
        if len(attr.args) > 1:
            self.error(
                E_ARG_COUNT,
                f"{at} takes at most one path",
                attr.args[1].span.to(attr.args[-1].span),
                "extra arguments",
                help=f"choose one of the paths, {paths}",
            )
            return
        if not args:
            return
        value = args[0].value
        if isinstance(value, ast.Name) and value.id in TENSORCORE_PATHS:
            self.out["tensorcore"] = value.id
            return
        self.error(
            E_TC_PATH,
            f"unknown tensor-core path `{_literal_text(value)}`",
            value.span,
            "not a path",
            notes=[f"the paths are {paths}; `sync` is what {at} alone picks"],
            help=_did_you_mean_word(_literal_text(value), TENSORCORE_PATHS, attr.span)
            or f"write {at[:-1]}({sync})` or {at[:-1]}({wmma})`",
        )

    # -- @registers --------------------------------------------------------------

    def registers(self, attr: ast.Attribute) -> None:
        at = _at("registers", attr.span)
        example = f"{at[:-1]}({_word('acc', attr.span)})`"
        args = self.args_of(attr, ast.PositionalArg, "names of `var` tiles", example)
        if not attr.args:
            self.none_given(attr, "the tiles to keep in registers", example)
        declared = [
            n.name.id for n in ast.walk(self.kernel.body) if isinstance(n, ast.Var)
        ]  # a statement fn's own vars never meet the kernel's (SPEC.md "Functions")
        names: list[str] = []
        first: dict[str, ast.Name] = {}
        for arg in args:
            value = arg.value
            if not isinstance(value, ast.Name):
                self.error(
                    E_ARG_KIND,
                    f"{at} takes only names of `var` tiles",
                    arg.span,
                    f"{_describe(arg)} is not a name",
                    help=f"write {example}",
                )
                continue
            if value.id in first:
                self.error(
                    E_NAMED_TWICE,
                    f"`{value.id}` is named twice in {at}",
                    value.span,
                    "named again here",
                    secondary=[Label(first[value.id].span, "first named here")],
                    help="remove the repeated name",
                )
                continue
            first[value.id] = value
            if value.id not in declared:
                self.error(
                    E_REGISTER,
                    f"{at} names `{value.id}`, which no `var` of the kernel declares",
                    value.span,
                    "no such `var`",
                    help=_did_you_mean_word(value.id, declared, attr.span)
                    or "name a tile declared with `var` in the kernel",
                )
                continue
            names.append(value.id)
        self.out["registers"] = tuple(names)

    # -- flags -------------------------------------------------------------------

    def flag(self, attr: ast.Attribute) -> None:
        name = attr.name.id
        if attr.args:
            self.error(
                E_ARG_COUNT,
                f"{_at(name, attr.span)} takes no arguments",
                attr.args[0].span.to(attr.args[-1].span),
                "not expected",
                help=f"write {_at(name, attr.span)} alone",
            )
        self.out[name] = True


_COUNTS = {1: "one argument", 2: "two arguments", 3: "three arguments"}  # `too_many`'s words


def _bound(lo: int, hi: int | None) -> str:
    return f"at least {lo}" if hi is None else f"from {lo} to {hi}"


# `@launch`'s arguments in order: name, least, most (None: no upper bound).
LAUNCH_RANGES = (
    ("threads", 1, MAX_THREADS),
    ("min_blocks", 1, MAX_MIN_BLOCKS),
    ("max_regs", *MAX_REGS),
)
LAUNCH_NOTES = {
    "threads": "a CTA holds at most 1024 threads (PTX `.maxntid`)",
    "min_blocks": "min_blocks is the CTAs per SM to plan for (PTX `.minnctapersm`), "
    "and an SM holds at most 32",
    "max_regs": "max_regs caps the registers of a thread (PTX `.maxnreg`)",
}

# One checker per attribute of SPEC.md "Attributes".
_CHECKS = {
    "autotune": _Checker.search,
    "cluster": _Checker.search,
    "aligned": _Checker.aligned,
    "launch": _Checker.launch,
    "tensorcore": _Checker.tensorcore,
    "registers": _Checker.registers,
    **dict.fromkeys(FLAGS, _Checker.flag),
    "pipeline": _Checker.pipeline,
}
assert set(_CHECKS) == set(ATTRIBUTES), "every attribute has a checker"
