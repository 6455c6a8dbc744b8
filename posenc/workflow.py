"""The thin layer between a Snakemake ``script:`` and an analysis' pure functions."""

from __future__ import annotations

import logging
import signal
import sys
import time
from typing import Any

import torch

from posenc.device import set_threads


def setup(snakemake: Any, name: str) -> logging.Logger:
    """Log to the rule's declared log file (and stderr), follow the rule's thread count, and
    end on Ctrl-C with one line and exit status 130 (:func:`quiet_interrupt`)."""
    quiet_interrupt(name)
    set_threads(snakemake.threads)
    log = logging.getLogger(name)
    log.setLevel(logging.INFO)
    log.handlers.clear()
    fmt = logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s")
    handlers = [logging.StreamHandler(sys.stderr)]
    if len(snakemake.log):
        handlers.append(logging.FileHandler(snakemake.log[0], mode="w"))
    for h in handlers:
        h.setFormatter(fmt)
        log.addHandler(h)
    log.info("threads=%d torch=%s", snakemake.threads, torch.__version__)
    return log


def quiet_interrupt(name: str) -> None:
    """From now on, SIGINT (Ctrl-C) ends this job with one line naming it and exit status 130,
    as a shell reports SIGINT, instead of a KeyboardInterrupt traceback. Ctrl-C reaches every
    job of a run at once: the tracebacks were most of the ~55 lines one Ctrl-C printed. Exiting
    by SystemExit still unwinds ``finally`` blocks and context managers, so an atomic write
    still removes its temporary file; Snakemake marks the job incomplete and its next run
    redoes it (a training resumes from its checkpoint)."""

    def interrupted(signum, frame):
        # A second Ctrl-C while this one unwinds ends the job at once, silently.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        print(f"{name}: interrupted; rerun the same command to resume", file=sys.stderr)
        raise SystemExit(130)

    signal.signal(signal.SIGINT, interrupted)


class Timer:
    def __enter__(self):
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.start
