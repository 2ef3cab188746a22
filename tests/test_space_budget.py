"""The budget of a whole `@autotune` space under `--all-variants`: the variants of one
kernel share `SPACE_INSTRUCTIONS`, spent in the space's order, so a space of hundreds of
variants that each stop at their own budget (E0515) is bounded as a whole. The variants
past it are left out with an E0515 naming the bound, and the answer does not depend on
how many processes lower them."""

import random
from types import SimpleNamespace

import pytest

from phobos import driver, space_budget
from phobos.lower import builder
from phobos.source import SourceFile

# Each turn of the unrolled loop emits a few instructions: the variants' costs grow with U.
UNROLLED = """@autotune(U in [64, 65536])
kernel k(x: tensor<f32>[N], y: tensor<f32>[N]) {
  var acc = 0.0
  for<unroll U> i in range(0, U) {
    acc = acc + x[i]
  }
  y[0] = acc
}
"""


@pytest.fixture(autouse=True)
def no_dump(monkeypatch):
    monkeypatch.delenv("PHOBOS_DUMP", raising=False)


def compile_every_variant(monkeypatch, jobs=1):
    """Compile UNROLLED's 11 variants under a small budget a variant (5,000) and a space
    (12,000); (the result, the variants the lowering was asked for)."""
    monkeypatch.setattr(builder, "MAX_INSTRUCTIONS", 5_000)
    monkeypatch.setattr(space_budget, "SPACE_INSTRUCTIONS", 12_000)
    asked = []
    real = driver.lower_counted

    def counted(checked, *args, **kwargs):
        asked.append(dict(checked.variant)["U"])
        return real(checked, *args, **kwargs)

    monkeypatch.setattr(driver, "lower_counted", counted)
    options = driver.Options(chip="sm_90", all_variants=True, jobs=jobs)
    result = driver.compile_source(SourceFile("k.ph", UNROLLED), "ptx", ".ph", options)
    return result, asked


def test_the_variants_past_the_space_budget_are_left_out_unlowered(monkeypatch):
    result, asked = compile_every_variant(monkeypatch)
    assert result.text is not None  # the first variants compiled
    said = [d.message for d in result.diagnostics]
    refused = [m for m in said if "the budget of one `@autotune` space" in m]
    assert refused and all(m.startswith("variant U=") for m in refused), said
    # The lowering stopped: the variants left out by the space's budget never started.
    assert len(asked) + len(refused) == 11 and asked == sorted(asked), asked
    assert asked[0] == 64 and 65536 not in asked
    entries = [u for u in asked if f".entry k__U_{u}(" in result.text]
    assert entries and entries == asked[: len(entries)]  # the cheap first ones compiled
    warning = next(d for d in result.diagnostics if "space" in d.message)
    assert any("emitted" in n and "this one was not lowered" in n for n in warning.notes)


def test_a_space_under_its_budget_compiles_whole(monkeypatch):
    monkeypatch.setattr(space_budget, "SPACE_INSTRUCTIONS", 10**9)
    text = UNROLLED.replace("[64, 65536]", "[64, 1024]")
    options = driver.Options(chip="sm_90", all_variants=True)
    result = driver.compile_source(SourceFile("k.ph", text), "ptx", ".ph", options)
    assert not result.diagnostics and result.text.count(".entry") == 5


def test_the_budget_settles_alike_whatever_ran_early():
    """A parallel lowering may start a variant before those ahead of it finish (and then
    drop it), or skip it once they have spent the budget: either way `settle` gives the
    answer of the space's order."""
    rng = random.Random(7)
    for _ in range(300):
        n = rng.randint(1, 12)
        kernels = [SimpleNamespace(name=rng.choice("ab"), span=None) for _ in range(n)]
        kernels.sort(key=lambda k: k.name)  # every variant of one kernel together
        costs = [rng.randint(0, 40) for _ in range(n)]
        budget = space_budget.SpaceBudget(kernels, limit=60)
        whole = budget.settle([SimpleNamespace(lir=1, emitted=c) for c in costs])
        done: list = [None] * n
        for i in rng.sample(range(n), n):  # finished in any order, each asked first
            if budget.wanted(i, done):
                done[i] = SimpleNamespace(lir=1, emitted=costs[i])
        early = budget.settle(done)
        assert [r.lir is not None for r in early] == [r.lir is not None for r in whole]
        for got, want in zip(early, whole, strict=True):
            if want.lir is None:
                assert got.lir is None and got.errors[0].code == "E0515"
            else:
                assert got is not None and got.emitted == want.emitted


def test_the_tuner_shares_the_budget(monkeypatch):
    from phobos.syntax.parser import parse
    from phobos.tune.variants import Compiled, LeftOut, compile_variants

    monkeypatch.setattr(builder, "MAX_INSTRUCTIONS", 5_000)
    monkeypatch.setattr(space_budget, "SPACE_INSTRUCTIONS", 12_000)
    program, _ = parse(SourceFile("k.ph", UNROLLED))
    kernel = SimpleNamespace(program=program, name="k")
    results = compile_variants(kernel, "sm_90", check_races=False, jobs=1)
    assert len(results) == 11 and isinstance(results[0], Compiled)
    past = [r for r in results if isinstance(r, LeftOut) and "`@autotune` space" in r.reason]
    assert past and past[-1].key == "U=65536" and past[0].stage == "compile"
    assert past[0].reason.startswith("error[E0515]: compiling every variant of `k`")
    first = results.index(past[0])
    assert sum(r.emitted for r in results[:first]) >= 12_000  # spent before it, in order
    assert sum(r.emitted for r in results[: first - 1]) < 12_000
