"""`@launch(T)` with `T` an `@autotune` dimension: the CTA size searched per variant.

Both spellings: `@launch(T)` in `.ph`, `@ph.launch("T")` in Python. The attribute
keeps the name; each variant resolves it (`ctx.threads`, `ctx.warps` and the hir
kernel's `threads` follow), and a variant whose value is outside 1..1024 is refused
at the attribute, naming the variant.
"""

from __future__ import annotations

import pytest
from sema_check_helpers import assert_refused, check_one, line_of, marked_line, program_of

from phobos.sema import hir
from phobos.sema.attributes import Launch, check_attributes
from phobos.sema.check import check_kernel
from phobos.sema.space import Space

PH = """\
@autotune(BLOCK in [1024, 2048], T in [256, 128, 512])
@launch(T, 2)
kernel k(x: tensor<f32>[N], y: tensor<f32>[N]) {
  let base = ctx.block.x * BLOCK
  y[base :+ BLOCK] = x[base :+ BLOCK] * f32(ctx.threads) + f32(ctx.warps)
}
"""

PY = """\
@ph.kernel
@ph.autotune(BLOCK=[1024, 2048], T=[256, 128, 512])
@ph.launch("T", 2)
def k(x: ph.tensor[ph.f32][N], y: ph.tensor[ph.f32][N]):
    base: ph.let = ph.ctx.block.x * BLOCK
    y[base:+BLOCK] = x[base:+BLOCK] * ph.f32(ph.ctx.threads) + ph.f32(ph.ctx.warps)
"""

SPELLINGS = pytest.mark.parametrize(("source", "name"), [(PH, "k.ph"), (PY, "k.py")])


@SPELLINGS
def test_the_attribute_keeps_the_name(source, name):
    (kernel,) = program_of(source, name).items
    attrs, diags = check_attributes(kernel)
    assert diags == []
    assert attrs.launch == Launch("T", 2)
    assert attrs.launch.warps is None  # not known before a variant is chosen
    assert attrs.autotune["T"] == (256, 128, 512)


@SPELLINGS
def test_each_variant_resolves_its_own_threads(source, name):
    (kernel,) = program_of(source, name).items
    attrs, _ = check_attributes(kernel)
    seen = {}
    for variant in Space(attrs.autotune).variants():
        launch = attrs.launch.resolve(variant)
        assert launch == Launch(variant["T"], 2)
        seen[variant["T"]] = launch.warps
    assert seen == {256: 8, 128: 4, 512: 16}


@SPELLINGS
def test_hir_threads_per_variant(source, name):
    program = program_of(source, name)
    for t in (256, 128, 512):
        hk, diags = check_kernel(program, "k", {"BLOCK": 1024, "T": t})
        assert diags == [], [d.message for d in diags]
        assert hk.threads == t
        assert dict(hk.variant) == {"BLOCK": 1024, "T": t}
        # ctx.threads and ctx.warps fold to this variant's values
        text = hir.dump(hk)
        assert f"// threads {t}," in text
        assert f"* {t}.0: " in text and f"+ {t // 32}.0: " in text


@SPELLINGS
def test_the_first_choice_is_the_default_variant(source, name):
    hk, diags = check_one(source, "k", name)
    assert diags == [] and hk.threads == 256


def test_a_literal_launch_is_unchanged():
    src = "@autotune(T in [64, 128])\n@launch(96)\nkernel k() { }\n"
    for t in (64, 128):
        hk, diags = check_one(src, "k", variant={"T": t})
        assert diags == [] and hk.threads == 96


# ---------------------------------------------------------------------------
# Refusals, each at its line


OUT_OF_RANGE_PH = """\
@autotune(T in [2048, 256, 128])
@launch(T)  // <-
kernel k(x: tensor<f32>[N]) { }
"""

OUT_OF_RANGE_PY = """\
@ph.kernel
@ph.autotune(T=[2048, 256, 128])
@ph.launch("T")  # <-
def k(x: ph.tensor[ph.f32][N]):
    pass
"""


def test_a_variant_out_of_range_is_refused_naming_it():
    diags = assert_refused(OUT_OF_RANGE_PH, "E0213", "`@launch` threads must be from 1 to 1024")
    (diag,) = diags
    assert "the variant `T=2048` gives `T` = 2048" in diag.message
    assert diag.primary.span.text == "T"
    assert [label.span.text for label in diag.secondary] == ["T in [2048, 256, 128]"]
    assert diag.help == ("drop 2048 from `T`'s values",)


