"""The records in words: what `python -m phobos.tune show KERNEL` and `list` print.

Each function returns text, so the command only chooses what to print and where.

    >>> from phobos.tune.records import Record, VariantResult
    >>> record = Record("saxpy", "0" * 64, "sm_90", "NVIDIA H200", {"N": 4096},
    ...     {"BLOCK": [256, 1024, 4096]}, True, "2026-11-30T15:40:00+00:00",
    ...     [VariantResult.timed({"BLOCK": 256}, [0.0125, 0.0150]),
    ...      VariantResult.timed({"BLOCK": 1024}, [0.0100, 0.0101, 0.0110]),
    ...      VariantResult.left_out({"BLOCK": 4096}, "shared memory", "needs 256 KiB, 227 fit")])
    >>> print(format_record(record, Path("saxpy.json")))
    saxpy on sm_90 (NVIDIA H200), key N=4096
      tuned 2026-11-30T15:40:00+00:00, the L2 flushed before each timed launch
      saxpy.json
    <BLANKLINE>
        variant     best µs  median µs  spread  samples
      * BLOCK=1024    10.00      10.10   10.0%        3
        BLOCK=256     12.50      13.75   20.0%        2
      left out:
        BLOCK=4096  shared memory: needs 256 KiB, 227 fit
    <BLANKLINE>
      * the winner: the fastest timed variant, taken at launch
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from phobos.extras import MissingExtra
from phobos.tune.records import TIMED, Record, RecordError, RecordStore

NO_MATPLOTLIB = str(MissingExtra("--plot", "plot"))


def variant_text(record: Record, variant: dict[str, int]) -> str:
    """`BLOCK=1024,T=128`, in the space's order; a kernel without `@autotune` has
    one variant, shown as `(no @autotune)`."""
    names = [n for n in record.space if n in variant] + [
        n for n in variant if n not in record.space
    ]
    return ",".join(f"{n}={variant[n]}" for n in names) or "(no @autotune)"


def key_text(key: dict[str, int]) -> str:
    """`key M=4096, N=1024`, or `no key`."""
    if not key:
        return "no key"
    return "key " + ", ".join(f"{name}={value}" for name, value in key.items())


def format_record(record: Record, path: Path | None) -> str:
    """A record's header and its variants: the timed ones fastest first, then the
    ones left out with their stage and reason; the winner marked `*`. `path` None: the
    record was not kept (the cache is off or refused)."""
    flushed = (
        "the L2 flushed before each timed launch"
        if record.flush_l2
        else "timed warm (the L2 not flushed)"
    )
    lines = [
        f"{record.kernel} on {record.chip} ({record.card}), {key_text(record.key)}",
        f"  tuned {record.tuned}, {flushed}",
        f"  {path}" if path is not None else "  not kept: the kernel cache is off or refused",
        "",
    ]
    timed = sorted(
        (r for r in record.variants if r.status == TIMED), key=lambda r: r.best_ms or 0.0
    )
    left_out = [r for r in record.variants if r.status != TIMED]
    winner = record.winner
    rows = [("", "variant", "best µs", "median µs", "spread", "samples")]
    for r in timed:
        rows.append(
            (
                "*" if r.variant == winner else "",
                variant_text(record, r.variant),
                f"{r.best_ms * 1000:.2f}",
                f"{r.median_ms * 1000:.2f}",
                f"{r.spread * 100:.1f}%",
                str(len(r.samples_ms)),
            )
        )
    names = [variant_text(record, r.variant) for r in left_out]
    width = max(len(row[1]) for row in rows + [("", n) for n in names])
    if timed:
        numbers = [max(len(row[i]) for row in rows) for i in range(2, 6)]
        for mark, name, *cells in rows:
            text = "  ".join(c.rjust(w) for c, w in zip(cells, numbers, strict=True))
            lines.append(f"  {mark or ' '} {name.ljust(width)}  {text}")
    else:
        lines.append("  no variant was timed: every one was left out")
    if left_out:
        lines.append("  left out:")
        for name, r in zip(names, left_out, strict=True):
            lines.append(f"    {name.ljust(width)}  {r.stage}: {r.reason}")
    if winner is not None:
        lines += ["", "  * the winner: the fastest timed variant, taken at launch"]
    return "\n".join(lines)


def format_list(entries: Sequence[tuple[Path, Record | RecordError]]) -> str:
    """One line a record: kernel, chip, card, key, winner and path; a record that
    cannot be read says so in place of its fields."""
    rows = [("kernel", "chip", "card", "key", "winner", "path")]
    for path, found in entries:
        if isinstance(found, RecordError):
            rows.append(
                (path.name.split("-")[0], "", "", "", f"not valid: {found.what}", str(path))
            )
            continue
        winner = found.winner
        rows.append(
            (
                found.kernel,
                found.chip,
                found.card,
                ", ".join(f"{n}={v}" for n, v in found.key.items()) or "-",
                "none timed" if winner is None else variant_text(found, winner),
                str(path),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)) + "  " + row[5]
        for row in rows
    )


def missing_text(store: RecordStore, kernel: str, chip: str | None) -> str:
    """Why `show` printed nothing, and which kernels do have records."""
    where = f" for {chip}" if chip else ""
    names = sorted(
        {
            found.kernel if isinstance(found, Record) else path.name.split("-")[0]
            for path, found in store.list()
        }
    )
    note = (
        "kernels with records: " + ", ".join(names)
        if names
        else "no kernel has a record there yet: `kernel.tune(...)` makes one"
    )
    return f"error: no autotune record of `{kernel}`{where} in {store.cache.root}\n  = note: {note}"


# ---------------------------------------------------------------------------
# The plot


def figure_class():
    """matplotlib's `Figure`, or None when matplotlib is not installed. A `Figure`
    saves itself without pyplot, so no window or backend is chosen for the user."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return None
    return Figure


