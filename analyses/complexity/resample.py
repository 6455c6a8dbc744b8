"""Intervals for the timing claims: a bootstrap over each point's timed blocks.

A slope fitted to one median per point is a single draw of a noisy process: a burst of load
on a shared machine moves a few blocks and, through them, the slope. Each point (workload,
width, length) is timed in several rounds interleaved with every other point (compute.py), so
a burst hits all points alike, and each point keeps its blocks. Resampling the blocks of every
point with replacement, taking their medians and refitting exactly as the point estimate is
fitted gives the slope's (and each ratio's) bootstrap distribution; its central interval is
what the claims judge. An interval that straddles a threshold is inconclusive, not a fail.

Pure numpy; deterministic for a given seed (posenc.stats.Bootstrap keys its draws by point).
"""

from __future__ import annotations

import hashlib

import numpy as np

from posenc.claims import interval
from posenc.stats import Bootstrap, Resampled

Key = tuple[str, int, int]  # (workload, d_model, length)


def medians(
    blocks: dict[Key, list[float]],
    resamples: int,
    seed: int,
    rounds: dict[Key, list[int]] | None = None,
) -> dict[Key, Resampled]:
    """Each point's median time per call and its resampled medians. With ``rounds`` (how
    many of a point's blocks, in order, each round timed), a two-level bootstrap: the rounds
    with replacement, then as many blocks as the largest round has, with replacement, within
    each drawn round (Davison & Hinkley 1997, §3.8). A round is a workload built afresh, so its
    blocks share whatever its placement in memory did to them, and an interval over blocks
    alone would be too narrow. Without ``rounds``, the blocks are resampled as one level."""
    boot = Bootstrap(resamples, seed)
    out = {}
    for key, times in blocks.items():
        sizes = (rounds or {}).get(key)
        values = np.asarray(times, dtype=float)
        if not sizes or len(sizes) < 2:
            out[key] = boot.median(values, key)
            continue
        starts = np.cumsum([0, *sizes[:-1]])
        digest = hashlib.sha256(repr((seed, "rounds", key)).encode()).digest()
        gen = np.random.default_rng(int.from_bytes(digest[:8], "little"))  # fixed by the key
        drawn = gen.integers(0, len(sizes), size=(resamples, len(sizes)))  # rounds
        within = gen.random((resamples, len(sizes), max(sizes)))  # blocks in each
        size = np.asarray(sizes)[drawn][:, :, None]
        index = np.asarray(starts)[drawn][:, :, None] + (within * size).astype(int)
        draws = np.median(values[index].reshape(resamples, -1), axis=1)
        out[key] = Resampled(float(np.median(values)), draws)
    return out


def log_log_slopes(xs: list[float], work: np.ndarray) -> np.ndarray:
    """The least-squares slope of log(work) against log(x) for each row of ``work``
    (draws × points), leaving out a draw's points with work ≤ 0 as the point estimate does;
    NaN for a draw with fewer than two points left."""
    x = np.broadcast_to(np.log(np.asarray(xs, dtype=float)), work.shape)
    ok = work > 0
    y = np.log(np.where(ok, work, 1.0))
    n = ok.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mx = np.where(ok, x, 0).sum(axis=1) / n
        my = np.where(ok, y, 0).sum(axis=1) / n
        dx = np.where(ok, x - mx[:, None], 0)
        slope = (dx * (y - my[:, None])).sum(axis=1) / (dx * dx).sum(axis=1)
    return np.where(n >= 2, slope, np.nan)


def _bounds(estimate: float, draws: np.ndarray, level: float) -> dict[str, float]:
    """The central ``level`` interval (posenc.stats.Resampled) of the draws that have a value;
    the estimate alone when none has."""
    draws = draws[np.isfinite(draws)]
    if not draws.size:
        return interval(estimate, estimate, estimate)
    return Resampled(estimate, draws).interval(level)


def fit_intervals(fitted: list[dict], points: dict[Key, Resampled], level: float) -> list[dict]:
    """Each fit in L with ``slope_low`` and ``slope_high``: refitted on every resample over
    the same lengths, each minus that resample's per-call overhead t₀."""
    out = []
    for f in fitted:
        name, d = f["workload"], f["d_model"]
        lengths = f["lengths"]
        work = np.stack([points[name, d, n].draws for n in lengths], axis=1)
        work = work - points[name, d, 1].draws[:, None]
        bounds = _bounds(f["slope"], log_log_slopes(lengths, work), level)
        out.append({**f, "slope_low": bounds["low"], "slope_high": bounds["high"]})
    return out


def d_fit_intervals(d_fitted: list[dict], points: dict[Key, Resampled], level: float) -> list[dict]:
    """Each fit in d with ``slope_low`` and ``slope_high``, refitted on every resample."""
    out = []
    for f in d_fitted:
        name, length, widths = f["workload"], f["length"], f["widths"]
        work = np.stack(
            [points[name, d, length].draws - points[name, d, 1].draws for d in widths], axis=1
        )
        bounds = _bounds(f["slope"], log_log_slopes(widths, work), level)
        out.append({**f, "slope_low": bounds["low"], "slope_high": bounds["high"]})
    return out


def ratio_intervals(
    ratio_rows: list[dict], points: dict[Key, Resampled], level: float, attention: str
) -> list[dict]:
    """Each row of :func:`~.compute.ratios` (an encoding's time over one attention layer's at
    the same width and L) with ``ratio_low`` and ``ratio_high``: the interval of the resampled
    ratios, each resample's median over attention's. None where the ratio is."""
    out = []
    for r in ratio_rows:
        key = (r["workload"], r["d_model"], r["length"])
        att = (attention, r["d_model"], r["length"])
        if r["ratio"] is None or key not in points or att not in points:
            out.append({**r, "ratio_low": None, "ratio_high": None})
            continue
        bounds = _bounds(r["ratio"], points[key].draws / points[att].draws, level)
        out.append({**r, "ratio_low": bounds["low"], "ratio_high": bounds["high"]})
    return out
