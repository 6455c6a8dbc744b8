"""How the complexity analysis times a call: the clock, blocked repeats with
``torch.utils.benchmark``, and what each call wrote and faulted in beside its time."""

import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch.utils import benchmark

try:
    import resource
except ImportError:  # not on Windows: no page-fault counts there
    resource = None

# A timed block lasts about this long: many blocks per point for the bootstrap of its median,
# each a thousand times the timer's overhead.
BLOCK_S = 1e-3


def clock(device: torch.device) -> tuple[Callable[[], float], str]:
    """The clock the timings use. On the CPU with one thread, that thread's CPU time: it
    excludes the time the thread waits for a core, so other jobs on a shared machine do not
    inflate the result (all the work runs in this thread). Otherwise wall time, read after
    the accelerator has finished the work queued on it (its kernels run asynchronously)."""
    if device.type == "cpu" and torch.get_num_threads() == 1:
        return time.thread_time, "thread CPU time"
    if device.type == "cuda" and torch.cuda.is_available():

        def synchronized() -> float:
            torch.cuda.synchronize(device)
            return time.perf_counter()

        return synchronized, "wall time"
    return time.perf_counter, "wall time"


def minor_faults() -> int | None:
    """Page faults this process has taken that needed no disk (first touches of freshly mapped
    memory, which the kernel zeroes), in all its threads: a multi-threaded kernel faults in
    some of its pages in the other threads. None without ``resource``."""
    if resource is None:
        return None
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def output_bytes(out: Any) -> int:
    """Bytes of the tensors a workload returns (a tensor, or a tuple of them)."""
    if isinstance(out, torch.Tensor):
        return out.element_size() * out.numel()
    if isinstance(out, (tuple, list)):
        return sum(output_bytes(o) for o in out)
    return 0


def time_blocks(
    fn: Callable[[], Any],
    warmup: int,
    min_run_time: float,
    timer: Callable[[], float],
    min_blocks: int = 3,
    number: int | None = None,
) -> dict[str, Any]:
    """Timed blocks of ``fn``: ``warmup`` untimed calls (allocator, caches, lazy init; the
    first one's output bytes are counted, None without one), then blocks of ``number`` calls
    for at least ``min_run_time`` seconds and at least ``min_blocks`` blocks.

    Without ``number``, an untimed call calibrates it (a long warm-up call serves): a block
    lasts about :data:`BLOCK_S` (a call of that or more is a block of its own), so that a
    point's time is many blocks, which the bootstrap of its median resamples, each long
    against the timer's overhead (about a microsecond). The number is returned, so that later
    rounds of the same point time blocks of the same size. Returns the seconds per call of
    each block, the calls per block, the output's bytes and the bytes faulted in per call
    (minor page faults × page size; None where they cannot be counted)."""
    out_bytes = None
    took = None
    for i in range(warmup):
        start = timer()
        out = fn()
        took = timer() - start
        if i == 0:
            out_bytes = output_bytes(out)
        del out
    calls = [0]

    def counted():
        calls[0] += 1
        return fn()

    if number is None:
        # A warm-up call that took ten blocks is a long call: it needs no calibration (the
        # first call's allocations cannot make a short call look that long).
        if took is None or took < 10 * BLOCK_S:
            start = timer()
            fn()
            took = timer() - start
        number = 1 if took >= BLOCK_S else max(1, round(BLOCK_S / max(took, 1e-9)))
    before = minor_faults()
    t = benchmark.Timer(
        stmt="fn()", globals={"fn": counted}, timer=timer, num_threads=torch.get_num_threads()
    )
    times: list[float] = []
    while sum(times) * number < min_run_time or len(times) < min_blocks:
        if number == 1:  # one call: time it directly, as a long call needs no blocking
            start = timer()
            counted()
            times.append(timer() - start)
        else:
            times += t.timeit(number).times
    after = minor_faults()
    fresh = None
    if before is not None and after is not None and calls[0]:
        fresh = (after - before) * os.sysconf("SC_PAGE_SIZE") / calls[0]
    return {"times": times, "number": number, "out_bytes": out_bytes, "fresh_bytes": fresh}


def summarise(times: list[float]) -> dict[str, float]:
    """The median seconds per call over timed blocks, their interquartile range and count."""
    q1, median, q3 = np.percentile(times, [25, 50, 75])
    return {"median_s": float(median), "iqr_s": float(q3 - q1), "repeats": len(times)}
