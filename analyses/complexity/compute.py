"""What positional encodings cost next to attention, measured against L: the measurement.

The article "Positional Encodings": computing sinusoidal encodings takes O(L·d) time, a learned
lookup the same, "negligible overhead compared to the O(L²·d) cost of self-attention itself, so
positional encoding is essentially free". We time each registry encoding's own work
(:meth:`posenc.encodings.PositionalEncoding.workload`: the input table, the query/key
rotation, the score bias) and one attention layer of the project's model
(posenc.model.Attention: QKV projection, SDPA, output projection) at growing L, with
``torch.utils.benchmark`` (warm-up calls, then the median of blocked repeats). A call costs a
fixed t₀ (interpreter, dispatch, allocation; its time at L = 1) plus the work O(·) describes,
so we fit t(L) = t₀ + c·L^α: α is the log-log slope of t − t₀ against L over a large-L range.

One attention layer costs about 8·L·D² (projections) + 4·L²·D (scores and weighted sum)
flops, so its log-log slope is 1 + L / (L + 2D): it reaches 2 only once L ≫ 2D. Its fit starts
at ``attention_fit_min_len``, and the slope the flop model expects there is reported too.
An encoding's O(L·d) work is linear in L within one level of the memory hierarchy, but its
time per element steps up (several-fold on a CPU) when the (L, d) output outgrows the caches;
its fit starts at ``encoding_fit_min_len``, past that step, and the slope over every length is
reported beside it.

This module measures; the claims (spec.py) judge.
"""

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch.utils import benchmark

from posenc.analysis import Context, Measurements
from posenc.encodings import EncodingParams, InputEncoding, PositionalEncoding, build
from posenc.model import Attention, ModelConfig

ATTENTION = "attention"  # the workload name of the attention layer, beside the encodings'


def clock(device: torch.device) -> tuple[Callable[[], float], str]:
    """The clock the timings use. On the CPU with one thread, that thread's CPU time: it
    excludes the time the thread waits for a core, so other jobs on a shared machine do not
    inflate the result (all the work runs in this thread). Otherwise wall time, which
    ``torch.utils.benchmark`` brackets with CUDA synchronisation."""
    if device.type == "cpu" and torch.get_num_threads() == 1:
        return time.thread_time, "thread CPU time"
    return time.perf_counter, "wall time"


def median_time(
    fn: Callable[[], Any], warmup: int, min_run_time: float, timer: Callable[[], float]
) -> dict[str, float]:
    """Seconds per call of ``fn``: ``warmup`` untimed calls (allocator, caches, lazy init),
    then ``torch.utils.benchmark.Timer.blocked_autorange``, which picks a block size, times
    blocks for at least ``min_run_time`` seconds and reports their median."""
    for _ in range(warmup):
        fn()
    t = benchmark.Timer(
        stmt="fn()", globals={"fn": fn}, timer=timer, num_threads=torch.get_num_threads()
    )
    m = t.blocked_autorange(min_run_time=min_run_time)
    return {"median_s": m.median, "iqr_s": m.iqr, "repeats": len(m.times)}


def encoding_module(name: str, cfg: dict, encoding_cfg: dict, length: int, device):
    """Encoding ``name`` built for L = ``length`` positions (a learned table has L rows)."""
    params = EncodingParams(
        d_model=cfg["d_model"], n_heads=cfg["n_heads"], max_len=length, **encoding_cfg
    )
    return build(name, params).to(device)


def encoding_workload(enc: PositionalEncoding, cfg: dict, length: int, device):
    """A zero-argument call doing ``enc``'s own work for L = ``length`` positions, as its
    place of action defines it (:meth:`~posenc.encodings.PositionalEncoding.workload`): the
    (L, D) table, the rotation of (B, H, L, Dh) queries and keys, the (H, L, L) score bias.
    None for an encoding that does no work (NoPE)."""
    positions = torch.arange(length, device=device)
    return enc.workload(positions, cfg["batch"], cfg["causal"])


