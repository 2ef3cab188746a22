"""The tuning progress bar (phobos.tune.progress): a redrawn line on a terminal, one
plain line per phase in a log, nothing with PHOBOS_PROGRESS=0."""

from __future__ import annotations

import io

import pytest

from phobos.tune.progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Ticks:
    """A clock the test moves by hand."""

    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(autouse=True)
def wide_and_on(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.delenv("PHOBOS_PROGRESS", raising=False)


def tune(bar: Progress, ticks: Ticks) -> None:
    """Eight variants compiled, eight checked, two timed 3 rounds each."""
    bar.stage("compiled", 8)
    ticks.now += 1.0
    bar.advance(8)
    bar.stage("checked", 8)
    for _ in range(8):
        ticks.now += 0.25
        bar.advance()
    bar.stage("timed", 6)
    for done in range(1, 7):
        ticks.now += 0.5
        bar(done, 6)


def test_a_log_gets_one_plain_line_per_phase():
    log, ticks = io.StringIO(), Ticks()
    with Progress(22, "tuning softmax_rows M=4096", stream=log, clock=ticks) as bar:
        tune(bar, ticks)
    assert log.getvalue() == (
        "tuning softmax_rows M=4096: compiled 8/8 in 1.0 s\n"
        "tuning softmax_rows M=4096: checked 8/8 in 2.0 s\n"
        "tuning softmax_rows M=4096: timed 6/6 in 3.0 s\n"
    )
    assert "\r" not in log.getvalue()


def test_a_log_gets_the_unfinished_phase_when_it_stops():
    log, ticks = io.StringIO(), Ticks()
    with pytest.raises(KeyboardInterrupt):
        with Progress(16, "tuning k", stream=log, clock=ticks) as bar:
            bar.stage("compiled", 8)
            bar.advance(8)
            bar.stage("checked", 8)
            bar.advance(3)
            raise KeyboardInterrupt
    assert log.getvalue().splitlines() == [
        "tuning k: compiled 8/8 in 0.0 s",
        "tuning k: checked 3/8 in 0.0 s",
    ]


def test_a_phase_begun_before_the_last_finished_is_reported_once():
    log = io.StringIO()
    bar = Progress(4, "tuning k", stream=log, clock=Ticks())
    bar.stage("compiled", 2)
    bar.advance(1)
    bar.stage("checked", 2)  # the compile phase ends here, one short
    bar.advance(2)
    bar.advance(1)  # past its total: no second line
    bar.close()
    bar.close()
    assert log.getvalue().splitlines() == [
        "tuning k: compiled 1/2 in 0.0 s",
        "tuning k: checked 2/2 in 0.0 s",
    ]


def test_a_terminal_gets_one_line_redrawn():
    term, ticks = Terminal(), Ticks()
    with Progress(22, "tuning k", stream=term, clock=ticks) as bar:
        tune(bar, ticks)
    out = term.getvalue()
    assert out.endswith("\n") and out.count("\n") == 1
    frames = out.rstrip("\n").split("\r")[1:]
    assert frames[0].rstrip() == "tuning k [------------------------]   0% compiled 0/8  0.0 s"
    assert frames[-1] == (
        "tuning k [########################] 100% compiled 8/8, checked 8/8, timed 6/6  6.0 s"
    )
    halfway = "tuning k [############------------]  50% compiled 8/8, checked 3/8  1.8 s"
    assert halfway in [f.rstrip() for f in frames]


def test_a_shorter_frame_covers_the_longer_one_before_it():
    term = Terminal()
    bar = Progress(10, "tuning k", stream=term, clock=Ticks())
    bar.stage("timed", 1000)
    bar(1000, 1000)
    bar(10, 10)  # a count that shrank (variants left out)
    first, second = term.getvalue().split("\r")[2:]
    assert "timed 10/10 " in second
    assert len(second) == len(first) and second.endswith("   ")


def test_a_terminal_is_redrawn_at_most_ten_times_a_second():
    term, ticks = Terminal(), Ticks()
    bar = Progress(1000, "tuning k", stream=term, clock=ticks)
    bar.stage("timed", 1000)
    for done in range(1, 1000):
        ticks.now += 0.001
        bar(done, 1000)
    frames = term.getvalue().count("\r")
    assert 9 <= frames <= 12  # the first, then one per 100 ms of a second
    bar(1000, 1000)  # a phase's end is always drawn
    assert term.getvalue().rsplit("\r", 1)[1].startswith("tuning k [####")
    assert "timed 1000/1000" in term.getvalue().rsplit("\r", 1)[1]


def test_a_line_wider_than_the_terminal_is_cut(monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")
    term = Terminal()
    bar = Progress(10, "tuning a kernel with a long name", stream=term, clock=Ticks())
    bar.stage("compiled", 10)
    assert len(term.getvalue().split("\r")[1]) == 39


@pytest.mark.parametrize("stream", [io.StringIO, Terminal])
def test_phobos_progress_0_silences_it(monkeypatch, stream):
    monkeypatch.setenv("PHOBOS_PROGRESS", "0")
    out, ticks = stream(), Ticks()
    with Progress(22, "tuning k", stream=out, clock=ticks) as bar:
        tune(bar, ticks)
    assert out.getvalue() == ""


def test_counting_before_a_phase_is_begun_is_an_error():
    bar = Progress(1, "tuning k", stream=io.StringIO())
    with pytest.raises(ValueError, match="call stage"):
        bar.advance()


def test_a_closed_stream_silences_it():
    log = io.StringIO()
    bar = Progress(2, "tuning k", stream=log, clock=Ticks())
    log.close()
    bar.stage("compiled", 1)
    bar.advance()  # writes to the closed stream: no error
    bar.close()
    assert bar.quiet


def test_standard_error_by_default(capsys):
    with Progress(1, "tuning k", clock=Ticks()) as bar:
        bar.stage("compiled", 1)
        bar.advance()
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == "tuning k: compiled 1/1 in 0.0 s\n"
