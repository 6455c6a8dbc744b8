"""The thin layer between a Snakemake ``script:`` and an analysis' pure functions."""

from __future__ import annotations

import logging
import sys
import time
from typing import Any

import torch

from posenc.device import set_threads


def setup(snakemake: Any, name: str) -> logging.Logger:
    """Log to the rule's declared log file (and stderr), and follow the rule's thread count."""
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


class Timer:
    def __enter__(self):
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.start
