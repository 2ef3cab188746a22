"""The attribute checker: every rule of SPEC.md "Attributes", from both spellings.

A refusal case is a kernel in `.ph` and, where Python can spell it, in Python; the
line the error must be reported on carries `// <-` (`.ph`) or `# <-` (Python).
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from phobos.diagnostics import codes
from phobos.pyfront.translate import translate_module
from phobos.sema.attributes import KernelAttributes, Launch, check_attributes
from phobos.sema.space import Space
from phobos.source import SourceFile
from phobos.syntax.parser import parse

REPO = Path(__file__).resolve().parents[2]
PY_HEADER = "from __future__ import annotations\n\nimport phobos.lang as ph\n\n\n"


def ph(text: str):
    """The attributes and diagnostics of the one kernel of a `.ph` snippet."""
    source = SourceFile("k.ph", textwrap.dedent(text).lstrip("\n"))
    program, diags = parse(source)
    assert diags == [], [d.message for d in diags]
    (kernel,) = program.items
    return check_attributes(kernel)


def py(text: str):
    """The same for a Python snippet (`@ph.kernel` added on top of its decorators)."""
    body = "@ph.kernel\n" + textwrap.dedent(text).lstrip("\n")
    program, diags = translate_module(SourceFile("k.py", PY_HEADER + body))
    assert diags == [], [d.message for d in diags]
    (kernel,) = program.items
    return check_attributes(kernel)


def ok(attrs_and_diags) -> KernelAttributes:
    attrs, diags = attrs_and_diags
    assert diags == [], [d.message for d in diags]
    return attrs


def line_of(diag) -> int:
    return diag.span.source.line_col(diag.span.start)[0]


def marked_line(diag, marker: str) -> int:
    """The line of the source of `diag` that carries `marker`."""
    lines = diag.span.source.text.split("\n")
    (number,) = [i + 1 for i, line in enumerate(lines) if line.rstrip().endswith(marker)]
    return number


# ---------------------------------------------------------------------------
# Accepted


def test_no_attributes_gives_the_defaults():
    attrs = ok(ph("kernel k(A: tensor<f32>[N]) { }"))
    assert attrs == KernelAttributes()
    assert attrs.launch == Launch(threads=256, min_blocks=None, max_regs=None)
    assert attrs.tensorcore is None and attrs.registers == ()
    assert not (attrs.pipeline or attrs.padstage or attrs.dynshared or attrs.persistent)
    assert len(attrs.space) == 1 and attrs.space.first_choice() == {}


EVERY_PH = """
@autotune(TILE_M in [16, 256], TILE_K in [4, 32], U in [1, 3, 2])
@cluster(CM in [1024, 4096])
@aligned(M = TILE_M, K = 16)
@launch(128, 2, 64)
@tensorcore(wmma)
@registers(acc, s)
@pipeline
@padstage
@dynshared
@persistent
kernel k(A: tensor<f32>[M, K], B: tensor<f32>[K, 64], alpha: f32) {
  var acc: tile<f32>[TILE_M, 1] = 0.0
  for i in range(0, 4) {
    var s: tile<f32>[1, 32] = 0.0
  }
}
"""

EVERY_PY = """
@ph.autotune(TILE_M=[16, 256], TILE_K=[4, 32], U=[1, 3, 2])
@ph.cluster(CM=[1024, 4096])
@ph.aligned(M="TILE_M", K=16)
@ph.launch(128, 2, 64)
@ph.tensorcore("wmma")
@ph.registers("acc", "s")
@ph.pipeline
@ph.padstage
@ph.dynshared
@ph.persistent
def k(A: ph.tensor[ph.f32][M, K], B: ph.tensor[ph.f32][K, 64], alpha: ph.f32):
    acc: ph.var[ph.tile[ph.f32][TILE_M, 1]] = 0.0
    for i in range(0, 4):
        s: ph.var[ph.tile[ph.f32][1, 32]] = 0.0
