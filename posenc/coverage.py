"""Do the study's intervals cover, and do its claims err no more often than their level? Both
by simulation, on synthetic per-window tables shaped like the study's (seeds x fragments x
windows) whose variance components were estimated from a default run's per-window bits
(:func:`variance_components`; ``benchmarks/variance_components.py`` writes them to
``tests/fixtures/variance_components.json``).

The model of a per-window score is x[s, u] = mu + a[s] + b[f(u)] + c[u] + e[s, u]: a seed's
model (a), the fragment of text the window falls in (b), the window (c) and the model on that
window (e), each normal with its own variance. The intervals judged are the aggregate's own
(:class:`posenc.estimates.Design`), and the claims the evaluator's own
(:func:`posenc.claims.evaluate`). Pure numpy; deterministic for a seed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from posenc.claims import Check, Claim, evaluate
from posenc.estimates import Design

COMPONENTS = ("seed", "fragment", "window", "residual")


def variance_components(values: np.ndarray, fragments: Sequence[int]) -> dict[str, float]:
    """Method-of-moments estimates (clamped at 0) of the four variances of the model above,
    from an (S, U) table of per-window scores and each window's fragment: the two-way table's
    interaction mean square for the residual, its seed mean square for the seed, and a one-way
    analysis of the per-window means by fragment for the fragment and the window."""
    x = np.asarray(values, dtype=float)
    n_seeds, n_units = x.shape
    frag = np.unique(np.asarray(fragments), return_inverse=True)[1]
    grand, per_seed, per_unit = x.mean(), x.mean(axis=1), x.mean(axis=0)
    interaction = x - per_seed[:, None] - per_unit[None, :] + grand
    ms_residual = (
        float((interaction**2).sum() / ((n_seeds - 1) * (n_units - 1))) if n_seeds > 1 else 0.0
    )
    ms_seed = n_units * float(((per_seed - grand) ** 2).sum()) / max(n_seeds - 1, 1)
    counts = np.bincount(frag)
    n_frag = len(counts)
    frag_means = np.bincount(frag, weights=per_unit) / counts
    within = float(((per_unit - frag_means[frag]) ** 2).sum()) / max(n_units - n_frag, 1)
    between = float((counts * (frag_means - per_unit.mean()) ** 2).sum()) / max(n_frag - 1, 1)
    n0 = (n_units - float((counts**2).sum()) / n_units) / max(n_frag - 1, 1)
    residual = ms_residual
    return {
        "seed": max((ms_seed - ms_residual) / n_units, 0.0) if n_seeds > 1 else 0.0,
        "fragment": max((between - within) / n0, 0.0) if n_frag > 1 else 0.0,
        "window": max(within - residual / n_seeds, 0.0),
        "residual": residual,
    }


def simulate(
    components: Mapping[str, float],
    fragments: Sequence[int],
    n_seeds: int,
    rng: np.random.Generator,
    mean: float = 0.0,
) -> np.ndarray:
    """One synthetic (n_seeds, U) table of the model above, windows in ``fragments``."""
    frag = np.unique(np.asarray(fragments), return_inverse=True)[1]
    n_units = len(frag)
    sd = {k: float(np.sqrt(components[k])) for k in COMPONENTS}
    return (
        mean
        + rng.normal(0.0, sd["seed"], (n_seeds, 1))
        + rng.normal(0.0, sd["fragment"], frag.max() + 1)[frag][None, :]
        + rng.normal(0.0, sd["window"], n_units)[None, :]
        + rng.normal(0.0, sd["residual"], (n_seeds, n_units))
    )


def coverage(
    components: Mapping[str, float],
    fragments: Sequence[int],
    n_seeds: int,
    trials: int,
    level: float = 0.95,
    seed: int = 0,
) -> float:
    """The share of ``trials`` synthetic tables whose interval, as the aggregate computes it,
    holds the true mean."""
    rng = np.random.default_rng(seed)
    design = Design({"windows": list(fragments)})
    hits = 0
    for _ in range(trials):
        table = simulate(components, fragments, n_seeds, rng)
        found = design.mean(table, "models", "windows").interval(level)
        hits += found["low"] <= 0.0 <= found["high"]
    return hits / trials


def family_error(
    components: Sequence[Mapping[str, float]],
    fragments: Sequence[int],
    n_seeds: int,
    entries: Sequence[int],
    ledgers: int,
    level: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """How often a claim fails when every one of its entries is exactly at its threshold (the
    least favourable point for a claim that should not fail): ``ledgers`` synthetic ledgers,
    each with one claim per count in ``entries`` ("each entry above 0"), every entry an
    independent model population scored on the same windows, with variance components drawn
    in turn from ``components``. Returns the share of claims that fail, overall and by m."""
    rng = np.random.default_rng(seed)
    design = Design({"windows": list(fragments)})
    claims = [
        Claim(
            f"sim.m{i}",
            "Each entry is above its threshold.",
            kind="empirical",
            checks=(Check(f"gain{i}", ">", "zero"),),
        )
        for i in range(len(entries))
    ]
    cfg = {"thresholds": {"zero": 0.0}}
    fails = np.zeros(len(entries))
    draw = 0
    for _ in range(ledgers):
        evidence = {}
        for i, m in enumerate(entries):
            evidence[f"gain{i}"] = {}
            for j in range(m):
                comp = components[draw % len(components)]
                draw += 1
                table = simulate(comp, fragments, n_seeds, rng)
                est = design.mean(table, ("model", i, j), "windows")
                evidence[f"gain{i}"][f"e{j}"] = est.interval(level)
        for i, entry in enumerate(evaluate(claims, evidence, cfg, "sim")):
            fails[i] += entry["verdict"] == "fail"
    rates = fails / ledgers
    return {
        "fail_rate": float(fails.sum() / (ledgers * len(entries))),
        "by_entries": {int(m): float(r) for m, r in zip(entries, rates)},
    }
