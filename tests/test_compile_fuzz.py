"""The compile fuzzer: seeded mutants of the examples, the test kernels and the
benchmarks' kernels, each driven through the checker, the lowering and PTX emission
for sm_80 and sm_90a, as `phobos-compile --emit ptx` drives a file.

The mutants are `fuzzkit`'s. The semantic ones (numbers set to 0, 1, -1, 2^31, 65536 or
2^32; types swapped among f32, f16, bf16, i8, i32 and bool; built-in names and ctx
fields swapped; shape names swapped with parameter names; attribute arguments
changed) mostly still read, so they reach the checker and the lowering; the syntactic
ones the robustness test feeds the front ends fill a third of the cases. Every
case ends in one of two ways, for each chip:

- diagnostics: every error located, its primary and secondary spans inside the
  source, its code one `--explain` knows, all of them rendering with `render_human`,
  and `phobos-compile` exiting 1;
- PTX, which `ptxas -arch=<chip>` assembles, and `phobos-compile` exiting 0.

No exception escapes (an internal compiler error, exit 101, is a failure), and a
compile ends within `TIME_BOUND` seconds (`ALL_VARIANTS_BOUND` for every variant): the
compile budget (E0515) stops a runaway size well before. One case in four also runs
the command line itself and checks its exit status and output against the driver's;
one in eight compiles every `@autotune` variant besides.

`ptxas` missing skips the assembling alone, which `test_accepted_ptx_is_assembled`
says; under CI (`CI` set) it is a failure. About 800 cases run by default;
`PHOBOS_FUZZ_COMPILE=N` runs about N. A failure names its case; `mutant(kind, path,
case)` rebuilds the text to reproduce it.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import random
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from fuzzkit import MUTATORS, SEMANTIC

from phobos import driver
from phobos.cli import compile as cli
from phobos.diagnostics import codes
from phobos.diagnostics.render import render_human
from phobos.source import SourceFile

ROOT = Path(__file__).resolve().parents[1]
CASES = int(os.environ.get("PHOBOS_FUZZ_COMPILE", "800"))
CHIPS = ("sm_80", "sm_90a")
TIME_BOUND = 20.0  # seconds one compile may take
# ... and one of every `@autotune` variant: the budget bounds each variant, and a space
# of 64 variants, each lowering a second or two before the budget or a limit refuses it
# (sgemm at `@launch(1)`), takes some 18 s in all.
ALL_VARIANTS_BOUND = 3 * TIME_BOUND
PTXAS_BOUND = 120.0
FILES = sorted(
    p
    for pattern in ("examples/*.p[hy]", "tests/kernels/*.p[hy]", "benchmarks/kernels.py")
    for p in ROOT.glob(pattern)
)
# The semantic kinds twice over, then the syntactic ones: a case's kind is its number's
# place in this round.
SYNTACTIC = sorted(set(MUTATORS[".ph"]) & set(MUTATORS[".py"]))
SCHEDULE = [*SEMANTIC[".ph"], *SEMANTIC[".ph"], *SYNTACTIC]
PER_FILE = max(4, CASES // max(1, len(FILES)))
PTXAS = shutil.which("ptxas")
KNOWN_CODES = frozenset(codes.known_codes())


def _rel(path: Path) -> str:
    return path.resolve().relative_to(ROOT).as_posix()


def mutant(kind: str, path: Path, case: int) -> str:
    """The text of case `case` of mutation `kind` of `path`: a failure's reproducer."""
    rng = random.Random(f"compile:{kind}:{_rel(path)}:{case}")
    mutators = {**MUTATORS[path.suffix], **SEMANTIC[path.suffix]}
    return mutators[kind](rng, path.read_text(encoding="utf-8"))


# -- one case -----------------------------------------------------------------------------


class OverTime(BaseException):
    """The time bound's alarm: not an `Exception`, so no stage's handler takes it."""


@contextlib.contextmanager
def time_bound(seconds: float):
    """Raise `OverTime` in the body once it has run `seconds` (where signals allow)."""
    if (
        not hasattr(signal, "setitimer")
        or threading.current_thread() is not threading.main_thread()
    ):
        yield
        return

    def alarm(signum, frame):
        raise OverTime

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@dataclass
class Outcome:
    """What one chip's compile of a case gave: PTX, or the errors' codes; and what is
    wrong with it, if anything."""

    chip: str
    ptx: str | None = None
    codes: tuple[str | None, ...] = ()
    problems: list[str] = field(default_factory=list)