"""


@pytest.mark.parametrize("check", [lambda: ph(EVERY_PH), lambda: py(EVERY_PY)], ids=["ph", "py"])
def test_every_attribute_is_read(check):
    attrs = ok(check())
    assert attrs.autotune == {
        "TILE_M": (16, 32, 64, 128, 256),
        "TILE_K": (4, 8, 16, 32),
        "U": (1, 3, 2),  # a list keeps the order it is written in
    }
    assert attrs.cluster == {"CM": (1024, 2048, 4096)}
    assert attrs.aligned == {"M": "TILE_M", "K": 16}
    assert attrs.launch == Launch(128, 2, 64)
    assert attrs.launch.warps == 4
    assert attrs.tensorcore == "wmma"
    assert attrs.registers == ("acc", "s")
    assert attrs.pipeline and attrs.padstage and attrs.dynshared and attrs.persistent
    assert list(attrs.spans) == [
        "autotune", "cluster", "aligned", "launch", "tensorcore",
        "registers", "pipeline", "padstage", "dynshared", "persistent",
    ]  # fmt: skip
    assert attrs.spans["launch"].text.startswith("@")
    assert attrs.dim_spans["TILE_K"].text.startswith("TILE_K")
    assert attrs.space == Space(attrs.autotune)


def test_both_spellings_read_the_same():
    assert ok(ph(EVERY_PH)) == ok(py(EVERY_PY))
    assert hash(ok(ph(EVERY_PH))) == hash(ok(py(EVERY_PY)))


@pytest.mark.parametrize(
    ("values", "choices"),
    [
        ("[16, 256]", (16, 32, 64, 128, 256)),
        ("[4, 32]", (4, 8, 16, 32)),
        ("[1, 2]", (1, 2)),
        ("[3, 24]", (3, 6, 12, 24)),
        ("[64]", (64,)),  # one value fixes the constant (SPEC's `D in [64]`)
        ("[128, 32, 64]", (128, 32, 64)),
        ("[5, 7, 9, 11]", (5, 7, 9, 11)),
    ],
)
def test_search_values(values, choices):
    attrs = ok(ph(f"@autotune(X in {values})\nkernel k(A: tensor<f32>[N]) {{ }}"))
    assert attrs.autotune == {"X": choices}
    attrs = ok(py(f"@ph.autotune(X={values})\ndef k(A: ph.tensor[ph.f32][N]):\n    pass\n"))
    assert attrs.autotune == {"X": choices}


@pytest.mark.parametrize(
    ("text", "mode"),
    [("@tensorcore", "sync"), ("@tensorcore(sync)", "sync"), ("@tensorcore(wmma)", "wmma")],
)
def test_tensorcore_paths(text, mode):
    assert ok(ph(f"{text}\nkernel k() {{ }}")).tensorcore == mode


@pytest.mark.parametrize(
    ("args", "launch"),
    [
        ("1", Launch(1)),
        ("1024", Launch(1024)),
        ("256, 1", Launch(256, 1)),
        ("96, 4, 16", Launch(96, 4, 16)),
        ("64, 1, 255", Launch(64, 1, 255)),
    ],
)
def test_launch_limits_accepted(args, launch):
    assert ok(ph(f"@launch({args})\nkernel k() {{ }}")).launch == launch


def test_warps_of_a_launch():
    assert Launch(96).warps == 3
    assert Launch(100).warps is None  # ctx.warps needs a whole number of warps


def test_search_dims_may_share_a_tensor_dimension_and_the_cluster():
    attrs = ok(
        ph("""
        @cluster(BR in [1024, 4096])
        @autotune(D in [64], BR in [32, 128])
        @aligned(D = 16, N = BR)
        kernel k(Q: tensor<f32>[N, D]) { }
        """)
    )
    assert attrs.autotune == {"D": (64,), "BR": (32, 64, 128)}
    assert attrs.cluster == {"BR": (1024, 2048, 4096)}
    assert attrs.aligned == {"D": 16, "N": "BR"}


def test_flags_take_empty_parentheses():
    assert ok(ph("@pipeline()\nkernel k() { }")).pipeline
    assert ok(py("@ph.persistent()\ndef k():\n    pass\n")).persistent


# ---------------------------------------------------------------------------
# Refused: (code, message fragment, `.ph` kernel, Python kernel or None)

CASES = {
    "unknown": (
        "E0200",
        "unknown attribute `@lanuch`",
        "@lanuch(128)  // <-\nkernel k() { }",
        None,  # the Python front end refuses an unknown `ph.` name itself
    ),
    "planned_readonly": (
        "E0201",
        "`@readonly` is planned but not implemented yet",
        "@readonly  // <-\nkernel k() { }",
        "@ph.readonly  # <-\ndef k():\n    pass",
    ),
    "planned_fast_math": (
        "E0201",
        "`@fast_math` is planned but not implemented yet",
        "@fast_math  // <-\nkernel k() { }",
        None,
    ),
    "planned_assert_coalesced": (
        "E0201",
        "`@ph.assert_coalesced` is planned",
        None,
        "@ph.assert_coalesced  # <-\ndef k():\n    pass",
    ),
    "twice": (
        "E0202",
        "`@launch` is given twice",
        "@launch(128)\n@pipeline\n@launch(256)  // <-\nkernel k() { }",
        "@ph.launch(128)\n@ph.launch(256)  # <-\ndef k():\n    pass",
    ),
    "autotune_keyword": (
        "E0203",
        "takes only search dimensions",
        "@autotune(X in [1, 2], Y = 4)  // <-\nkernel k() { }",
        "@ph.autotune(X=[1, 2], Y=4)  # <-\ndef k():\n    pass",
    ),
    "cluster_positional": (
        "E0203",
        "takes only search dimensions",
        "@cluster(4)  // <-\nkernel k() { }",
        "@ph.cluster(4)  # <-\ndef k():\n    pass",
    ),
    "autotune_empty": (
        "E0204",
        "needs at least one search dimension",
        "@autotune  // <-\nkernel k() { }",
        "@ph.autotune()  # <-\ndef k():\n    pass",
    ),
    "zero": (
        "E0205",
        "`X` cannot take the value 0",
        "@autotune(X in [0, 8])  // <-\nkernel k() { }",
        "@ph.autotune(X=[0, 8])  # <-\ndef k():\n    pass",
    ),
    "dim_twice": (
        "E0206",
        "`X` is named twice in `@autotune`",
        "@autotune(X in [1, 2],\n          X in [4])  // <-\nkernel k() { }",
        None,  # Python refuses a repeated keyword argument itself
    ),
    "dim_is_param": (
        "E0207",
        "the search dimension `alpha` has the name of a kernel parameter",
        "@autotune(alpha in [1, 2])  // <-\nkernel k(alpha: f32) { }",
        "@ph.autotune(alpha=[1, 2])  # <-\ndef k(alpha: ph.f32):\n    pass",
    ),
    "cluster_dim_is_param": (
        "E0207",
        "the search dimension `A` has the name",
        "@cluster(A in [1, 2])  // <-\nkernel k(A: tensor<f32>[N]) { }",
        None,
    ),
    "bounds_equal": (
        "E0208",
        "the bounds of `X` are equal",
        "@autotune(X in [32, 32])  // <-\nkernel k() { }",
        "@ph.autotune(X=[32, 32])  # <-\ndef k():\n    pass",
    ),
    "bounds_reversed": (
        "E0208",
        "the bounds of `X` are out of order",
        "@autotune(X in [256, 16])  // <-\nkernel k() { }",
        "@ph.autotune(X=[256, 16])  # <-\ndef k():\n    pass",
    ),
    "bound_unreached": (
        "E0209",
        "`X` doubles from 16 and never reaches 100",
        "@autotune(X in [16, 100])  // <-\nkernel k() { }",
        "@ph.autotune(X=[16, 100])  # <-\ndef k():\n    pass",
    ),
    "list_repeat": (
        "E0210",
        "`X` lists 64 twice",
        "@autotune(X in [64, 128, 64])  // <-\nkernel k() { }",
        "@ph.autotune(X=[64, 128, 64])  # <-\ndef k():\n    pass",
    ),
    "aligned_not_a_dim": (
        "E0211",
        "`Q` is not a dimension of a tensor parameter",
        "@aligned(Q = 16)  // <-\nkernel k(A: tensor<f32>[M]) { }",
        "@ph.aligned(Q=16)  # <-\ndef k(A: ph.tensor[ph.f32][M]):\n    pass",
    ),
    "aligned_scalar_param": (
        "E0211",
        "`n` is not a dimension of a tensor parameter",
        "@aligned(n = 16)  // <-\nkernel k(A: tensor<f32>[M], n: i32) { }",
        None,
    ),
    "aligned_positional": (
        "E0203",
        "`@aligned` takes only `DIM = tile` arguments",
        "@aligned(16)  // <-\nkernel k(A: tensor<f32>[M]) { }",
        None,
    ),
    "aligned_positional_py": (
        "E0203",
        "`@ph.aligned` takes only `DIM=tile` arguments",
        None,
        '@ph.aligned("M")  # <-\ndef k(A: ph.tensor[ph.f32][M]):\n    pass',
    ),
    "aligned_search_dim": (
        "E0203",
        "`@aligned` takes only",
        "@aligned(M in [16, 32])  // <-\nkernel k(A: tensor<f32>[M]) { }",
        None,
    ),
    "aligned_empty": (
        "E0204",
        "`@aligned` needs a dimension and its tile",
        "@aligned()  // <-\nkernel k(A: tensor<f32>[M]) { }",
        None,
    ),
    "aligned_twice": (
        "E0206",
        "`M` is named twice in `@aligned`",
        "@aligned(M = 16, M = 32)  // <-\nkernel k(A: tensor<f32>[M]) { }",
        None,
    ),
    "aligned_unknown_tile": (
        "E0212",
        "`TILE` is not an `@autotune` constant",
        "@autotune(TILE_M in [16, 64])\n@aligned(M = TILE)  // <-\nkernel k(A: tensor<f32>[M]) { }",
        '@ph.autotune(TILE_M=[16, 64])\n@ph.aligned(M="TILE")  # <-\n'
        "def k(A: ph.tensor[ph.f32][M]):\n    pass",
    ),
    "aligned_cluster_tile": (
        "E0212",
        "`CM` is not an `@autotune` constant",
        "@cluster(CM in [16, 64])\n@aligned(M = CM)  // <-\nkernel k(A: tensor<f32>[M]) { }",
        None,
    ),
    "aligned_zero": (
        "E0212",
        "`M` cannot be aligned to `0`",
        "@aligned(M = 0)  // <-\nkernel k(A: tensor<f32>[M]) { }",
        "@ph.aligned(M=0)  # <-\ndef k(A: ph.tensor[ph.f32][M]):\n    pass",
    ),
    "aligned_float": (
        "E0212",
        "`M` cannot be aligned to `1.5`",
        "@aligned(M = 1.5)  // <-\nkernel k(A: tensor<f32>[M]) { }",
        "@ph.aligned(M=1.5)  # <-\ndef k(A: ph.tensor[ph.f32][M]):\n    pass",
    ),
    "launch_empty": (
        "E0204",
        "`@launch` needs the CTA size",
        "@launch  // <-\nkernel k() { }",
        "@ph.launch()  # <-\ndef k():\n    pass",
    ),
    "launch_four": (
        "E0204",
        "takes at most three arguments",
        "@launch(256, 1, 64, 1)  // <-\nkernel k() { }",
        "@ph.launch(256, 1, 64, 1)  # <-\ndef k():\n    pass",
    ),
    "launch_name": (
        "E0216",
        "`THREADS` is not an `@autotune` dimension",
        "@launch(THREADS)  // <-\nkernel k() { }",
        '@ph.launch("THREADS")  # <-\ndef k():\n    pass',
    ),
    "launch_min_blocks_name": (
        "E0216",
        "`M` is not an `@",
        "@autotune(T in [128, 256])\n@launch(128, M)  // <-\nkernel k() { }",
        '@ph.autotune(T=[128, 256])\n@ph.launch(128, "M")  # <-\ndef k():\n    pass',
    ),
    "launch_bool": (
        "E0203",
        "takes only integer literals",
        "@launch(true)  // <-\nkernel k() { }",
        "@ph.launch(True)  # <-\ndef k():\n    pass",
    ),
    "launch_keyword": (
        "E0203",
        "takes only integer literals",
        "@launch(threads = 128)  // <-\nkernel k() { }",
        "@ph.launch(threads=128)  # <-\ndef k():\n    pass",
    ),
    "launch_zero_threads": (
        "E0213",
        "threads must be from 1 to 1024, found 0",
        "@launch(0)  // <-\nkernel k() { }",
        "@ph.launch(0)  # <-\ndef k():\n    pass",
    ),
    "launch_too_many_threads": (
        "E0213",
        "threads must be from 1 to 1024, found 1025",
        "@launch(1025)  // <-\nkernel k() { }",
        "@ph.launch(1025)  # <-\ndef k():\n    pass",
    ),
    "launch_min_blocks": (
        "E0213",
        "min_blocks must be from 1 to 32, found 0",
        "@launch(256, 0)  // <-\nkernel k() { }",
        "@ph.launch(256, 0)  # <-\ndef k():\n    pass",
    ),
    "launch_min_blocks_high": (
        "E0213",
        "min_blocks must be from 1 to 32, found 4294967296",
        "@launch(256, 4294967296)  // <-\nkernel k() { }",
        "@ph.launch(256, 4294967296)  # <-\ndef k():\n    pass",
    ),
    "launch_few_regs": (
        "E0213",
        "max_regs must be from 16 to 255, found 15",
        "@launch(256, 1, 15)  // <-\nkernel k() { }",
        "@ph.launch(256, 1, 15)  # <-\ndef k():\n    pass",
    ),
    "launch_many_regs": (
        "E0213",
        "max_regs must be from 16 to 255, found 256",
        "@launch(256, 1, 256)  // <-\nkernel k() { }",
        "@ph.launch(256, 1, 256)  # <-\ndef k():\n    pass",
    ),
    "tensorcore_path": (
        "E0214",
        "unknown tensor-core path `mma`",
        "@tensorcore(mma)  // <-\nkernel k() { }",
        '@ph.tensorcore("mma")  # <-\ndef k():\n    pass',
    ),
    "tensorcore_int": (
        "E0214",
        "unknown tensor-core path `16`",
        "@tensorcore(16)  // <-\nkernel k() { }",
        None,
    ),
    "tensorcore_two": (
        "E0204",
        "`@tensorcore` takes at most one path",
        "@tensorcore(sync, wmma)  // <-\nkernel k() { }",
        '@ph.tensorcore("sync", "wmma")  # <-\ndef k():\n    pass',
    ),
    "tensorcore_keyword": (
        "E0203",
        "`@tensorcore` takes only a path",
        "@tensorcore(path = wmma)  // <-\nkernel k() { }",
        None,
    ),
    "registers_empty": (
        "E0204",
        "`@registers` needs the tiles to keep in registers",
        "@registers  // <-\nkernel k() { }",
        "@ph.registers()  # <-\ndef k():\n    pass",
    ),
    "registers_int": (
        "E0203",
        "`@registers` takes only names of `var` tiles",
        "@registers(4)  // <-\nkernel k() { }",
        "@ph.registers(4)  # <-\ndef k():\n    pass",
    ),
    "registers_twice": (
        "E0206",
        "`acc` is named twice in `@registers`",
        "@registers(acc, acc)  // <-\nkernel k() {\n  var acc = 0.0\n}",
        '@ph.registers("acc", "acc")  # <-\ndef k():\n    acc: ph.var = 0.0',
    ),
    "registers_undeclared": (
        "E0215",
        "`@registers` names `accum`, which no `var` of the kernel declares",
        "@registers(accum)  // <-\nkernel k() {\n  var acc = 0.0\n}",
        '@ph.registers("accum")  # <-\ndef k():\n    acc: ph.var = 0.0',
    ),
    "registers_let": (
        "E0215",
        "names `acc`, which no `var`",
        "@registers(acc)  // <-\nkernel k() {\n  let acc = 0.0\n}",
        None,
    ),
    **{
        f"{flag}_args": (
            "E0204",
            "takes no arguments",
            f"@{flag}(1)  // <-\nkernel k() {{ }}",
            f"@ph.{flag}(1)  # <-\ndef k():\n    pass",
        )
        for flag in ("padstage", "dynshared", "persistent")
    },
    "pipeline_args": (
        "E0203",
        "takes only `stages`",
        "@pipeline(1)  // <-\nkernel k() { }",
        "@ph.pipeline(1)  # <-\ndef k():\n    pass",
    ),
    "pipeline_stages": (
        "E0217",
        "stages must be from 2 to 8, found 1",
        "@pipeline(stages = 1)  // <-\nkernel k() { }",
        "@ph.pipeline(stages=1)  # <-\ndef k():\n    pass",
    ),
    "pipeline_cluster": (
        "E0218",
        "cluster must be 1 or 2, found 4",
        "@pipeline(cluster = 4)  // <-\nkernel k() { }",
        "@ph.pipeline(cluster=4)  # <-\ndef k():\n    pass",
    ),
}

PARAMS = [
    pytest.param(code, fragment, spelling, text, id=f"{name}-{spelling}")
    for name, (code, fragment, ph_text, py_text) in CASES.items()
    for spelling, text in (("ph", ph_text), ("py", py_text))
    if text is not None
]


@pytest.mark.parametrize(("code", "fragment", "spelling", "text"), PARAMS)
def test_refused(code, fragment, spelling, text):
    _, diags = ph(text) if spelling == "ph" else py(text)
    marker = "// <-" if spelling == "ph" else "# <-"
    assert [d.code for d in diags] == [code], [d.message for d in diags]
    (diag,) = diags
    assert diag.severity == "error"
    if spelling == "py":
        fragment = fragment.replace("`@", "`@ph.").replace("`@ph.ph.", "`@ph.")
    assert fragment in diag.message
    assert line_of(diag) == marked_line(diag, marker)
    assert diag.message[0].islower() or diag.message[0] == "`"
    assert not diag.message.endswith(".")


def test_every_code_is_explained():
    used = {code for code, *_ in CASES.values()}
    assert used == {f"E02{n:02d}" for n in range(19)}
    assert used <= set(codes.known_codes())


# ---------------------------------------------------------------------------
# What a refusal says besides its message


def test_did_you_mean_over_the_attributes():
    _, (diag,) = ph("@pipline\nkernel k() { }")
    assert diag.help == ("did you mean `@pipeline`?",)
    assert diag.span.text == "pipline"
    _, (diag,) = ph("@zzz\nkernel k() { }")
    assert diag.help == ()


def test_twice_labels_the_first():
    _, (diag,) = ph("@autotune(X in [1, 2])\n@autotune(Y in [1, 2])\nkernel k() { }")
    assert diag.code == "E0202"
    (first,) = diag.secondary
    assert line_of(first) == 1 and first.message == "first given here"
    assert diag.help == ("merge their arguments into one",)


def test_unreached_bound_names_the_nearest():
    _, (diag,) = ph("@autotune(X in [16, 100])\nkernel k() { }")
    assert diag.span.text == "100"
    assert "the nearest bound the steps reach is 128" in diag.help[0]
    assert "`X in [16, 128]`" in diag.help[0]
    _, (diag,) = ph("@autotune(X in [16, 70])\nkernel k() { }")
    assert "reach is 64" in diag.help[0]
    # 16 itself is no upper bound, so [16, 20] points up to 32.
    _, (diag,) = ph("@autotune(X in [16, 20])\nkernel k() { }")
    assert "reach is 32" in diag.help[0]
    _, (diag,) = py("@ph.autotune(X=[16, 100])\ndef k():\n    pass\n")
    assert "`X=[16, 128]`" in diag.help[0]


def test_reversed_bounds_help_swaps_them():
    _, (diag,) = ph("@autotune(X in [256, 16])\nkernel k() { }")
    assert diag.help == ("write `X in [16, 256]`",)
    assert diag.span.text == "256, 16"


def test_repeats_label_the_first():
    _, (diag,) = ph("@autotune(X in [64, 128, 64])\nkernel k() { }")
    (first,) = diag.secondary
    assert first.span.start < diag.span.start and first.span.text == "64"


def test_param_label_points_at_the_parameter():
    _, (diag,) = ph("@autotune(n in [1, 2])\nkernel k(A: tensor<f32>[N],\n n: i32) { }")
    (param,) = diag.secondary
    assert line_of(param) == 3 and param.span.text == "n"


def test_aligned_suggestions():
    _, (diag,) = ph("@aligned(MM = 16)\nkernel k(A: tensor<f32>[M, N]) { }")
    assert diag.help == ("did you mean `M`?",)
    assert diag.notes == ("the symbolic dimensions are `M`, `N`",)
    _, (diag,) = ph(
        "@autotune(TILE_M in [16, 64])\n@aligned(M = TILE)\nkernel k(A: tensor<f32>[M]) { }"
    )
    assert diag.help == ("did you mean `TILE_M`?",)
    _, (diag,) = py('@ph.autotune(TILE_M=[16, 64])\n@ph.aligned(M="TILE_N")\n'
                    "def k(A: ph.tensor[ph.f32][M]):\n    pass\n")  # fmt: skip
    assert diag.help == ('did you mean `"TILE_M"`?',)


def test_a_literal_dimension_cannot_be_aligned():
    _, (diag,) = ph("@aligned(K = 16)\nkernel k(A: tensor<f32>[M, 64]) { }")
    assert diag.code == "E0211"
    assert diag.notes == ("the symbolic dimensions are `M`",)


def test_registers_suggestion_in_python():
    _, (diag,) = py('@ph.registers("accum")\ndef k():\n    acc: ph.var = 0.0\n')
    assert diag.help == ('did you mean `"acc"`?',)


def test_independent_errors_are_all_reported_in_source_order():
    _, diags = ph("""
    @aligned(M = X)
    @autotune(A in [0, 4], B in [8, 4], C in [1, 1, 2])
    @launch(0, 0, 0)
    @nope
    kernel k(A: tensor<f32>[M]) { }
    """)
    assert [d.code for d in diags] == [
        "E0212", "E0207", "E0208", "E0210", "E0213", "E0213", "E0213", "E0200",
    ]  # fmt: skip
    starts = [d.span.start for d in diags]
    assert starts == sorted(starts)


def test_refused_attributes_keep_their_defaults():
    attrs, diags = ph("@launch(4096)\n@autotune(X in [3, 7], Y in [2, 8])\nkernel k() { }")
    assert len(diags) == 2
    assert attrs.launch == Launch()
    assert attrs.autotune == {"Y": (2, 4, 8)}


# ---------------------------------------------------------------------------
# SPEC.md "Examples" check cleanly, in both spellings


EXAMPLES = {
    "sgemm": {
        "autotune": {
            "TILE_M": (32, 64, 128, 256),
            "TILE_N": (32, 64, 128, 256),
            "TILE_K": (4, 8, 16, 32),
        },
        "aligned": {"M": "TILE_M", "N": "TILE_N", "K": "TILE_K"},
        "pipeline": True,
        "launch": Launch(256),
    },
    "flash_attention": {
        "autotune": {"D": (64,), "BR": (32, 64, 128), "BC": (32, 64, 128)},
        "cluster": {"BR": (1024, 2048, 4096), "BC": (1024, 2048, 4096)},
    },
    "kda": {"autotune": {"D": (64,), "C": (32, 64, 128)}},
    "saxpy": {"autotune": {"BLOCK": tuple(16 << i for i in range(10))}},
}


@pytest.mark.parametrize("suffix", [".ph", ".py"])
@pytest.mark.parametrize("name", list(EXAMPLES))
def test_examples(name, suffix):
    path = REPO / "examples" / f"{name}{suffix}"
    source = SourceFile(str(path), path.read_text(encoding="utf-8"))
    program, diags = (parse if suffix == ".ph" else translate_module)(source)
    assert diags == []
    (kernel,) = program.items
    attrs = ok(check_attributes(kernel))
    assert attrs == KernelAttributes(**EXAMPLES[name])


def test_sgemm_space():
    path = REPO / "examples" / "sgemm.ph"
    program, _ = parse(SourceFile(str(path), path.read_text(encoding="utf-8")))
    space = ok(check_attributes(program.items[0])).space
    assert len(space) == 64
    assert space.first_choice() == {"TILE_M": 32, "TILE_N": 32, "TILE_K": 4}
    assert space.variant_key(space.first_choice()) == "TILE_M=32,TILE_N=32,TILE_K=4"
    keys = [space.variant_key(v) for v in space.variants()]
    assert keys[1] == "TILE_M=32,TILE_N=32,TILE_K=8"
    assert keys[-1] == "TILE_M=256,TILE_N=256,TILE_K=32"


# ---------------------------------------------------------------------------
# The UI cases of tests/ui/sema carry their expected errors on their lines; until the
# checker runs in the driver, compare them here against `check_attributes` alone.

UI_CASES = sorted((REPO / "tests" / "ui" / "sema").glob("attributes*.p[hy]"))
_ANNOTATION = re.compile(r"(//|#)~(\^*)\s*ERROR\s*(.*?)\s*$")


@pytest.mark.parametrize("path", UI_CASES, ids=lambda p: p.name)
def test_ui_annotations_match(path):
    source = SourceFile(path.name, path.read_text(encoding="utf-8"))
    program, diags = (parse if path.suffix == ".ph" else translate_module)(source)
    assert diags == [], [d.message for d in diags]
    found = [d for kernel in program.items for d in check_attributes(kernel)[1]]
    wanted = []
    for number, line in enumerate(source.text.split("\n"), start=1):
        match = _ANNOTATION.search(line)
        if match:
            wanted.append((number - len(match.group(2)), match.group(3)))
    for line, fragment in wanted:
        assert any(line_of(d) == line and fragment in d.message for d in found), (line, fragment)
    annotated = {line for line, _ in wanted}
    assert all(line_of(d) in annotated for d in found)
    assert len(found) >= len(wanted)