def attention_workload(cfg: dict, length: int, seed: int, device):
    """One forward pass of the model's attention layer (no positional encoding) on (B, L, D)."""
    torch.manual_seed(seed)
    mcfg = ModelConfig(d_model=cfg["d_model"], n_heads=cfg["n_heads"], causal=cfg["causal"])
    layer = Attention(mcfg, PositionalEncoding(EncodingParams(d_model=cfg["d_model"])))
    layer = layer.to(device).eval()
    g = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(cfg["batch"], length, cfg["d_model"], generator=g, device=device)  # (B, L, D)
    positions = torch.arange(length, device=device)
    return lambda: layer(x, positions)


def log_log_fit(lengths: list[int], seconds: list[float]) -> tuple[float, float]:
    """Least-squares line log t = slope · log L + intercept: (slope, intercept)."""
    slope, intercept = np.polyfit(np.log(lengths), np.log(seconds), 1)
    return float(slope), float(intercept)


def flop_model_slope(length: int, d_model: int) -> float:
    """d log F / d log L for F = 8 L D² + 4 L² D: 1 + L / (L + 2D)."""
    return 1 + length / (length + 2 * d_model)


def measure(
    cfg: dict, encodings: list[str], encoding_cfg: dict, seed: int, device
) -> tuple[list[dict], list[str], list[str]]:
    """Time every workload at L = 1 (its fixed per-call cost) and at every configured length
    it is run at. Returns tidy rows, the encodings that compute a positional table (an
    :class:`~posenc.encodings.InputEncoding`) and those whose work is quadratic in L, timed
    only up to ``bias_max_len``."""
    rows: list[dict] = []
    tables: dict[str, None] = {}
    quadratic: dict[str, None] = {}
    timer, _ = clock(device)
    with torch.no_grad():
        for length in [1, *cfg["lengths"]]:
            if length <= cfg["attention_max_len"]:
                fn = attention_workload(cfg, length, seed, device)
                t = median_time(fn, cfg["warmup"], cfg["min_run_time"], timer)
                rows.append({"workload": ATTENTION, "acts_on": "layer", "length": length, **t})
            for name in encodings:
                enc = encoding_module(name, cfg, encoding_cfg, length, device)
                if isinstance(enc, InputEncoding):
                    tables[name] = None
                if enc.quadratic_cost:
                    quadratic[name] = None
                    if length > cfg["bias_max_len"]:
                        continue  # an (H, L, L) bias outgrows memory long before a table does
                fn = encoding_workload(enc, cfg, length, device)
                if fn is None:
                    continue
                t = median_time(fn, cfg["warmup"], cfg["min_run_time"], timer)
                rows.append({"workload": name, "acts_on": enc.acts_on, "length": length, **t})
    return rows, list(tables), list(quadratic)


def fit_min_len(workload: str, cfg: dict) -> int:
    return cfg["attention_fit_min_len" if workload == ATTENTION else "encoding_fit_min_len"]


def fits(rows: list[dict], cfg: dict) -> list[dict]:
    """Per workload, the log-log slope of its L-dependent time over its fit range.

    A call costs a fixed overhead t₀ (Python, dispatch, allocation: the time at L = 1) plus
    the work that O(·) describes, so the model is t(L) = t₀ + c·L^α and α is the slope of
    log(t − t₀) against log L (points with t ≤ t₀ carry no information and are left out).
    The slope of the raw times over the same range, and over every length, are kept beside it.
    A workload with fewer than two lengths in its fit range (a bias capped at
    ``bias_max_len``) is fitted over every length.
    """
    out = []
    for name in dict.fromkeys(r["workload"] for r in rows):
        every = [r for r in rows if r["workload"] == name and r["length"] > 1]
        overhead = next(r["median_s"] for r in rows if r["workload"] == name and r["length"] == 1)
        pts = [r for r in every if r["length"] >= fit_min_len(name, cfg)]
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
                "overhead_s": overhead,
                "slope": slope,
                "intercept": intercept,
                "fit_from": work[0][0],
                "fit_to": work[-1][0],
                "points": len(work),
                "slope_raw": raw,
                "slope_every_length": full,
            }
        )
    return out


def ratio_to_attention(rows: list[dict]) -> tuple[int | None, dict[str, float]]:
    """The largest L at which attention was timed, and each encoding's time there over one
    attention layer's."""
    att = {r["length"]: r["median_s"] for r in rows if r["workload"] == ATTENTION}
    att.pop(1, None)
    if not att:
        return None, {}
    ratio_len = max(att)
    ratio = {
        r["workload"]: r["median_s"] / att[ratio_len]
        for r in rows
        if r["workload"] != ATTENTION and r["length"] == ratio_len
    }
    return ratio_len, ratio