def compile_for(suffix: str, name: str, text: str, chip: str, all_variants: bool = False):
    """Compile `text` to PTX for `chip` as `phobos-compile` does: (Outcome, Result)."""
    outcome = Outcome(chip)
    source = SourceFile(name, text)
    options = driver.Options(chip=chip, all_variants=all_variants)
    bound = ALL_VARIANTS_BOUND if all_variants else TIME_BOUND
    try:
        with time_bound(bound):
            result = driver.compile_source(source, "ptx", suffix, options)
    except OverTime:
        outcome.problems.append(f"over {bound:g} s compiling")
        return outcome, None
    except driver.InternalCompilerError as ice:
        outcome.problems.append(
            f"internal compiler error (exit 101) in stage `{ice.stage}`\n{ice.traceback[-2500:]}"
        )
        return outcome, None
    except Exception:
        outcome.problems.append("exception escaped\n" + traceback.format_exc(limit=-8))
        return outcome, None
    outcome.problems += _diagnostic_problems(source, result.diagnostics)
    errors = [d for d in result.diagnostics if d.severity == "error"]
    outcome.codes = tuple(d.code for d in errors)
    if result.text is not None:
        outcome.ptx = result.text
    elif not errors:
        outcome.problems.append("neither PTX nor an error")
    want = cli.EXIT_ERRORS if errors else cli.EXIT_OK
    tool = cli.Session("phobos-compile", io.StringIO(), io.StringIO())
    try:
        status = tool.finish(result.diagnostics)
    except Exception:
        outcome.problems.append("the closing summary raised\n" + traceback.format_exc(limit=-8))
    else:
        if status != want or (status == cli.EXIT_OK) != (result.text is not None):
            outcome.problems.append(f"exit status {status} for {len(errors)} error(s)")
    return outcome, result


def _diagnostic_problems(source: SourceFile, diags) -> list[str]:
    size = len(source.data)
    problems = []
    for d in diags:
        if d.severity == "error" and d.primary is None:
            problems.append(f"error without a location: {d.code} {d.message}")
        if d.severity == "error" and d.code not in KNOWN_CODES:
            problems.append(f"error code {d.code!r} has no explanation: {d.message}")
        for label in (d.primary, *d.secondary):
            if label is None:
                continue
            span = label.span
            if not (0 <= span.start <= span.end <= size):
                problems.append(f"span {span.start}..{span.end} outside 0..{size}: {d.code}")
            elif span.source.data != source.data:
                problems.append(f"span into another file ({span.source.name}): {d.code}")
    try:
        render_human(diags)
    except Exception:
        problems.append("render_human raised\n" + traceback.format_exc(limit=-8))
    return problems


def through_the_command_line(suffix, name, text, chip, all_variants, result) -> list[str]:
    """`phobos-compile --emit ptx` on the text itself: its exit status and output must
    be the driver's."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_text(text, encoding="utf-8")
        argv = ["--emit", "ptx", "--chip", chip, "--jobs", "1", str(path)]
        argv += ["--all-variants"] if all_variants else []
        out, err = io.StringIO(), io.StringIO()
        bound = ALL_VARIANTS_BOUND if all_variants else TIME_BOUND
        try:
            with time_bound(bound):
                status = cli.run(argv, stdout=out, stderr=err, color=False)
        except OverTime:
            return [f"over {bound:g} s on the command line"]
        except Exception:
            return ["the command line raised\n" + traceback.format_exc(limit=-8)]
    want = cli.EXIT_OK if result.text is not None else cli.EXIT_ERRORS
    if status != want:
        return [f"phobos-compile exits {status}, not {want}\n{err.getvalue()[-2000:]}"]
    if status == cli.EXIT_OK and out.getvalue() != result.text:
        return ["phobos-compile prints other PTX than the driver made"]
    return []


_ASSEMBLED: dict[str, str | None] = {}  # sha256 of (chip, PTX) -> ptxas's complaint


def assemble(ptx: str, chip: str) -> str | None:
    """What `ptxas -arch=<chip>` says against `ptx`, or None when it assembles; each
    distinct module is assembled once."""
    key = hashlib.sha256(f"{chip}\n{ptx}".encode()).hexdigest()
    if key not in _ASSEMBLED:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "k.ptx"
            path.write_text(ptx, encoding="utf-8")
            try:
                ran = subprocess.run(
                    [PTXAS, f"-arch={chip}", str(path), "-o", os.devnull],
                    capture_output=True,
                    text=True,
                    timeout=PTXAS_BOUND,
                )
                complaint = None if ran.returncode == 0 else ran.stderr[-2000:]
            except subprocess.TimeoutExpired:
                complaint = f"ptxas ran over {PTXAS_BOUND:g} s"
        _ASSEMBLED[key] = complaint
    return _ASSEMBLED[key]


def run_case(path: Path, case: int) -> tuple[str, str, list[Outcome]]:
    """Case `case` of `path`: its kind, its text, and each chip's outcome."""
    kind = SCHEDULE[case % len(SCHEDULE)]
    text = mutant(kind, path, case)
    outcomes = []
    for k, chip in enumerate(CHIPS):
        all_variants = case % 8 == 7 and k == 1
        outcome, result = compile_for(path.suffix, path.name, text, chip, all_variants)
        if result is not None and case % 4 == k:
            outcome.problems += through_the_command_line(
                path.suffix, path.name, text, chip, all_variants, result
            )
        if outcome.ptx is not None and PTXAS is not None:
            complaint = assemble(outcome.ptx, chip)
            if complaint is not None:
                outcome.problems.append(f"ptxas refuses the PTX:\n{complaint}")
        outcomes.append(outcome)
    return kind, text, outcomes


