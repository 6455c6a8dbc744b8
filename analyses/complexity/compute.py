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

The timing is in timing.py, the workloads and their rounds in workloads.py, the fits in fits.py,
the bytes and caches behind a step in memory.py, what the claims read in evidence.py; this
module gathers them. The modules measure; the claims (spec.py) judge.
"""

import os

import torch

from posenc.analysis import Context, Measurements

from . import resample
from .evidence import evidence
from .fits import d_fits, fit_min_len, fits, flop_model_slope, fractions, ratios, worst_fractions
from .memory import cache_sizes, last_levels, steps, window_fresh
from .spec import SPEC
from .timing import clock
from .workloads import ATTENTION, heads, label, measure, refused_lengths


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
