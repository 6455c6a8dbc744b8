"""Why extrapolation fails: the attention read out of the trained LMs, against their loss.

Each LM evaluation record of a seed the config names carries a readout
(``posenc.readout.attention_readout``) at every multiplier, plainly and, for ``logn``, with
log-n query scaling: per window, its bits/char and, per attention layer, the normalised entropy
and the mass at distances >= L_train. Two standard explanations are tested across encodings:

- unseen relative positions: the mass past L_train should rank with the loss rise;
- attention dilution: the entropy rise (from 1x) should rank with the loss rise.

Spearman's rank correlation over the encodings whose LMs learned, at each multiplier past 1x,
with a bootstrap over seeds and windows (``posenc.stats``): every draw resamples each
encoding's windows and seeds, and the correlation is recomputed on the draws.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import numpy as np

from posenc.stats import Bootstrap, Resampled

PLAIN = "plain"


def _ranks(x: np.ndarray) -> np.ndarray:
    """Ranks along axis 0 (ties are measure-zero for these continuous quantities)."""
    return np.argsort(np.argsort(x, axis=0), axis=0).astype(float)


def spearman(a: Resampled | list, b: Resampled | list) -> Resampled:
    """Spearman's rho between two lists of per-encoding quantities, point and per draw."""
    point_a = np.array([r.point for r in a])
    point_b = np.array([r.point for r in b])
    draws_a = np.stack([r.draws for r in a])  # (encodings, resamples)
    draws_b = np.stack([r.draws for r in b])

    def rho(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        rx, ry = _ranks(x), _ranks(y)
        rx, ry = rx - rx.mean(0), ry - ry.mean(0)
        norm = np.sqrt((rx**2).sum(0) * (ry**2).sum(0))
        return (rx * ry).sum(0) / np.where(norm == 0, np.nan, norm)

    point = float(rho(point_a[:, None], point_b[:, None])[0])
    return Resampled(point, np.nan_to_num(rho(draws_a, draws_b), nan=0.0))


def _by_model(evals: Iterable[dict]) -> dict[tuple[str, str, int], dict[int, dict]]:
    """{(encoding, arm, multiplier): {seed: readout}} of every record that has a readout."""
    out: dict[tuple[str, str, int], dict[int, dict]] = defaultdict(dict)
    for ev in evals:
        for arm, readouts in (ev.get("readout") or {}).items():
            for r in readouts:
                out[(ev["encoding"], arm, r["multiplier"])][ev["seed"]] = r
    return out


def _mean_over_layers(values: list[list[float | None]]) -> list[float] | None:
    if not values or values[0][0] is None:
        return None
    return [float(np.mean(v)) for v in values]


def mechanism(
    evals: list[dict],
    learned: set[str],
    bootstrap: Bootstrap,
    level: float,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Rows (encoding, arm, multiplier, layer: bits, entropy, far mass with intervals, and
    the rises from 1x) and evidence (the two rank correlations at each multiplier past 1x,
    over the encodings in ``learned``; and how much log-n scaling takes off the entropy rise)."""
    models = _by_model(evals)
    seeds = {key: sorted(v) for key, v in models.items()}

    def stat(e: str, arm: str, m: int, field: str, layer: int | None) -> Resampled | None:
        readouts = models.get((e, arm, m))
        if not readouts:
            return None
        rows = []
        for s in seeds[(e, arm, m)]:
            r = readouts[s]
            if field == "bits":
                rows.append(r["window_bits"])
            else:
                per_window = r[field]
                if layer is None:
                    means = _mean_over_layers(per_window)
                    if means is None:
                        return None
                    rows.append(means)
                elif per_window[0][layer] is None:
                    return None
                else:
                    rows.append([w[layer] for w in per_window])
        return bootstrap.mean(np.array(rows), ("readout", e), ("readout", m))

    def ci(r: Resampled | None) -> dict[str, float] | None:
        return None if r is None else r.interval(level)

    encodings = list(dict.fromkeys(e for e, _, _ in models))
    multipliers = sorted({m for _, _, m in models})
    arms = list(dict.fromkeys(a for _, a, _ in models))
    n_layers = max(
        (len(r["entropy"][0]) for rs in models.values() for r in rs.values() if r["entropy"]),
        default=0,
    )
    rows = []
    for e in encodings:
        for arm in arms:
            for m in multipliers:
                base_bits, bits = stat(e, PLAIN, 1, "bits", None), stat(e, arm, m, "bits", None)
                if bits is None:
                    continue
                for layer in [None, *range(n_layers)]:
                    entropy = stat(e, arm, m, "entropy", layer)
                    base_entropy = stat(e, PLAIN, 1, "entropy", layer)
                    rows.append(
                        {
                            "encoding": e,
                            "arm": arm,
                            "multiplier": m,
                            "layer": "mean" if layer is None else layer + 1,
                            "learned": e in learned,
                            "bits": ci(bits),
                            "bits_rise": ci(bits - base_bits) if base_bits else None,
                            "entropy": ci(entropy),
                            "entropy_rise": (
                                ci(entropy - base_entropy) if entropy and base_entropy else None
                            ),
                            "far_mass": ci(stat(e, arm, m, "far_mass", layer)),
                        }
                    )
    evidence: dict[str, Any] = {"entropy_rank_correlation": {}, "far_mass_rank_correlation": {}}
    judged = [e for e in encodings if e in learned]
    for m in multipliers:
        if m == 1:
            continue
        rise, entropy_rise, far = [], [], []
        for e in judged:
            bits, base = stat(e, PLAIN, m, "bits", None), stat(e, PLAIN, 1, "bits", None)
            entropy, base_entropy = (stat(e, PLAIN, x, "entropy", None) for x in (m, 1))
            mass = stat(e, PLAIN, m, "far_mass", None)
            if None in (bits, base, entropy, base_entropy, mass):
                continue  # undefined there (a learned table past its rows)
            rise.append(bits - base)
            entropy_rise.append(entropy - base_entropy)
            far.append(mass)
        if len(rise) >= 3:
            key = f"{m}x"
            evidence["entropy_rank_correlation"][key] = ci(spearman(entropy_rise, rise))
            evidence["far_mass_rank_correlation"][key] = ci(spearman(far, rise))
    # Query temperature against dilution: the share of the plain entropy rise that log-n
    # scaling takes off, per encoding at the longest multiplier (reported, decides nothing).
    longest = max(multipliers, default=1)
    removed = {}
    for e in encodings:
        plain, scaled, start = (
            stat(e, arm, x, "entropy", None)
            for arm, x in ((PLAIN, longest), ("logn", longest), (PLAIN, 1))
        )
        if plain and scaled and start and abs((plain - start).point) > 0:
            rise, kept = plain - start, scaled - start
            with np.errstate(divide="ignore", invalid="ignore"):
                draws = np.nan_to_num(1 - kept.draws / rise.draws, nan=0.0, posinf=0.0, neginf=0.0)
            removed[e] = ci(Resampled(1 - kept.point / rise.point, draws))
    evidence["logn_entropy_rise_removed"] = removed
    # Log-n scaling against the plain model at the longest length, on the same windows: its
    # fall in bits/char (positive: lower with it).
    evidence["logn_gain"] = {
        e: ci(plain - scaled)
        for e in encodings
        if (plain := stat(e, PLAIN, longest, "bits", None)) is not None
        and (scaled := stat(e, "logn", longest, "bits", None)) is not None
    }
    evidence["mechanism_encodings"] = judged
    evidence["mechanism_encoding_count"] = len(judged)
    return rows, evidence


def flat_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows with each interval as three columns (``<name>``, ``<name>_low``,
    ``<name>_high``), for the CSV and the table."""
    out = []
    for row in rows:
        flat = {}
        for key, value in row.items():
            if isinstance(value, dict) or value is None and key not in ("encoding", "arm"):
                value = value or {}
                flat[key] = value.get("estimate")
                flat[f"{key}_low"] = value.get("low")
                flat[f"{key}_high"] = value.get("high")
            else:
                flat[key] = value
        out.append(flat)
    return out
