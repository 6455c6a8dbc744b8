"""What positional encodings cost next to attention, measured against L and d: the measurement.

The article "Positional Encodings": computing sinusoidal encodings takes O(L·d) time, a learned
lookup the same, "negligible overhead compared to the O(L²·d) cost of self-attention itself, so
positional encoding is essentially free". We time each registry encoding's own work
(:meth:`posenc.encodings.PositionalEncoding.workload`: the input table, the query/key
rotation, the score bias) and one attention layer of the project's model
(posenc.model.Attention: QKV projection, SDPA, output projection) at growing L and at each
configured width d, with ``torch.utils.benchmark`` (warm-up calls, then the median of blocked
repeats). The head width is fixed and the head count is d / head_dim, so that every term of
the layer (the softmax over H·L² scores too) and every per-head encoding grows in proportion
to d, as O(L·d) and O(L²·d) say; with a fixed head count, the softmax would add an O(L²·H)
term that does not grow with d.

A call costs a fixed t₀ (interpreter, dispatch, allocation; its time at L = 1) plus the work
O(·) describes, so we fit t(L) = t₀ + c·L^α: α is the log-log slope of t − t₀ against L over a
window the config fixes before any timing, and likewise the slope against d at a fixed L.

One attention layer costs about 8·L·D² (projections) + 4·L²·D (scores and weighted sum)
flops, so its log-log slope in L is 1 + L / (L + 2D): it reaches 2 only once L ≫ 2D. Its fit
starts at ``attention_fit_min_len_per_d`` × D, the same flop share at every D. An encoding's
work is linear in its output's bytes within one memory regime, but its time per byte steps up
where each call's memory stops being reused and is mapped afresh from the operating system (a
page fault per page), or outgrows a cache; its fit starts at ``encoding_fit_min_len``, in one
regime at every d. Each timed call's output bytes and the bytes it faulted in are recorded
beside its time, and the machine's cache sizes are read, to show which of the two a step is.

This module measures; the claims (spec.py) judge.
"""

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils import benchmark

from posenc.analysis import Context, Measurements
from posenc.claims import interval
from posenc.encodings import (
    EncodingParams,
    InputEncoding,
    PositionalEncoding,
    PositionOutOfRange,
    build,
)
from posenc.model import Attention, ModelConfig

from . import resample
from .spec import SPEC

try:
    import resource
except ImportError:  # not on Windows: no page-fault counts there
    resource = None

ATTENTION = "attention"  # the workload name of the attention layer, beside the encodings'
Point = tuple[str, int]  # (workload, d_model): one encoding, or attention, at one width
# A timed block lasts about this long: many blocks per point for the bootstrap of its median,
# each a thousand times the timer's overhead.
BLOCK_S = 1e-3
MIB = 2**20
CACHES = Path("/sys/devices/system/cpu/cpu0/cache")


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


def heads(cfg: dict, d_model: int) -> int:
    """Heads of width ``head_dim`` at model width ``d_model``."""
    return d_model // cfg["head_dim"]


def encoding_module(name: str, cfg: dict, d_model: int, encoding_cfg: dict, length: int, device):
    """Encoding ``name`` at width ``d_model``, built for L = ``length`` positions (a learned
    table has L rows)."""
    params = EncodingParams(
        d_model=d_model, n_heads=heads(cfg, d_model), max_len=length, **encoding_cfg
    )
    return build(name, params).to(device)


def encoding_workload(enc: PositionalEncoding, cfg: dict, length: int, device):
    """A zero-argument call doing ``enc``'s own work for L = ``length`` positions, as its
    place of action defines it (:meth:`~posenc.encodings.PositionalEncoding.workload`): the
    (L, D) table, the rotation of (B, H, L, Dh) queries and keys, the (H, L, L) score bias.
    None for an encoding that does no work (NoPE)."""
    positions = torch.arange(length, device=device)
    return enc.workload(positions, cfg["batch"], cfg["causal"])


