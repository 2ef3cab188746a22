"""`python -m phobos.tune show` and `list`: what a person reads about the records,
run in-process through `main([...])`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from phobos.runtime.cache import KernelCache
from phobos.tune import show as show_module
from phobos.tune.__main__ import main
from phobos.tune.records import Record, RecordStore, VariantResult
from phobos.tune.show import NO_MATPLOTLIB, format_record, plot_records

REPO = Path(__file__).resolve().parents[2]
SOURCE = "ab" * 32


def make_record(**changes) -> Record:
    fields = dict(
        kernel="softmax_rows",
        source=SOURCE,
        chip="sm_90",
        card="NVIDIA H200",
        key={"M": 4096, "N": 1024},
        space={"BLOCK": [1024, 2048], "T": [256, 128]},
        flush_l2=True,
        tuned="2026-11-30T15:40:00+00:00",
        variants=[
            VariantResult.left_out({"BLOCK": 2048, "T": 256}, "race", "a race at k.py:12"),
            VariantResult.timed({"BLOCK": 1024, "T": 256}, [0.0200, 0.0250, 0.0300]),
            VariantResult.timed({"BLOCK": 1024, "T": 128}, [0.0125, 0.0150]),
            VariantResult.left_out({"BLOCK": 2048, "T": 128}, "registers", "needs 300, 255 fit"),
        ],
    )
    fields.update(changes)
    return Record(**fields)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.delenv("PHOBOS_CACHE", raising=False)
    monkeypatch.setenv("PHOBOS_CACHE_DIR", str(tmp_path / "elsewhere"))  # --cache-dir wins
    return root


def save(root, record) -> Path:
    return RecordStore(KernelCache(root)).save(record)


# ---------------------------------------------------------------------------
# One record


def test_format_record_orders_fastest_first_then_left_out():
    text = format_record(make_record(), Path("/c/r.json"))
    lines = text.splitlines()
    assert lines[0] == "softmax_rows on sm_90 (NVIDIA H200), key M=4096, N=1024"
    assert lines[1] == "  tuned 2026-11-30T15:40:00+00:00, the L2 flushed before each timed launch"
    assert lines[2] == "  /c/r.json"
    table = lines[4:]
    assert table[0].split() == ["variant", "best", "µs", "median", "µs", "spread", "samples"]
    # the winner first, marked, with its numbers in µs
    assert table[1].split() == ["*", "BLOCK=1024,T=128", "12.50", "13.75", "20.0%", "2"]
    assert table[2].split() == ["BLOCK=1024,T=256", "20.00", "25.00", "50.0%", "3"]
    assert table[3] == "  left out:"
    # left out in the record's order, each with its stage and reason
    assert table[4].split(None, 1) == ["BLOCK=2048,T=256", "race: a race at k.py:12"]
    assert table[5].split(None, 1) == ["BLOCK=2048,T=128", "registers: needs 300, 255 fit"]
    assert text.endswith("* the winner: the fastest timed variant, taken at launch")
    # the columns line up
    assert len({len(row) for row in table[:3]}) == 1


def test_format_record_warm_and_without_a_key():
    text = format_record(make_record(flush_l2=False, key={}), Path("r.json"))
    assert text.splitlines()[0].endswith("(NVIDIA H200), no key")
    assert "timed warm (the L2 not flushed)" in text


def test_format_record_with_nothing_timed():
    gone = VariantResult.left_out({"BLOCK": 1024, "T": 256}, "compile", "error[E0301]: x")
    text = format_record(make_record(variants=[gone]), Path("r.json"))
    assert "no variant was timed: every one was left out" in text
    assert "compile: error[E0301]: x" in text
    assert "*" not in text


def test_a_kernel_without_autotune():
    record = make_record(space={}, variants=[VariantResult.timed({}, [0.001])])
    text = format_record(record, Path("r.json"))
    assert "* (no @autotune)" in text and "1.00" in text


# ---------------------------------------------------------------------------
# The command


def test_show(cache, capsys):
    path = save(cache, make_record())
    save(cache, make_record(kernel="other"))
    assert main(["show", "softmax_rows", "--cache-dir", str(cache)]) == 0
    out = capsys.readouterr().out
    assert out == format_record(make_record(), path) + "\n"


def test_show_every_key_and_chip(cache, capsys):
    save(cache, make_record())
    save(cache, make_record(key={"M": 8, "N": 8}))
    save(cache, make_record(chip="sm_80"))
    assert main(["show", "softmax_rows", "--cache-dir", str(cache)]) == 0
    heads = [line for line in capsys.readouterr().out.splitlines() if line.startswith("softmax")]
    assert heads == [
        "softmax_rows on sm_80 (NVIDIA H200), key M=4096, N=1024",
        "softmax_rows on sm_90 (NVIDIA H200), key M=4096, N=1024",
        "softmax_rows on sm_90 (NVIDIA H200), key M=8, N=8",
    ]
    assert main(["show", "softmax_rows", "--chip", "sm_80", "--cache-dir", str(cache)]) == 0
    assert capsys.readouterr().out.count("softmax_rows on") == 1


def test_show_reads_phobos_cache_dir(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("PHOBOS_CACHE", raising=False)
    monkeypatch.setenv("PHOBOS_CACHE_DIR", str(tmp_path))
    save(tmp_path, make_record())
    assert main(["show", "softmax_rows"]) == 0
    assert "BLOCK=1024,T=128" in capsys.readouterr().out


def test_show_a_kernel_without_records(cache, capsys):
    save(cache, make_record())
    save(cache, make_record(kernel="matmul"))
    assert main(["show", "saxpy", "--cache-dir", str(cache)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"error: no autotune record of `saxpy` in {cache}\n"
        "  = note: kernels with records: matmul, softmax_rows\n"
    )
    assert main(["show", "matmul", "--chip", "sm_80", "--cache-dir", str(cache)]) == 1
    assert "no autotune record of `matmul` for sm_80" in capsys.readouterr().err


def test_show_with_an_empty_cache(cache, capsys):
    assert main(["show", "saxpy", "--cache-dir", str(cache)]) == 1
    assert "no kernel has a record there yet" in capsys.readouterr().err


def test_show_a_corrupt_record(cache, capsys):
    path = save(cache, make_record())
    path.write_text('{"format": "phobos-autotune/1"}', encoding="utf-8")
    assert main(["show", "softmax_rows", "--cache-dir", str(cache)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"error: the autotune record {path} is not valid: ")
    assert "the field `kernel` is missing" in captured.err
    # beside a good one, the good one is shown and the status is 0
    save(cache, make_record(chip="sm_80"))
    assert main(["show", "softmax_rows", "--cache-dir", str(cache)]) == 0
    captured = capsys.readouterr()
    assert "softmax_rows on sm_80" in captured.out and "is not valid" in captured.err


def test_list(cache, capsys):
    a = save(cache, make_record())
    b = save(cache, make_record(kernel="matmul", key={}, card="NVIDIA H100"))
    assert main(["list", "--cache-dir", str(cache)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["kernel", "chip", "card", "key", "winner", "path"]
    assert lines[1].split() == [
        "matmul",
        "sm_90",
        "NVIDIA",
        "H100",
        "-",
        "BLOCK=1024,T=128",
        str(b),
    ]
    assert lines[2].split() == [
        "softmax_rows",
        *["sm_90", "NVIDIA", "H200", "M=4096,", "N=1024", "BLOCK=1024,T=128", str(a)],
    ]


def test_list_of_nothing_and_of_a_corrupt_record(cache, capsys):
    assert main(["list", "--cache-dir", str(cache)]) == 0
    assert "no autotune records in" in capsys.readouterr().out
    path = save(cache, make_record())
    path.write_text("[]", encoding="utf-8")
    assert main(["list", "--cache-dir", str(cache)]) == 1
    assert "not valid: is a list, not an object" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [[], ["bogus"], ["show"], ["show", "k", "--colour"]])
def test_usage(argv, capsys):
    assert main(argv) == 2
    assert "usage: python -m phobos.tune" in capsys.readouterr().err


def test_help(capsys):
    assert main(["--help"]) == 0
    assert "show" in capsys.readouterr().out


def test_as_a_module(tmp_path):
    env = {"PHOBOS_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [sys.executable, "-m", "phobos.tune", "show", "saxpy"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1, result.stderr
    assert "error: no autotune record of `saxpy`" in result.stderr
    assert "Traceback" not in result.stderr


# ---------------------------------------------------------------------------
# The plot


def test_plot_without_matplotlib(cache, capsys, monkeypatch):
    save(cache, make_record())
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # the import fails
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    out = cache.parent / "plot.png"
    assert main(["show", "softmax_rows", "--plot", str(out), "--cache-dir", str(cache)]) == 2
    assert capsys.readouterr().err == f"error: {NO_MATPLOTLIB}\n"
    assert NO_MATPLOTLIB == '--plot needs matplotlib: pip install "phobos[plot]"'
    assert not out.exists()


class FakeAxes:
    def __init__(self):
        self.calls = {}

    def __getattr__(self, name):
        def call(*args, **kwargs):
            self.calls[name] = (args, kwargs)

        return call


class FakeFigure:
    made: list[FakeFigure] = []

    def __init__(self, figsize=None):
        self.axes = []
        FakeFigure.made.append(self)

    def add_subplot(self, rows, cols, index):
        self.axes.append(FakeAxes())
        return self.axes[-1]

    def tight_layout(self):
        pass

    def savefig(self, file):
        Path(file).write_bytes(b"png")


def test_plot_draws_best_times_with_bars_to_the_median(cache, capsys, monkeypatch):
    save(cache, make_record())
    save(cache, make_record(key={"M": 8, "N": 8}))
    monkeypatch.setattr(show_module, "figure_class", lambda: FakeFigure)
    FakeFigure.made.clear()
    out = cache.parent / "plot.png"
    assert main(["show", "softmax_rows", "--plot", str(out), "--cache-dir", str(cache)]) == 0
    assert out.read_bytes() == b"png"
    assert f"the plot: {out}" in capsys.readouterr().out
    (figure,) = FakeFigure.made
    assert len(figure.axes) == 2
    (positions, heights), options = figure.axes[0].calls["bar"]
    assert list(positions) == [0, 1]
    assert heights == pytest.approx([20.0, 12.5])  # the record's timed variants, in µs
    assert options["yerr"][0] == [0.0, 0.0]
    assert options["yerr"][1] == pytest.approx([5.0, 1.25])  # best to median
    assert options["color"] == ["tab:blue", "tab:orange"]  # the winner stands out
    labels = figure.axes[0].calls["set_xticklabels"][0][0]
    assert labels == ["BLOCK=1024,T=256", "BLOCK=1024,T=128"]


def test_plot_with_matplotlib(tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "plot.png"
    plot_records([make_record()], out)
    assert out.read_bytes().startswith(b"\x89PNG")
