"""Ctrl-C ends a run with one line saying how to resume, not a traceback per job: a job
(posenc.workflow.setup) exits 130 with one line, and a Snakemake run through posenc.interrupt
(``make report``, ``posenc card``) ends with the one line naming the command to rerun, which
then finishes the run. Each signal is sent once the process says it is ready; nothing is timed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

# A job as the workflow's scripts start one; it waits for a file "go" before it finishes.
JOB = """
import sys
import time
from pathlib import Path
from types import SimpleNamespace

from posenc.workflow import setup

setup(SimpleNamespace(threads=1, log=[]), "toy job")
while not Path("go").exists():
    print("ready", file=sys.stderr, flush=True)
    time.sleep(0.2)
"""

SNAKEFILE = """
rule toy:
    output:
        "done.txt",
    script:
        "job.py"
"""


def wait_for(stream, word: str) -> list[str]:
    """The lines of ``stream`` up to the first holding ``word``; all of them if it ends first."""
    seen = []
    for line in stream:
        seen.append(line)
        if word in line:
            break
    return seen


def test_a_job_interrupted_exits_130_with_one_line(tmp_path):
    (tmp_path / "job.py").write_text(JOB)
    proc = subprocess.Popen(
        [sys.executable, "job.py"], cwd=tmp_path, stderr=subprocess.PIPE, text=True
    )
    before = wait_for(proc.stderr, "ready")
    assert "ready" in before[-1], "".join(before)
    proc.send_signal(signal.SIGINT)
    after = proc.stderr.read()
    assert proc.wait() == 130, after
    assert "Traceback" not in after
    said = [line for line in after.splitlines() if "ready" not in line]
    assert said == ["toy job: interrupted; rerun the same command to resume"]


def run_make_report(work):
    """What make runs for ``make report``, on the toy workflow, in a session of its own (as a
    terminal's foreground job: Ctrl-C reaches every process of it)."""
    return subprocess.Popen(
        [sys.executable, "-m", "posenc.interrupt", "make report",
         sys.executable, "-m", "snakemake", "--cores", "1", "--rerun-incomplete", "done.txt"],
        cwd=work,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )  # fmt: skip


def test_ctrl_c_on_a_run_is_one_line_and_the_same_command_resumes(tmp_path):
    (tmp_path / "Snakefile").write_text(SNAKEFILE)
    (tmp_path / "job.py").write_text(JOB + 'Path("done.txt").write_text("done")\n')
    proc = run_make_report(tmp_path)
    before = wait_for(proc.stderr, "ready")
    assert "ready" in before[-1], "".join(before)
    os.killpg(proc.pid, signal.SIGINT)  # as the terminal sends Ctrl-C
    after = proc.stderr.read()
    # Killed by SIGINT, as a program that handles it should end: make says "Interrupt".
    assert proc.wait() == -signal.SIGINT, after
    lines = [line for line in after.splitlines() if line != "ready"]
    assert len(lines) == 1, after
    assert lines[0].startswith("interrupted: run `make report` again to resume")
    assert not (tmp_path / "done.txt").exists()

    # The rerun finds no lock and no complaint about the stopped job, and finishes it.
    (tmp_path / "go").touch()
    rerun = run_make_report(tmp_path)
    out = rerun.stderr.read()
    assert rerun.wait() == 0, out
    assert (tmp_path / "done.txt").read_text() == "done"


def test_a_failed_run_keeps_its_output_and_status(tmp_path):
    # Without Ctrl-C nothing is hidden: Snakemake's own error reaches the user.
    (tmp_path / "Snakefile").write_text(SNAKEFILE)
    (tmp_path / "job.py").write_text("raise RuntimeError('a real failure')\n")
    proc = run_make_report(tmp_path)
    out = proc.stderr.read()
    assert proc.wait() == 1, out
    assert "a real failure" in out and "interrupted" not in out