def attention_workload(cfg: dict, d_model: int, length: int, seed: int, device):
    """One forward pass of the model's attention layer (no positional encoding) on (B, L, D)."""
    torch.manual_seed(seed)
    mcfg = ModelConfig(d_model=d_model, n_heads=heads(cfg, d_model), causal=cfg["causal"])
    layer = Attention(mcfg, PositionalEncoding(EncodingParams(d_model=d_model)))
    layer = layer.to(device).eval()
    g = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(cfg["batch"], length, d_model, generator=g, device=device)  # (B, L, D)
    positions = torch.arange(length, device=device)
    return lambda: layer(x, positions)


def log_log_fit(xs: list[float], seconds: list[float]) -> tuple[float, float]:
    """Least-squares line log t = slope · log x + intercept: (slope, intercept)."""
    x, t = np.asarray(xs, dtype=float), np.asarray(seconds, dtype=float)
    slope, intercept = np.polyfit(np.log(x), np.log(t), 1)
    return float(slope), float(intercept)


def attention_flops(length: int, d_model: int) -> float:
    """One layer's flops, F = 8 L D² (Q, K, V and output projections) + 4 L² D (scores and
    the weighted sum)."""
    return 8 * length * d_model**2 + 4 * length**2 * d_model


def flop_model_slope(length: int, d_model: int) -> float:
    """d log F / d log L for F = 8 L D² + 4 L² D: 1 + L / (L + 2D)."""
    return 1 + length / (length + 2 * d_model)


def flop_model_d_slope(length: int, d_models: list[int]) -> float:
    """The log-log slope of F against D over ``d_models`` at L = ``length``, fitted as the
    timings are: 1 + 2D / (L + 2D) at each D, near 1 once L ≫ 2D."""
    return log_log_fit(d_models, [attention_flops(length, d) for d in d_models])[0]


def label(workload: str, d_model: int) -> str:
    """The evidence label of a workload at one width: ``rope d=128``."""
    return f"{workload} d={d_model}"


