"""The compile fuzzer's long run, counted: `tests/test_compile_fuzz.py`'s cases over its
whole corpus, in worker processes, with each outcome tallied by class.

    python tests/fuzz_report.py CASES [--jobs N] [--out FILE]

CASES mutants are made (spread over the corpus' files as the test spreads them, case
numbers from 0), each compiled for sm_80 and sm_90a as the test compiles it: diagnostics
checked (spans inside the source, codes `--explain` knows, the exit status), PTX
assembled by ptxas, the command line run for one case in four, every `@autotune`
variant for one in eight. The report counts programs, outcomes by class (refused by
the front end, the checker or the lowering; PTX accepted by ptxas), the error codes
met, the slowest compile, and every problem: an internal compiler error, an escaped
exception, PTX ptxas refuses, a compile over the time bound. It exits 1 when any
problem was met, with the reproducer of each (`mutant(kind, path, case)`).
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("PHOBOS_FUZZ_COMPILE", "0")  # the test module's own count unused here

import test_compile_fuzz as fuzz  # noqa: E402


def _stage(code: str | None) -> str:
    """The stage a refusal's first code names (E00xx-E01xx the front ends, E05xx the
    lowering, E09xx the tool's own checks, the rest the checker)."""
    if code is None:
        return "refused (no code)"
    n = int(code[1:]) if code[1:].isdigit() else -1
    if n < 200:
        return "refused by a front end"
    if 500 <= n < 600:
        return "refused by the lowering"
    if n >= 900:
        return "refused by the tool"
    return "refused by the checker"


def one(item: tuple[str, int]) -> dict:
    rel, case = item
    path = fuzz.ROOT / rel
    started = time.perf_counter()
    kind, _, outcomes = fuzz.run_case(path, case)
    took = time.perf_counter() - started
    result = {"kind": kind, "seconds": took, "chips": [], "problems": []}
    for o in outcomes:
        if o.problems:
            cls = "problem"
            for p in o.problems:
                result["problems"].append(f"mutant({kind!r}, ROOT / {rel!r}, {case}) on {o.chip}: "
                                          f"{p.splitlines()[0]}")  # fmt: skip
        elif o.ptx is not None:
            cls = "PTX accepted by ptxas" if fuzz.PTXAS else "PTX (ptxas missing)"
        else:
            cls = _stage(o.codes[0] if o.codes else None)
        result["chips"].append((o.chip, cls, o.codes))
    return result


def report(done, total, jobs, wall, classes, kinds, codes, slowest, problems) -> str:
    """The run's figures as markdown (`done` of `total` programs so far)."""
    lines = [
        f"programs: {done} mutants of {len(fuzz.FILES)} files"
        + (f" (partial: {done} of {total})" if done < total else "")
        + f", each compiled for {' and '.join(fuzz.CHIPS)} ({2 * done} compiles), in "
        f"{wall:.0f} s on {jobs} processes; ptxas {'present' if fuzz.PTXAS else 'MISSING'}",
        "",
        "| chip | outcome | compiles |",
        "| --- | --- | ---: |",
    ]
    lines += [f"| {chip} | {cls} | {n} |" for (chip, cls), n in sorted(classes.items())]
    lines += ["", "mutation kinds: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))]
    lines += ["first error codes, the 15 commonest: "
              + ", ".join(f"{c} {n}" for c, n in codes.most_common(15))]  # fmt: skip
    lines += [f"slowest case (both chips, with the command line and variants where they ran): "
              f"{slowest[0]:.1f} s ({slowest[1]})"]  # fmt: skip
    lines += [f"problems: {len(problems)}"] + [f"  {p}" for p in problems[:50]]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", type=int)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--out")
    args = ap.parse_args()
    per_file = max(1, args.cases // len(fuzz.FILES))
    items = [(fuzz._rel(p), c) for c in range(per_file) for p in fuzz.FILES]
    started = time.perf_counter()
    classes: collections.Counter = collections.Counter()
    codes: collections.Counter = collections.Counter()
    kinds: collections.Counter = collections.Counter()
    problems: list[str] = []
    slowest = (0.0, "")
    done = 0
    with ProcessPoolExecutor(args.jobs) as pool:
        for item, r in zip(items, pool.map(one, items, chunksize=16), strict=True):
            kinds[r["kind"]] += 1
            for chip, cls, cs in r["chips"]:
                classes[(chip, cls)] += 1
                codes.update(c for c in cs[:1] if c)
            problems += r["problems"]
            if r["seconds"] > slowest[0]:
                slowest = (r["seconds"], f"{item[0]} case {item[1]}")
            done += 1
            if args.out and (done % 2000 == 0 or done == len(items)):
                wall = time.perf_counter() - started
                text = report(done, len(items), args.jobs, wall, classes, kinds, codes,
                              slowest, problems)  # fmt: skip
                Path(args.out).write_text(text + "\n", encoding="utf-8")
    wall = time.perf_counter() - started
    text = report(done, len(items), args.jobs, wall, classes, kinds, codes, slowest, problems)
    print(text)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
