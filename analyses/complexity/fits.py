"""The complexity analysis' fits: log-log slopes of each workload's time against L and d, the
flop model attention's slopes are held to, and each encoding's time over attention's."""

import numpy as np

from posenc.claims import interval

from .workloads import ATTENTION, Point


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
