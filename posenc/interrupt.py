"""Ctrl-C on a Snakemake run ends with one line saying how to resume it.

A terminal sends Ctrl-C's SIGINT to its whole foreground process group: Snakemake and every job
it runs. Each job then stops (one line of its own, :func:`posenc.workflow.setup`), and Snakemake
reports each stopped job as a failed one, with the command that ran it, the log's path and the
workflow's error: tens of lines that bury what matters, that nothing was lost. So the commands
that run Snakemake for a user (``posenc card``, ``make report``) pass its stderr on line by line
until the SIGINT, hide the rest, and end with one line saying what to rerun. Finished jobs stay
cached and an interrupted training resumes from its checkpoint, so the rerun is the resume.

    python -m posenc.interrupt "make report" snakemake --cores all --rerun-incomplete

runs the command after the hint; on Ctrl-C it prints ``interrupted: run `make report` again to
resume ...`` and exits as interrupted (by SIGINT, so ``make`` says "Interrupt").
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

# Exit status of a process ended by SIGINT, as a shell reports it.
INTERRUPTED = 128 + signal.SIGINT


def run(command: list[str], again: str, cwd: Path | str | None = None) -> int:
    """Run ``command`` (Snakemake), its stderr passed on line by line; return its exit status,
    or :data:`INTERRUPTED` after a Ctrl-C, when one line naming ``again`` (what to rerun) ends
    the output in place of what Snakemake prints about the jobs it stopped. stdout is not
    touched (a dry run's plan, say, goes where it would have gone)."""
    # Snakemake and its jobs get the same SIGINT from the terminal (one process group): this
    # process only stops passing on their output, and waits for Snakemake to clean up (its
    # lock). Python runs a handler between bytecodes, so a job's line read just after the
    # SIGINT could pass before the handler ran; the wakeup fd is written by the C-level handler,
    # before the read that brought the line returns, so checking it first is never late.
    woken, wake = os.pipe()
    os.set_blocking(woken, False)
    os.set_blocking(wake, False)
    previous = signal.signal(signal.SIGINT, lambda signum, frame: None)
    previous_fd = signal.set_wakeup_fd(wake)
    interrupted = False

    def heard() -> bool:
        nonlocal interrupted
        try:
            interrupted = interrupted or signal.SIGINT in os.read(woken, 512)
        except BlockingIOError:
            pass
        return interrupted

    try:
        proc = subprocess.Popen(command, cwd=cwd, stderr=subprocess.PIPE)
        if heard():  # Ctrl-C came while it started, perhaps before it could hear it
            proc.send_signal(signal.SIGINT)
        with proc.stderr:
            for line in proc.stderr:
                if not heard():
                    sys.stderr.buffer.write(line)
                    sys.stderr.buffer.flush()
        status = proc.wait()
        heard()
    finally:
        signal.set_wakeup_fd(previous_fd)
        signal.signal(signal.SIGINT, previous)
        os.close(woken)
        os.close(wake)
    if interrupted:
        print(
            f"interrupted: run `{again}` again to resume (finished jobs are kept, "
            "an interrupted training resumes from its last checkpoint)",
            file=sys.stderr,
        )
        return INTERRUPTED
    # Popen reports a death by signal N as -N; a shell reports 128 + N.
    return 128 - status if status < 0 else status


def main(argv: list[str]) -> None:
    if len(argv) < 2:
        sys.exit('usage: python -m posenc.interrupt "COMMAND TO RERUN" COMMAND [ARG ...]')
    status = run(argv[1:], again=argv[0])
    if status == INTERRUPTED:
        # Ended by SIGINT, as a process that handles it should (so that a calling shell or make
        # stops too): make then adds its one "Interrupt" line rather than "Error 130".
        sys.stderr.flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    sys.exit(status)


if __name__ == "__main__":
    main(sys.argv[1:])