# -- tests --------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def no_dump(monkeypatch):
    monkeypatch.delenv("PHOBOS_DUMP", raising=False)


@pytest.mark.parametrize("path", FILES, ids=_rel)
def test_mutants_compile_or_are_refused(path):
    if PTXAS is None and os.environ.get("CI"):
        pytest.fail("ptxas is missing under CI")
    failures = []
    for case in range(PER_FILE):
        kind, text, outcomes = run_case(path, case)
        for outcome in outcomes:
            for problem in outcome.problems:
                failures.append(
                    f"mutant({kind!r}, ROOT / {_rel(path)!r}, {case}) for {outcome.chip}: "
                    f"{problem}\n--- mutated text\n{text}"
                )
        if len(failures) >= 3:
            break
    assert not failures, "\n\n".join(failures)


# Cases of the long run (docs/reliability.md) whose every-variant compile of a tile
# constant's range widened to 2^31 or 2^32 ran for minutes, each variant stopping at its
# own budget. The shared memory a CTA can take (E0501, at `place`) and the budget of a
# whole space (`phobos.space_budget`) now end each within the bound of one compile. The
# next long run found attention's widened spaces' PTX refused by ptxas (C7602): a BC of
# 256 under `@launch(256, 2)` put a wgmma accumulator of all 128 registers a thread
# could have; such a product now takes mma.sync (`placement.register_cap`).
@pytest.mark.parametrize(
    "rel, case",
    [
        ("examples/hgemm.py", 3031),
        ("examples/kda_f16.py", 4879),
        ("examples/attention.py", 903),
        ("examples/attention.py", 663),
    ],
)
def test_widened_spaces_compile_every_variant_within_one_bound(rel, case):
    path = ROOT / rel
    text = mutant(SCHEDULE[case % len(SCHEDULE)], path, case)
    assert "4294967296" in text or "2147483648" in text  # still the widened range
    started = time.monotonic()
    outcome, result = compile_for(path.suffix, path.name, text, "sm_90a", all_variants=True)
    assert not outcome.problems and result.text is not None, outcome.problems
    assert time.monotonic() - started < TIME_BOUND
    if PTXAS is not None:
        assert assemble(outcome.ptx, "sm_90a") is None
    elif os.environ.get("CI"):
        pytest.fail("ptxas is missing under CI")


def test_accepted_ptx_is_assembled():
    if PTXAS is None:
        if os.environ.get("CI"):
            pytest.fail("ptxas is missing under CI")
        pytest.skip("ptxas is not installed: the fuzzer's accepted PTX was not assembled")


def test_there_is_a_corpus_and_every_kind_mutates():
    assert len(FILES) >= 10
    for path in FILES:
        original = path.read_text(encoding="utf-8")
        changed = {
            kind for kind in SCHEDULE for case in range(4) if mutant(kind, path, case) != original
        }
        assert {"numbers", "types"} <= changed, _rel(path)
    assert set(SEMANTIC[".ph"]) <= set(SCHEDULE)


def test_the_time_bound_interrupts():
    if not hasattr(signal, "setitimer"):
        pytest.skip("no interval timer here")
    with pytest.raises(OverTime), time_bound(0.05):
        while True:
            pass