def test_a_variant_out_of_range_is_refused_in_python():
    diags = assert_refused(OUT_OF_RANGE_PY, "E0213", "`@ph.launch` threads", name="k.py")
    assert "`T=2048`" in diags[0].message and diags[0].primary.span.text == '"T"'


def test_only_the_bad_variant_is_refused():
    hk, diags = check_one(OUT_OF_RANGE_PH.replace("  // <-", ""), "k", variant={"T": 256})
    assert diags == [] and hk.threads == 256
    # a variant given from outside the space is checked too
    hk, diags = check_one(OUT_OF_RANGE_PH.replace("  // <-", ""), "k", variant={"T": 0})
    assert hk is None and [d.code for d in diags] == ["E0213"]
    assert "`T=0`" in diags[0].message


def test_the_variant_named_is_the_whole_variant():
    src = "@autotune(B in [16, 32], T in [64, 4096])\n@launch(T)\nkernel k() { }\n"
    _, diags = check_one(src, "k", variant={"B": 32, "T": 4096})
    assert "the variant `B=32, T=4096`" in diags[0].message


NOT_A_DIM = [
    ("@autotune(BLOCK in [16, 32])\n@launch(T)  // <-\nkernel k() { }\n", "k.ph", "`T`"),
    (
        '@ph.kernel\n@ph.autotune(BLOCK=[16, 32])\n@ph.launch("T")  # <-\ndef k():\n    pass\n',
        "k.py",
        "`T`",
    ),
    ("@launch(N)  // <-\nkernel k(x: tensor<f32>[N]) { }\n", "k.ph", "`N`"),
]


@pytest.mark.parametrize(("source", "name", "what"), NOT_A_DIM)
def test_a_name_not_searched_is_refused(source, name, what):
    diags = assert_refused(source, "E0216", f"{what} is not an", name=name)
    (diag,) = diags
    assert "autotune` dimension" in diag.message
    assert diag.help and ("search it" in diag.help[0] or "did you mean" in diag.help[0])


def test_a_misspelt_dimension_gets_a_did_you_mean():
    src = "@autotune(THREADS in [128, 256])\n@launch(THREAD)\nkernel k() { }\n"
    (diag,) = check_one(src, "k")[1]
    assert diag.code == "E0216" and diag.help == ("did you mean `THREADS`?",)


def test_a_cluster_dimension_is_labelled():
    src = "@cluster(C in [1, 2])\n@launch(C)  // <-\nkernel k() { }\n"
    (diag,) = assert_refused(src, "E0216", "`C` is not an `@autotune` dimension")
    assert "@cluster" in diag.primary.message


OCCUPANCY = """
@autotune(MB in [1, 2], R in [64, 128])
@launch(128, MB, R)
kernel k(x: tensor<f32>[N], y: tensor<f32>[N]) {
  y[ctx.block.x * 128 :+ 128] = x[ctx.block.x * 128 :+ 128]
}
"""


@pytest.mark.parametrize(("mb", "regs"), [(1, 64), (2, 64), (2, 128)])
def test_min_blocks_and_max_regs_take_autotune_names(mb, regs):
    # ours: each variant asks ptxas for its own occupancy, and only that variant's
    from phobos.lower.kernel import lower_kernel
    from phobos.ptx.emit import emit_module
    from phobos.source import SourceFile
    from phobos.syntax.parser import parse

    program, _ = parse(SourceFile("k.ph", OCCUPANCY))
    kernel, diags = check_kernel(program, "k", {"MB": mb, "R": regs})
    assert kernel is not None, [d.message for d in diags]
    assert kernel.attrs.launch == Launch(128, "MB", "R")
    lowered, diags = lower_kernel(kernel, "sm_90")
    assert (lowered.min_blocks, lowered.max_regs) == (mb, regs)
    ptx = emit_module([lowered], "sm_90")
    assert f".minnctapersm {mb}" in ptx and f".maxnreg {regs}" in ptx
    assert f".minnctapersm {3 - mb}" not in ptx


@pytest.mark.parametrize(
    ("source", "name"),
    [
        ("@launch(128, 2.5)  // <-\nkernel k() { }\n", "k.ph"),
        ("@ph.kernel\n@ph.launch(128, 1, 64.0)  # <-\ndef k():\n    pass\n", "k.py"),
    ],
)
def test_min_blocks_and_max_regs_are_integers_or_names(source, name):
    (diag,) = assert_refused(source, "E0203", "takes only integer literals", name=name)
    assert "or as names" in diag.help[0]
    assert line_of(diag) == marked_line(source, name)
