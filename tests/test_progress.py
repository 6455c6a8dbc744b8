"""Training progress: lines of at most 120 characters that say how far a run is and how long it
has left, one per interval and one at the end, never a bar redrawn with carriage returns."""

from __future__ import annotations

import io

import pytest

from posenc.train import PROGRESS_WIDTH, Progress, duration, progress_line


@pytest.mark.parametrize(
    "seconds,says",
    [
        (0.4, "0 s"),
        (40, "40 s"),
        (89, "89 s"),
        (180, "3 min"),
        (3900, "65 min"),
        (6300, "1 h 45 min"),
    ],
)
def test_a_wait_reads_as_a_person_says_it(seconds, says):
    assert duration(seconds) == says


def test_a_line_says_the_step_the_loss_and_the_time_left():
    line = progress_line("lm/rope/seed0", 1200, 4000, 1.934, 77.0, 180.0)
    assert line == "lm/rope/seed0: 30% step 1200/4000, loss 1.934, 3 min left"
    assert progress_line("lm/rope/seed0", 4000, 4000, 1.5, 700.0, 0.0).endswith("took 12 min")
    assert progress_line("lm/rope/seed0", 0, 4000, 9.0, 0.0, None).endswith("time left unknown")


@pytest.mark.parametrize(
    "label,step,total,loss",
    [
        ("lm/rope/seed0", 1200, 4000, 1.934),
        (
            "passkey/" + "a_plugin_encoding_with_a_very_long_name" * 6 + "+randomized/seed12",
            7,
            9,
            2.0,
        ),
        ("x" * 500, 10**9 - 1, 10**9, float("nan")),
        ("lm/rope/seed0", 3, 10**12, 1e30),  # an exploding loss, printed short
    ],
    ids=["usual", "long plugin name", "absurd", "huge loss"],
)
def test_every_line_fits_120_characters(label, step, total, loss):
    line = progress_line(label, step, total, loss, 1e6, 1e7)
    assert len(line) <= PROGRESS_WIDTH == 120
    assert line.endswith("left") and "\r" not in line
    if len(label) > 60:  # cut in its middle: the task and the seed stay readable
        assert "..." in line and line.startswith(label[:4])


def test_a_run_prints_whole_lines_and_ends_with_its_total():
    stream = io.StringIO()
    progress = Progress("lm/none/seed0", total=5, start=2, interval_s=0, stream=stream)
    for step in range(3, 6):
        progress.update(step, 2.5)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 3 and stream.getvalue().endswith("\n")
    assert lines[0].startswith("lm/none/seed0: 60% step 3/5, loss 2.5, ")
    assert lines[0].endswith(" left")  # a resumed run's rate is its own steps' rate
    assert lines[-1].startswith("lm/none/seed0: 100% step 5/5, loss 2.5, took ")


def test_between_intervals_only_the_last_step_is_printed():
    stream = io.StringIO()
    progress = Progress("lm/none/seed0", total=4, start=0, interval_s=1e9, stream=stream)
    for step in range(1, 5):
        progress.update(step, 1.0)
    (line,) = stream.getvalue().splitlines()
    assert line.startswith("lm/none/seed0: 100% step 4/4")