def measure(
    cfg: dict, encodings: list[str], encoding_cfg: dict, seed: int, device
) -> tuple[list[dict], list[str], list[str], dict[tuple[str, int, int], list[float]]]:
    """Time every workload at every configured width, at L = 1 (its fixed per-call cost) and
    at every configured length it is run at, interleaved in time: ``rounds`` passes over every
    point, each timing a share of ``min_run_time``, so that a burst of load on the machine
    falls on all points alike rather than on the few being timed then. Passes alternate their
    direction, so that a drift over a pass does not track L. Each pass builds a point's
    workload afresh and warms it up, so the memory held at once is one point's.

    Returns tidy rows (the median over all of a point's blocks), the encodings that compute a
    positional table (an :class:`~posenc.encodings.InputEncoding`), those whose work is
    quadratic in L (timed only up to ``bias_max_len``), and each point's block times, for the
    bootstrap. An encoding that has no encoding of L positions (PositionOutOfRange: xPos's
    scales past the span its dtype holds, say) is not timed from that L on
    (:func:`refused_lengths`)."""
    tables: dict[str, None] = {}
    quadratic: dict[str, None] = {}
    refused: dict[tuple[str, int], int] = {}  # (encoding, d) -> the L it refused
    timer, _ = clock(device)
    rounds = cfg["rounds"]
    share = cfg["min_run_time"] / rounds
    per_round = -(-cfg["min_blocks"] // rounds)  # so that the rounds give min_blocks at least
    plan = [
        (d, length, name)
        for d in cfg["d_models"]
        for length in [1, *cfg["lengths"]]
        for name in [ATTENTION, *encodings]
        if name != ATTENTION or length <= cfg["attention_max_len"]
    ]
    blocks: dict[tuple[str, int, int], list[float]] = {}
    seen: dict[tuple[str, int, int], dict] = {}  # per point: first round's facts

    def workload(d: int, length: int, name: str):
        if name == ATTENTION:
            return attention_workload(cfg, d, length, seed, device), "layer"
        if (name, d) in refused and length >= refused[name, d]:
            return None, None
        enc = encoding_module(name, cfg, d, encoding_cfg, length, device)
        if isinstance(enc, InputEncoding):
            tables[name] = None
        if enc.quadratic_cost:
            quadratic[name] = None
            if length > cfg["bias_max_len"]:
                return None, None  # an (H, L, L) bias outgrows memory long before a table
        return encoding_workload(enc, cfg, length, device), enc.acts_on

    with torch.no_grad():
        for r in range(rounds):
            # The first pass runs in increasing L, where a refused L is found first.
            for d, length, name in plan if r % 2 == 0 else plan[::-1]:
                fn, acts_on = workload(d, length, name)
                if fn is None:
                    continue
                key = (name, d, length)
                # Warmed up in every round: the workload is built afresh, and its first call
                # touches its memory (a learned table of 2^20 rows) for the first time.
                try:
                    t = time_blocks(
                        fn,
                        cfg["warmup"],
                        share,
                        timer,
                        per_round,
                        number=seen.get(key, {}).get("number"),
                    )
                except PositionOutOfRange:  # and so at every longer L (lengths increase)
                    refused[name, d] = min(length, refused.get((name, d), length))
                    continue
                finally:
                    del fn  # a learned table of 2^20 rows is a GiB: free it first
                blocks.setdefault(key, []).extend(t["times"])
                first = seen.setdefault(key, {**t, "acts_on": acts_on, "fresh": [], "rounds": []})
                first["fresh"].append(t["fresh_bytes"])
                first["rounds"].append(len(t["times"]))
    rows = []
    for (name, d, length), times in blocks.items():
        facts = seen[name, d, length]
        fresh = [f for f in facts["fresh"] if f is not None]
        rows.append(
            {
                "workload": name,
                "acts_on": facts["acts_on"],
                "d_model": d,
                "heads": heads(cfg, d),
                "length": length,
                **summarise(times),
                "out_bytes": facts["out_bytes"],
                "fresh_bytes": float(np.mean(fresh)) if fresh else None,
                # How many of its blocks each round timed, in order: the bootstrap resamples
                # rounds, then blocks within them (a rebuilt workload may sit differently in
                # memory from round to round).
                "round_blocks": facts["rounds"],
            }
        )
    return rows, list(tables), list(quadratic), blocks


def refused_lengths(rows: list[dict], lengths: list[int], quadratic: list[str]) -> dict[str, int]:
    """Per encoding timed whose work is not quadratic, the shortest configured L it has no
    timing at: where it refused the positions (PositionOutOfRange). None missing: not listed."""
    out = {}
    for name in dict.fromkeys(r["workload"] for r in rows if r["workload"] != ATTENTION):
        timed = {r["length"] for r in rows if r["workload"] == name}
        missing = [n for n in lengths if n not in timed]
        if missing and name not in quadratic:
            out[name] = min(missing)
    return out


def fit_min_len(workload: str, d_model: int, cfg: dict) -> int:
    """Where a workload's fit in L starts, as the config fixes it before any timing."""
    if workload == ATTENTION:
        return cfg["attention_fit_min_len_per_d"] * d_model
    return cfg["encoding_fit_min_len"]


def fits(rows: list[dict], cfg: dict) -> list[dict]:
    """Per workload and width, the log-log slope of its L-dependent time over its fit range.

    A call costs a fixed overhead t₀ (Python, dispatch, allocation: the time at L = 1) plus
    the work that O(·) describes, so the model is t(L) = t₀ + c·L^α and α is the slope of
    log(t − t₀) against log L (points with t ≤ t₀ carry no information and are left out).
    The slope of the raw times over the same range, and over every length, are kept beside it.
    A workload with fewer than two lengths in its fit range (a bias capped at
    ``bias_max_len``) is fitted over every length.
    """
    out = []
    for name, d in dict.fromkeys((r["workload"], r["d_model"]) for r in rows):
        mine = [r for r in rows if r["workload"] == name and r["d_model"] == d]
        every = [r for r in mine if r["length"] > 1]
        overhead = next(r["median_s"] for r in mine if r["length"] == 1)
        pts = [r for r in every if r["length"] >= fit_min_len(name, d, cfg)]
        if len(pts) < 2:
            pts = every
        work = [(r["length"], r["median_s"] - overhead) for r in pts if r["median_s"] > overhead]
        if len(work) < 2:
            continue
        slope, intercept = log_log_fit(*zip(*work))
        raw, _ = log_log_fit([r["length"] for r in pts], [r["median_s"] for r in pts])
        full, _ = log_log_fit([r["length"] for r in every], [r["median_s"] for r in every])
        out.append(
            {
                "workload": name,
                "acts_on": pts[0]["acts_on"],
                "d_model": d,
                "overhead_s": overhead,
                "slope": slope,
                "intercept": intercept,
                "fit_from": work[0][0],
                "fit_to": work[-1][0],
                "points": len(work),
                "lengths": [n for n, _ in work],
                "slope_raw": raw,
                "slope_every_length": full,
            }
        )
    return out


def d_fits(rows: list[dict], d_models: list[int]) -> list[dict]:
    """Per workload, the log-log slope of t − t₀ against d over every configured width, at
    the largest L it is timed at (the same at every width; there the leading term of its cost
    carries the most of it and t₀ the least). O(L·d) and O(L²·d) both say 1."""
    out = []
    for name in dict.fromkeys(r["workload"] for r in rows):
        mine = [r for r in rows if r["workload"] == name]
        length = max(r["length"] for r in mine)
        t = {(r["d_model"], r["length"]): r["median_s"] for r in mine}
        work = [
            (d, t[(d, length)] - t[(d, 1)])
            for d in d_models
            if (d, length) in t and (d, 1) in t and t[(d, length)] > t[(d, 1)]
        ]
        if len(work) < 2:
            continue
        out.append(
            {
                "workload": name,
                "acts_on": mine[0]["acts_on"],
                "length": length,
                "slope": log_log_fit(*zip(*work))[0],
                "points": len(work),
                "widths": [d for d, _ in work],
                "flop_model_slope": (
                    flop_model_d_slope(length, [d for d, _ in work]) if name == ATTENTION else None
                ),
                "seconds": {d: t.get((d, length)) for d in d_models},
            }
        )
    return out


def ratios(rows: list[dict], lengths: list[int]) -> list[dict]:
    """Per encoding timed, per width and per configured L, its median time over one attention
    layer's median time at the same width and L: one tidy row each, with both times. A time is
    None where that workload was not timed at that L (attention beyond ``attention_max_len``,
    a quadratic encoding beyond ``bias_max_len``), and so is the ratio."""
    times = {(r["workload"], r["d_model"], r["length"]): r["median_s"] for r in rows}
    acts_on = {r["workload"]: r["acts_on"] for r in rows}
    pairs = dict.fromkeys((r["workload"], r["d_model"]) for r in rows if r["workload"] != ATTENTION)
    out = []
    for name, d in pairs:
        for length in lengths:
            enc, att = times.get((name, d, length)), times.get((ATTENTION, d, length))
            out.append(
                {
                    "workload": name,
                    "acts_on": acts_on[name],
                    "d_model": d,
                    "length": length,
                    "encoding_s": enc,
                    "attention_s": att,
                    "ratio": enc / att if enc is not None and att is not None else None,
                }
            )
    return out


def fractions(ratio_rows: list[dict]) -> dict[Point, dict[int, dict[str, float]]]:
    """Per encoding and width, its time over one attention layer's at every L where both
    were timed, by L: an interval where the row has bootstrap bounds (``ratio_low``,
    ``ratio_high``), else the ratio alone as an interval of zero width."""
    out: dict[Point, dict[int, dict[str, float]]] = {}
    for r in ratio_rows:
        if r["ratio"] is None:
            continue
        low, high = r.get("ratio_low", r["ratio"]), r.get("ratio_high", r["ratio"])
        out.setdefault((r["workload"], r["d_model"]), {})[r["length"]] = interval(
            r["ratio"], low, high
        )
    return out


def worst_fractions(by_length: dict[Point, dict[int, dict[str, float]]]) -> dict[Point, dict]:
    """Per encoding and width, the length at which its time over attention's is largest (by
    estimate), with that fraction's interval: where "negligible next to attention" is
    hardest to meet."""
    out = {}
    for key, at in by_length.items():
        length = max(at, key=lambda n: at[n]["estimate"])
        out[key] = {"length": length, **at[length]}
    return out


def mib(n: float | None) -> float | None:
    return None if n is None else n / MIB


def steps(rows: list[dict]) -> list[dict]:
    """Per encoding and width, the largest step up in time per output byte between two
    consecutive lengths timed, and what changed there: the output's bytes (a cache it may
    outgrow) and the bytes each call faulted in (memory mapped afresh). Time per byte only
    falls with L while the per-call overhead is being amortised, so a rise is a real step."""
    out = []
    pairs = dict.fromkeys((r["workload"], r["d_model"]) for r in rows if r["workload"] != ATTENTION)
    for name, d in pairs:
        mine = sorted(
            (r for r in rows if (r["workload"], r["d_model"]) == (name, d) and r["length"] > 1),
            key=lambda r: r["length"],
        )
        best = None
        for a, b in zip(mine, mine[1:]):
            if not (a["out_bytes"] and b["out_bytes"]):
                continue
            time_x, bytes_x = b["median_s"] / a["median_s"], b["out_bytes"] / a["out_bytes"]
            if best is None or time_x / bytes_x > best["per_byte_x"]:
                best = {
                    "workload": name,
                    "acts_on": a["acts_on"],
                    "d_model": d,
                    "heads": a["heads"],
                    "from_len": a["length"],
                    "to_len": b["length"],
                    "time_x": time_x,
                    "bytes_x": bytes_x,
                    "per_byte_x": time_x / bytes_x,
                    "out_bytes_to": b["out_bytes"],
                    "out_mib_from": a["out_bytes"] / MIB,
                    "out_mib_to": b["out_bytes"] / MIB,
                    "fresh_mib_from": mib(a["fresh_bytes"]),
                    "fresh_mib_to": mib(b["fresh_bytes"]),
                }
        if best is not None:
            out.append(best)
    return out


def window_fresh(rows: list[dict], fit_min_len: int, quadratic: list[str]) -> list[float] | None:
    """The least and the most bytes faulted in per byte written, over every call of an
    encoding fitted in L from ``fit_min_len`` (the quadratic ones are fitted over every
    length): both near 0, the memory is reused throughout the window; both at least 1, it is
    mapped afresh at every call. None where the faults cannot be counted."""
    ratios = [
        r["fresh_bytes"] / r["out_bytes"]
        for r in rows
        if r["workload"] != ATTENTION
        and r["workload"] not in quadratic
        and r["length"] >= fit_min_len
        and r["out_bytes"]
        and r["fresh_bytes"] is not None
    ]
    return [min(ratios), max(ratios)] if ratios else None


def cache_sizes(root: Path = CACHES) -> dict[str, Any]:
    """This machine's CPU caches as the OS describes them: each level's type, bytes and the
    CPUs that share it (Linux sysfs), else the last-level size ``os.sysconf`` gives, else
    "unknown". Machine-specific: kept in timing.json, never in metrics.json."""
    levels = []
    for index in sorted(root.glob("index*")):
        try:
            size = (index / "size").read_text().strip()
            bytes_ = int(size[:-1]) * {"K": 2**10, "M": 2**20, "G": 2**30}[size[-1]]
            levels.append(
                {
                    "level": int((index / "level").read_text()),
                    "type": (index / "type").read_text().strip(),
                    "bytes": bytes_,
                    "shared_cpus": (index / "shared_cpu_list").read_text().strip(),
                }
            )
        except (OSError, ValueError, KeyError, IndexError):
            continue
    levels = [c for c in levels if c["type"] != "Instruction"]
    if levels:
        return {"source": str(root), "levels": levels}
    for level in (3, 2):
        try:
            size = os.sysconf(f"SC_LEVEL{level}_CACHE_SIZE")
        except (ValueError, OSError, AttributeError):
            continue
        if size > 0:
            return {
                "source": "os.sysconf",
                "levels": [{"level": level, "type": "Unified", "bytes": size, "shared_cpus": ""}],
            }
    return {"source": "unknown", "levels": []}


def last_levels(caches: dict) -> tuple[int | None, int | None]:
    """Bytes of the second-level and of the last-level cache (None where unknown)."""
    levels = caches["levels"]
    l2 = next((c["bytes"] for c in levels if c["level"] == 2), None)
    llc = max(levels, key=lambda c: c["level"])["bytes"] if levels else None
    return l2, llc


def _slope(fit: dict) -> float | dict[str, float]:
    """A fit's slope: an interval when it has bootstrap bounds, else the number."""
    if "slope_low" in fit:
        return interval(fit["slope"], fit["slope_low"], fit["slope_high"])
    return fit["slope"]


def evidence(
    fitted: list[dict],
    d_fitted: list[dict],
    by_length: dict[Point, dict[int, dict[str, float]]],
    tables: list[str],
) -> dict[str, Any]:
    """The named values the claims read, by label: for each encoding that computes a table
    (and has a fit) at each width, its log-log slope in L, and its time over one attention
    layer's at every L where both were timed (``by_length``, :func:`fractions`: "negligible
    next to attention" must hold at each, so the worst length decides), with the length where
    that fraction is largest; its slope in d; for attention at each width, its slope in L,
    the range it was fitted over and the slope the flop model expects at the fit's start; its
    slope in d and the flop model's. The claims compare the slopes with the exponents the
    config states, within a tolerance; a mapping passes when every value does. A fit or a
    fraction with bootstrap bounds (:mod:`.resample`) is an interval, which the claims judge
    whole."""
    fitted_tables = [f for f in fitted if f["workload"] in tables]
    att = [f for f in fitted if f["workload"] == ATTENTION]
    d_tables = [f for f in d_fitted if f["workload"] in tables]
    d_att = next((f for f in d_fitted if f["workload"] == ATTENTION), None)
    # Every table with a fit, and every table with a fraction of attention.
    table_points = list(
        dict.fromkeys(
            [(f["workload"], f["d_model"]) for f in fitted_tables]
            + [k for k in by_length if k[0] in tables]
        )
    )
    worst = worst_fractions(by_length)
    return {
        "table_slope": {label(f["workload"], f["d_model"]): _slope(f) for f in fitted_tables},
        # At every L where the table and attention of its width were both timed; None (never
        # within a threshold) for a table timed at no such L.
        "table_to_attention": {
            label(*k): {f"L={n}": v for n, v in sorted(by_length[k].items())}
            if k in by_length
            else None
            for k in table_points
        },
        "worst_fraction_length": {
            label(*k): worst[k]["length"] for k in table_points if k in worst
        },
        # The lengths at which some table's fraction of attention was measured.
        "fraction_lengths": sorted({n for k in table_points for n in by_length.get(k, {})}),
        "attention_fit_slope": {f"d={f['d_model']}": _slope(f) for f in att},
        "attention_fit_range": {f"d={f['d_model']}": f"{f['fit_from']}–{f['fit_to']}" for f in att},
        "flop_model_slope": {
            f"d={f['d_model']}": flop_model_slope(f["fit_from"], f["d_model"]) for f in att
        },
        "table_d_slope": {f"{f['workload']} L={f['length']}": _slope(f) for f in d_tables},
        "attention_d_slope": _slope(d_att) if d_att else None,
        # Each encoding's slope in L at the widest width fitted, for the report card.
        "cost_slope": {
            f["workload"]: f["slope"]
            for f in sorted(fitted, key=lambda f: f["d_model"])
            if f["workload"] != ATTENTION
        },
        "widest_d": max((f["d_model"] for f in fitted), default=None),
        "attention_d_length": d_att["length"] if d_att else None,
        "flop_model_d_slope": d_att["flop_model_slope"] if d_att else None,
    }


def set_threads(threads: int) -> None:
    """Time on the spec's thread count, whatever the rule holds: an exclusive rule holds every
    core to keep other jobs off the machine, not to time on all of them. Left set, so that the
    device line of metrics.json names the threads the timings ran on."""
    torch.set_num_threads(threads)


def compute(ctx: Context) -> Measurements:
    """Every workload's timings at every width, their fits in L and in d, the ratio of each
    encoding to attention at every configured L where both were timed (with its bootstrap
    interval; the claim reads every one), and the steps in time per byte with the machine's
    caches beside them."""
    cfg = ctx.cfg
    if ctx.device.type == "cpu":
        set_threads(SPEC.resources.threads)
    rows, tables, quadratic, blocks = measure(
        cfg, ctx.encodings, ctx.encoding, ctx.seed, ctx.device
    )
    rounds = {(r["workload"], r["d_model"], r["length"]): r["round_blocks"] for r in rows}
    points = resample.medians(blocks, cfg["intervals"]["resamples"], ctx.seed, rounds)
    level = cfg["intervals"]["level"]
    fitted = resample.fit_intervals(fits(rows, cfg), points, level)
    d_fitted = resample.d_fit_intervals(d_fits(rows, cfg["d_models"]), points, level)
    ratio_rows = resample.ratio_intervals(ratios(rows, cfg["lengths"]), points, level, ATTENTION)
    by_length = fractions(ratio_rows)
    att_fits = [f for f in fitted if f["workload"] == ATTENTION]
    caches = cache_sizes()
    l2, llc = last_levels(caches)
    return Measurements(
        rows={"timings": rows, "ratios": ratio_rows},
        evidence=evidence(fitted, d_fitted, by_length, tables),
        summary={
            "threads": torch.get_num_threads(),
            "clock": clock(ctx.device)[1],
            "d_models": list(cfg["d_models"]),
            "widths": ", ".join(map(str, cfg["d_models"])),
            "head_dim": cfg["head_dim"],
            "heads": [heads(cfg, d) for d in cfg["d_models"]],
            "batch": cfg["batch"],
            "causal": cfg["causal"],
            "attention_fit_min_len_per_d": cfg["attention_fit_min_len_per_d"],
            "attention_fit_min_lens": [fit_min_len(ATTENTION, d, cfg) for d in cfg["d_models"]],
            "encoding_fit_min_len": cfg["encoding_fit_min_len"],
            "interval_percent": 100 * cfg["intervals"]["level"],
            "attention_max_len": cfg["attention_max_len"],
            "bias_max_len": cfg["bias_max_len"],
            "flop_crossover_lens": [2 * d for d in cfg["d_models"]],
            "expected_attention_slopes": [
                flop_model_slope(f["fit_from"], f["d_model"]) for f in att_fits
            ],
            "tables": tables,
            "quadratic": quadratic,
            # From which L on an encoding has no encoding of the positions (not timed there).
            "refused": refused_lengths(rows, cfg["lengths"], quadratic),
            # Every encoding's time over attention's at every configured L (the rows, with
            # their intervals; None: not timed), and per encoding and width the length where
            # that fraction is largest, with its interval.
            "ratio_lengths": list(cfg["lengths"]),
            "worst_fraction": {
                label(*k): {"workload": k[0], "d_model": k[1], **v}
                for k, v in worst_fractions(by_length).items()
            },
            "pe_max_fraction": cfg["thresholds"]["pe_max_fraction"],
            "fits": fitted,
            "d_fits": d_fitted,
            "steps": steps(rows),
            "window_fresh": window_fresh(rows, cfg["encoding_fit_min_len"], quadratic),
        },
        # The machine's caches: the same between two runs here, but not between machines.
        timing={
            "machine": {
                "caches": caches,
                "l2_bytes": l2,
                "last_level_cache_bytes": llc,
                "page_bytes": os.sysconf("SC_PAGE_SIZE"),
            }
        },
    )
