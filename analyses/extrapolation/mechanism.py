"""What changes in the attention of the trained LMs as their loss rises past L_train, read out
against that loss; and what log-n query scaling does to the loss there, read from the extension
section's zero-shot stretch.

Each LM evaluation record of a seed the config names carries a readout
(``posenc.readout.readouts``) at 1x and the longest length plainly, and at the longest under
log-n query scaling: per window, its bits/char and, per attention layer, the entropy of the
attention in nats (raw, and divided by ln n) and the mass at distances >= L_train, with the
entropy uniform attention would have over the same queries. Two standard accounts are set
against the loss rise across encodings:

- unseen relative positions: the mass past L_train;
- attention dilution: the rise of the raw entropy from 1x. Raw, since dilution is attention
  spread over more keys: uniform attention's entropy rises with ln n (its reference is in every
  row) while its normalised entropy stays 1, so the normalised measure cannot show dilution and
  is kept as a secondary column.

Each encoding's quantities are means over seeds and windows with Student-t intervals whose
variance has a seed part (seeds as clusters) and a text part (the fragments of validation
text the windows fall in), as for bits/char (``posenc.estimates``); a rise from 1x pairs the
seeds. The association across encodings is Spearman's rho over the encodings whose LMs learned,
with a one-sided permutation test over encodings (:func:`rank_permutation_test`): the
encodings are the units of that correlation, and a handful of them leaves a large rho likely by
chance, which no resampling of windows can show.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections import defaultdict
from collections.abc import Hashable, Iterable
from statistics import NormalDist
from typing import Any

import numpy as np

from posenc.estimates import Design, Estimate

PLAIN = "plain"
LOGN = "logn"
# Every permutation of the encodings when there are at most this many (8 encodings: 40320),
# else DRAWN_PERMUTATIONS drawn ones.
EXACT_PERMUTATIONS = 10**5
DRAWN_PERMUTATIONS = 10**4
# The stretch evaluation's windows (mode b, the same ends at every length and arm).
STRETCH_UNITS = ("stretch",)
# A rank correlation of a permutation counts as reaching the observed one within rounding.
RHO_TOLERANCE = 1e-12


def readout_units(length: int) -> tuple[str, int]:
    """The units name of the readout's windows at ``length`` (mode a windows of the readout's
    tokens: the same for every model read out)."""
    return ("readout", length)


def average_ranks(x: Iterable[float]) -> np.ndarray:
    """Ranks from 0, ties given the mean of the ranks they span (Spearman's rho with ties)."""
    x = np.asarray(list(x), dtype=float)
    order = np.argsort(x, kind="stable")
    ranks = np.empty(len(x))
    ranks[order] = np.arange(len(x), dtype=float)
    for value in np.unique(x):
        tied = x == value
        if tied.sum() > 1:
            ranks[tied] = ranks[tied].mean()
    return ranks


def _correlation(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pearson's correlation along the last axis (NaN where one side is constant)."""
    a = a - a.mean(-1, keepdims=True)
    b = b - b.mean(-1, keepdims=True)
    norm = np.sqrt((a**2).sum(-1) * (b**2).sum(-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return (a * b).sum(-1) / np.where(norm == 0, np.nan, norm)


def spearman(x: Iterable[float], y: Iterable[float]) -> float:
    """Spearman's rho: Pearson's correlation of the average ranks."""
    return float(_correlation(average_ranks(x), average_ranks(y)))


def _seed_of(seed: int, key: Hashable) -> int:
    digest = hashlib.sha256(repr((seed, key)).encode()).digest()
    return int.from_bytes(digest[:8], "little")


def rank_permutation_test(
    x: Iterable[float], y: Iterable[float], seed: int = 0, key: Hashable = ()
) -> tuple[float, float]:
    """(Spearman's rho, its one-sided p-value): the share of pairings of ``x`` with a permuted
    ``y`` whose rho reaches the observed one, under the null that the pairing is exchangeable
    (no association). Exact over all n! permutations when n! <= EXACT_PERMUTATIONS (the
    observed pairing among them), else over DRAWN_PERMUTATIONS drawn ones, seeded by ``seed``
    and ``key``, with the observed pairing counted once (p = (1 + hits) / (1 + draws), never 0;
    Phipson and Smyth 2010)."""
    rx, ry = average_ranks(x), average_ranks(y)
    n = len(rx)
    if len(ry) != n or n < 2:
        raise ValueError(f"need two equal lists of at least 2 values, got {len(rx)} and {len(ry)}")
    rho = float(_correlation(rx, ry))
    if math.isnan(rho):
        return rho, math.nan
    exact = math.factorial(n) <= EXACT_PERMUTATIONS
    if exact:
        perms = np.array(list(itertools.permutations(range(n))))  # (n!, n)
    else:
        rng = np.random.default_rng(_seed_of(seed, key))
        perms = rng.permuted(np.tile(np.arange(n), (DRAWN_PERMUTATIONS, 1)), axis=1)
    hits = int(np.sum(_correlation(rx[None, :], ry[perms]) >= rho - RHO_TOLERANCE))
    p = hits / len(perms) if exact else (1 + hits) / (1 + len(perms))
    return rho, p


def rank_interval(rho: float, n: int, level: float) -> dict[str, float]:
    """Spearman's ``rho`` over ``n`` pairs with its ``level`` confidence interval: Fisher's z
    with Fieller, Hartley and Pearson's (1957) variance for a rank correlation, 1.06 / (n - 3).
    A claim on rho then rests on its interval, as every other claim rests on its own: at 10
    encodings rho = 0.2 spans about [-0.5, 0.75]. Below 4 pairs the interval is [-1, 1]. z is
    infinite at rho = +-1, so a perfect ranking enters as halfway to the nearest rho n ranks
    can give, 1 - 12 / (n (n^2 - 1)) (ties aside): the interval stays an interval."""
    if n < 4 or math.isnan(rho):
        return {"estimate": rho, "low": -1.0, "high": 1.0}
    edge = 1 - 6 / (n * (n * n - 1))
    z = math.atanh(max(min(rho, edge), -edge))
    half = NormalDist().inv_cdf(0.5 + level / 2) * math.sqrt(1.06 / (n - 3))
    return {"estimate": rho, "low": math.tanh(z - half), "high": math.tanh(z + half)}


def _by_model(evals: Iterable[dict]) -> dict[tuple[str, str, int], dict[int, dict]]:
    """{(encoding, arm, multiplier): {seed: readout}} of every record that has a readout."""
    out: dict[tuple[str, str, int], dict[int, dict]] = defaultdict(dict)
    for ev in evals:
        for arm, readouts in (ev.get("readout") or {}).items():
            for r in readouts:
                out[(ev["encoding"], arm, r["multiplier"])][ev["seed"]] = r
    return out


def _per_window(per_window: list[list[float | None]], layer: int | None) -> list[float] | None:
    """One value per window: a layer's, or the mean over layers (None: undefined there)."""
    if not per_window or per_window[0][0] is None:
        return None
    if layer is None:
        return [float(np.mean(v)) for v in per_window]
    return [w[layer] for w in per_window]


def readout_clusters(corpus, lm_evals: list[dict]) -> dict[tuple, Any]:
    """Which fragment of validation text each readout window falls in, at each length read
    out (units :func:`readout_units`): the readout's windows are mode a's at its own tokens."""
    from posenc.eval_windows import window_fragments

    clusters = {}
    for ev in lm_evals:
        tokens = ((ev.get("settings") or {}).get("mechanism") or {}).get("tokens")
        for readouts in (ev.get("readout") or {}).values():
            for r in readouts:
                length = r["length"]
                clusters[readout_units(length)] = window_fragments(
                    corpus, "all", length, longest=length, tokens=tokens, segment=1, windows=1
                )
    return clusters


def stretch_clusters(corpus, stretched: list[dict]) -> dict[tuple, Any]:
    """Which fragment of validation text each of the stretch's windows falls in (mode b, ending
    where the extension section's longest length puts them)."""
    from posenc.eval_windows import window_fragments

    if not stretched:
        return {}
    settings, train_len = stretched[0]["settings"], stretched[0]["train_len"]
    longest = settings["longest"] * train_len
    return {
        STRETCH_UNITS: window_fragments(
            corpus,
            "segment",
            longest,
            longest=longest,
            tokens=settings["tokens"],
            segment=settings["segment"],
            windows=settings["segment_windows"],
        )
    }


def readout_summary(lm_evals: list[dict]) -> dict[str, Any]:
    """What the captions say of the readout: the seeds read out, the lengths, and the windows
    per seed at 1x and at the longest (the config's mechanism tokens / the length)."""
    read = [ev for ev in lm_evals if ev.get("readout")]
    plain = [r for ev in read for r in ev["readout"].get(PLAIN, [])]
    if not plain:
        return {
            "mechanism_seeds": [],
            "mechanism_longest": None,
            "mechanism_windows_1x": None,
            "mechanism_windows": None,
        }
    longest = max(r["multiplier"] for r in plain)
    windows = {r["multiplier"]: len(r["window_bits"]) for r in plain}
    return {
        "mechanism_seeds": sorted({ev["seed"] for ev in read}),
        "mechanism_longest": longest,
        "mechanism_windows_1x": windows.get(1),
        "mechanism_windows": windows[longest],
    }


def mechanism(
    evals: list[dict],
    learned: set[str],
    design: Design,
    level: float,
    seed: int = 0,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Rows (encoding, arm, multiplier, layer: bits, raw and normalised entropy, far mass with
    intervals, their rises from 1x, and uniform attention's entropy and rise) and evidence (at
    each multiplier past 1x, over the encodings in ``learned``: Spearman's rho of the raw
    entropy rise, and of the far mass, against the loss rise, each with its permutation
    p-value; and how much log-n scaling takes off the entropy rise)."""
    models = _by_model(evals)

    def stat(e: str, arm: str, m: int, field: str, layer: int | None) -> Estimate | None:
        readouts = models.get((e, arm, m))
        if not readouts:
            return None
        seeds = sorted(readouts)
        rows = []
        for s in seeds:
            r = readouts[s]
            values = r["window_bits"] if field == "bits" else _per_window(r[field], layer)
            if values is None:
                return None
            rows.append(values)
        length = readouts[seeds[0]]["length"]
        return design.mean(np.array(rows), ("readout", e), readout_units(length), seeds)

    def ci(r: Estimate | None) -> dict[str, Any] | None:
        return None if r is None else r.interval(level)

    def rise(now: Estimate | None, start: Estimate | None) -> dict[str, Any] | None:
        return ci(now - start) if now is not None and start is not None else None

    def uniform(e: str, arm: str, m: int) -> float | None:
        readouts = models.get((e, arm, m))
        return next(iter(readouts.values()))["uniform_entropy"] if readouts else None

    encodings = list(dict.fromkeys(e for e, _, _ in models))
    multipliers = sorted({m for _, _, m in models})
    arms = list(dict.fromkeys(a for _, a, _ in models))
    n_layers = max(
        (len(r["entropy_nats"][0]) for rs in models.values() for r in rs.values()),
        default=0,
    )
    rows = []
    for e in encodings:
        base_uniform = uniform(e, PLAIN, 1)
        for arm in arms:
            for m in multipliers:
                bits = stat(e, arm, m, "bits", None)
                if bits is None:
                    continue
                here_uniform = uniform(e, arm, m)
                for layer in [None, *range(n_layers)]:
                    entropy = stat(e, arm, m, "entropy_nats", layer)
                    normalised = stat(e, arm, m, "entropy_normalised", layer)
                    rows.append(
                        {
                            "encoding": e,
                            "arm": arm,
                            "multiplier": m,
                            "layer": "mean" if layer is None else layer + 1,
                            "learned": e in learned,
                            "bits": ci(bits),
                            "bits_rise": rise(bits, stat(e, PLAIN, 1, "bits", None)),
                            "entropy": ci(entropy),
                            "entropy_rise": rise(entropy, stat(e, PLAIN, 1, "entropy_nats", layer)),
                            "uniform_entropy": here_uniform,
                            "uniform_rise": (
                                None if base_uniform is None else here_uniform - base_uniform
                            ),
                            "entropy_normalised": ci(normalised),
                            "entropy_normalised_rise": rise(
                                normalised, stat(e, PLAIN, 1, "entropy_normalised", layer)
                            ),
                            "far_mass": ci(stat(e, arm, m, "far_mass", layer)),
                        }
                    )
    evidence: dict[str, Any] = {
        "entropy_rank_correlation": {},
        "entropy_rank_p": {},
        "far_mass_rank_correlation": {},
        "far_mass_rank_p": {},
        "entropy_normalised_rank_correlation": {},
    }
    judged = [e for e in encodings if e in learned]
    ranked: list[str] = []
    for m in multipliers:
        if m == 1:
            continue
        loss, raw, normalised, far, names = [], [], [], [], []
        for e in judged:
            points = [
                stat(e, PLAIN, m, "bits", None),
                stat(e, PLAIN, 1, "bits", None),
                stat(e, PLAIN, m, "entropy_nats", None),
                stat(e, PLAIN, 1, "entropy_nats", None),
                stat(e, PLAIN, m, "entropy_normalised", None),
                stat(e, PLAIN, 1, "entropy_normalised", None),
                stat(e, PLAIN, m, "far_mass", None),
            ]
            if any(p is None for p in points):
                continue  # undefined there (a learned table past its rows)
            bits, bits_1x, h, h_1x, hn, hn_1x, mass = (p.point for p in points)
            loss.append(bits - bits_1x)
            raw.append(h - h_1x)
            normalised.append(hn - hn_1x)
            far.append(mass)
            names.append(e)
        if len(loss) >= 3:
            key = f"{m}x"
            rho, p = rank_permutation_test(raw, loss, seed, ("entropy", m))
            evidence["entropy_rank_correlation"][key] = rank_interval(rho, len(loss), level)
            evidence["entropy_rank_p"][key] = p
            rho, p = rank_permutation_test(far, loss, seed, ("far_mass", m))
            evidence["far_mass_rank_correlation"][key] = rank_interval(rho, len(loss), level)
            evidence["far_mass_rank_p"][key] = p
            evidence["entropy_normalised_rank_correlation"][key] = spearman(normalised, loss)
        ranked = names  # at the longest multiplier, the last: what the claim judges
    # Query temperature against dilution: the share of the plain raw entropy rise that log-n
    # scaling takes off, per encoding at the longest multiplier (reported, decides nothing).
    longest = max(multipliers, default=1)
    removed = {}
    for e in encodings:
        plain, scaled, start = (
            stat(e, arm, x, "entropy_nats", None)
            for arm, x in ((PLAIN, longest), (LOGN, longest), (PLAIN, 1))
        )
        if plain is not None and scaled is not None and start is not None:
            grown = plain - start
            if grown.point != 0:
                removed[e] = ci((plain - scaled).ratio(grown))
    evidence["logn_entropy_rise_removed"] = removed
    evidence["mechanism_longest"] = f"{longest}x"
    evidence["mechanism_encodings"] = ranked
    evidence["mechanism_encoding_count"] = len(ranked)
    return rows, evidence


def logn_stretch_gain(stretched: list[dict], design: Design, level: float) -> dict[str, Any]:
    """What log-n query scaling takes off the loss at the longest length, per encoding, from
    the extension section's zero-shot stretch (mode b, every LM seed, the same windows plain
    and scaled, so the difference pairs them by seed and window): plain minus log-n bits/char
    (positive: lower with it). ``logn_stretch_measured`` says whether the stretch ran log-n at
    all (no extension section, or no logn among its temperatures: False)."""
    cells: dict[tuple[str, str, int], dict[int, list[float]]] = defaultdict(dict)
    for ev in stretched:
        for r in ev["rows"]:
            if r["method"] in (PLAIN, LOGN) and r["mode"] == "segment" and r["defined"]:
                cells[(ev["encoding"], r["method"], r["multiplier"])][ev["seed"]] = r["window_bits"]
    scaled = [m for _, arm, m in cells if arm == LOGN]
    if not scaled:
        return {"logn_stretch_measured": False}
    longest = max(scaled)

    def mean(e: str, arm: str) -> Estimate | None:
        seeds = cells.get((e, arm, longest))
        if not seeds:
            return None
        ids = sorted(seeds)
        values = np.array([seeds[s] for s in ids])
        return design.mean(values, ("lm", e), STRETCH_UNITS, ids)

    gain = {}
    for e in dict.fromkeys(e for e, _, _ in cells):
        plain, logn = mean(e, PLAIN), mean(e, LOGN)
        if plain is not None and logn is not None:
            gain[e] = (plain - logn).interval(level)
    seeds = sorted({ev["seed"] for ev in stretched})
    windows = max((len(v) for c in cells.values() for v in c.values()), default=0)
    return {
        "logn_stretch_measured": True,
        "logn_gain": gain,
        "logn_gain_at": f"{longest}x",
        "logn_stretch_seeds": len(seeds),
        "logn_stretch_windows": windows,
    }


def flat_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows with each interval as three columns (``<name>``, ``<name>_low``,
    ``<name>_high``), for the CSV and the table."""
    out = []
    for row in rows:
        flat = {}
        for key, value in row.items():
            if isinstance(value, dict) or value is None and key in INTERVAL_COLUMNS:
                value = value or {}
                flat[key] = value.get("estimate")
                flat[f"{key}_low"] = value.get("low")
                flat[f"{key}_high"] = value.get("high")
            else:
                flat[key] = value
        out.append(flat)
    return out


# The row fields that are intervals (an undefined one still gets its three columns).
INTERVAL_COLUMNS = frozenset(
    {
        "bits",
        "bits_rise",
        "entropy",
        "entropy_rise",
        "entropy_normalised",
        "entropy_normalised_rise",
        "far_mass",
    }
)