def plot_records(records: Sequence[Record], file: str | Path, figure=None) -> None:
    """A bar chart of each record's best time per variant (one panel a record),
    the error bar running from the best sample to the median; saved to `file`."""
    figure = figure or figure_class()
    if figure is None:
        raise RuntimeError(NO_MATPLOTLIB)
    shown = [r for r in records if any(v.status == TIMED for v in r.variants)]
    fig = figure(figsize=(max(6.0, 0.6 * _most_variants(shown)), 3.5 * max(1, len(shown))))
    for i, record in enumerate(shown):
        ax = fig.add_subplot(len(shown), 1, i + 1)
        timed = [v for v in record.variants if v.status == TIMED]
        best = [v.best_ms * 1000 for v in timed]
        above = [(v.median_ms - v.best_ms) * 1000 for v in timed]
        winner = record.winner
        colors = ["tab:orange" if v.variant == winner else "tab:blue" for v in timed]
        ax.bar(range(len(timed)), best, yerr=[[0.0] * len(timed), above], color=colors, capsize=3)
        ax.set_xticks(range(len(timed)))
        ax.set_xticklabels(
            [variant_text(record, v.variant) for v in timed], rotation=45, ha="right"
        )
        ax.set_ylabel("best µs (bar to median)")
        ax.set_title(f"{record.kernel}, {key_text(record.key)}, {record.chip} {record.card}")
    fig.tight_layout()
    fig.savefig(str(file))


def _most_variants(records: Sequence[Record]) -> int:
    return max((len(r.variants) for r in records), default=1)


# ---------------------------------------------------------------------------
# The commands


def show(store: RecordStore, kernel: str, chip=None, plot=None, out=None, err=None) -> int:
    """Print every record of `kernel` (of `chip` when given) to `out`, problems to
    `err`; with `plot`, save the chart there. The exit status: 0, 1 when nothing
    could be shown, 2 when the plot cannot be drawn."""
    out = out or sys.stdout
    err = err or sys.stderr
    figure = None
    if plot is not None:
        figure = figure_class()
        if figure is None:
            print(f"error: {NO_MATPLOTLIB}", file=err)
            return 2
    entries = store.list(kernel, chip)
    if not entries:
        print(missing_text(store, kernel, chip), file=err)
        return 1
    shown: list[Record] = []
    for path, found in entries:
        if isinstance(found, RecordError):
            print(f"error: {found}", file=err)
            continue
        if shown:
            print(file=out)
        print(format_record(found, path), file=out)
        shown.append(found)
    if plot is not None and shown:
        plot_records(shown, plot, figure)
        print(f"\nthe plot: {plot}", file=out)
    return 0 if shown else 1


def list_all(store: RecordStore, chip=None, out=None, err=None) -> int:
    """Print one line per record of the cache (of `chip` when given)."""
    out = out or sys.stdout
    err = err or sys.stderr
    entries = store.list(chip=chip)
    if not entries:
        print(f"no autotune records in {store.cache.root}", file=out)
        return 0
    print(format_list(entries), file=out)
    valid = [found for _, found in entries if isinstance(found, Record)]
    return 0 if valid else 1