def ratios(rows: list[dict], lengths: list[int]) -> list[dict]:
    """Per encoding timed and per configured L, its median time over one attention layer's
    median time at the same L: one tidy row each, with both times. A time is None where that
    workload was not timed at that L (attention beyond ``attention_max_len``, a quadratic
    encoding beyond ``bias_max_len``), and so is the ratio."""
    times = {(r["workload"], r["length"]): r["median_s"] for r in rows}
    acts_on = {r["workload"]: r["acts_on"] for r in rows}
    out = []
    for name in dict.fromkeys(r["workload"] for r in rows if r["workload"] != ATTENTION):
        for length in lengths:
            enc, att = times.get((name, length)), times.get((ATTENTION, length))
            out.append(
                {
                    "workload": name,
                    "acts_on": acts_on[name],
                    "length": length,
                    "encoding_s": enc,
                    "attention_s": att,
                    "ratio": enc / att if enc is not None and att is not None else None,
                }
            )
    return out


def evidence(
    fitted: list[dict], ratio: dict[str, float], tables: list[str], d_model: int
) -> dict[str, Any]:
    """The named values the claims read: for each encoding that computes a table (and has a
    fit), its log-log slope and its time over one attention layer's; for attention, its slope,
    the range it was fitted over and the slope the flop model expects at the fit's start. The
    claims compare the slopes with the exponents the config states (``pe_slope``,
    ``attention_slope``), within a tolerance."""
    slopes = {f["workload"]: f["slope"] for f in fitted}
    fitted_tables = [n for n in tables if n in slopes]
    att = next((f for f in fitted if f["workload"] == ATTENTION), None)
    return {
        "table_slope": {n: slopes[n] for n in fitted_tables},
        # None (never within a threshold) for a table not timed where attention last was.
        "table_to_attention": {n: ratio.get(n) for n in fitted_tables},
        "attention_fit_slope": att["slope"] if att else None,
        "attention_fit_range": f"{att['fit_from']}–{att['fit_to']}" if att else None,
        "flop_model_slope": flop_model_slope(att["fit_from"], d_model) if att else None,
    }


def compute(ctx: Context) -> Measurements:
    """Every workload's timings, their fits, and the ratio of each encoding to attention: at
    the largest L attention was timed at (the claim's), and at every configured L."""
    cfg = ctx.cfg
    rows, tables, quadratic = measure(cfg, ctx.encodings, ctx.encoding, ctx.seed, ctx.device)
    fitted = fits(rows, cfg)
    ratio_len, ratio = ratio_to_attention(rows)
    ratio_rows = ratios(rows, cfg["lengths"])
    by_length: dict[str, dict[int, float | None]] = {}
    for r in ratio_rows:
        by_length.setdefault(r["workload"], {})[r["length"]] = r["ratio"]
    att_fit = next((f for f in fitted if f["workload"] == ATTENTION), None)
    return Measurements(
        rows={"timings": rows, "ratios": ratio_rows},
        evidence=evidence(fitted, ratio, tables, cfg["d_model"]),
        summary={
            "threads": torch.get_num_threads(),
            "clock": clock(ctx.device)[1],
            "d_model": cfg["d_model"],
            "n_heads": cfg["n_heads"],
            "batch": cfg["batch"],
            "causal": cfg["causal"],
            "attention_fit_min_len": cfg["attention_fit_min_len"],
            "encoding_fit_min_len": cfg["encoding_fit_min_len"],
            "attention_max_len": cfg["attention_max_len"],
            "bias_max_len": cfg["bias_max_len"],
            "flop_crossover_len": 2 * cfg["d_model"],
            "expected_attention_slope": (
                flop_model_slope(att_fit["fit_from"], cfg["d_model"]) if att_fit else None
            ),
            "tables": tables,
            "quadratic": quadratic,
            "ratio_len": ratio_len,
            "pe_to_attention": ratio,
            # Every encoding's time over attention's at every configured L (None: not timed).
            "ratio_lengths": list(cfg["lengths"]),
            "ratios": by_length,
            "fits": fitted,
        },
    )
