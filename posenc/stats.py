"""Confidence intervals by a two-level (hierarchical) bootstrap: over seeds, and within each
model over its evaluation units (windows of text, test sequences).

A trained model's score is a mean over evaluation units; a study's is the mean over seeds of
those. Both levels vary: another seed trains another model, other windows score other text.
One resample draws the seeds with replacement, then, for each drawn seed, the units with
replacement, and takes the mean (Davison & Hinkley 1997, §3.8: resampling both stages of a
two-stage design). The interval is the percentile interval of those resampled means.

Comparisons are paired where the data are: every quantity computed from the same
:class:`Bootstrap` reuses the same draws for the same keys, so a difference between two lengths
scored on the same windows, or two encodings scored on the same text, resamples those windows
jointly, and its interval is the difference's own, not a sum of two independent widths. Draws
are keyed by name and seeded from the key, so they do not depend on the order of the calls.

Pure numpy; deterministic for a given seed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable
from dataclasses import dataclass

import numpy as np

from posenc.claims import interval
from posenc.estimates import seeds_by_units


@dataclass(frozen=True)
class Resampled:
    """A statistic's point estimate (on the data as measured) and its bootstrap draws. The
    arithmetic pairs draw i with draw i, so differences of resampled means stay paired."""

    point: float
    draws: np.ndarray  # (resamples,)

    def __sub__(self, other: Resampled) -> Resampled:
        return Resampled(self.point - other.point, self.draws - other.draws)

    def __add__(self, other: Resampled) -> Resampled:
        return Resampled(self.point + other.point, self.draws + other.draws)

    def __neg__(self) -> Resampled:
        return Resampled(-self.point, -self.draws)

    def interval(self, level: float) -> dict[str, float]:
        """``{"estimate", "low", "high", "se", "df", "level"}``: the point estimate and the
        central ``level`` percentile interval of the draws, with the draws' standard deviation
        as its standard error (normal, ``df`` None), from which a claim judging several
        entries widens it (:func:`posenc.verdicts.adjusted`)."""
        tail = (1.0 - level) / 2.0
        low, high = np.quantile(self.draws, [tail, 1.0 - tail])
        se = float(np.std(self.draws, ddof=1)) if len(self.draws) > 1 else 0.0
        return interval(float(self.point), float(low), float(high), se=se, df=None, level=level)


class Bootstrap:
    """Seeds and units resampled ``resamples`` times. ``seeds_of`` names a population of
    models (an encoding's models of one task: the same models behind each of its series);
    ``units_of`` names a set of evaluation units shared by every model scored on it."""

    def __init__(self, resamples: int, seed: int = 0):
        if resamples < 1:
            raise ValueError(f"resamples must be >= 1, got {resamples}")
        self.resamples = resamples
        self.seed = seed
        self._draws: dict[tuple, np.ndarray] = {}

    def _indices(self, key: Hashable, n: int) -> np.ndarray:
        """(resamples, n) indices drawn with replacement from range(n), fixed by ``key``."""
        cache_key = (key, n)
        if cache_key not in self._draws:
            digest = hashlib.sha256(repr((self.seed, key, n)).encode()).digest()
            rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))
            self._draws[cache_key] = rng.integers(0, n, size=(self.resamples, n))
        return self._draws[cache_key]

    def mean(self, values: np.ndarray, seeds_of: Hashable, units_of: Hashable) -> Resampled:
        """The mean over seeds (rows) of the mean over units (columns) of ``values``, an
        (n_seeds, n_units) array, resampled at both levels."""
        values = seeds_by_units(values)
        n_seeds, n_units = values.shape
        seeds = self._indices(("seeds", seeds_of), n_seeds)  # (R, S)
        units = self._indices(("units", units_of), n_units)  # (R, U)
        # (R, S, U): for each resample, the drawn seeds' rows at the drawn units; the same
        # units for every drawn seed (they are one shared set of windows or sequences).
        resampled = values[seeds[:, :, None], units[:, None, :]]
        return Resampled(float(values.mean()), resampled.mean(axis=(1, 2)))

    def median(self, values: np.ndarray, units_of: Hashable) -> Resampled:
        """The median of ``values`` (a 1-d array of units: timed blocks, say), resampled over
        its units."""
        values = np.asarray(values, dtype=float)
        if values.ndim != 1 or values.size == 0:
            raise ValueError(f"values must be a non-empty 1-d array, got {values.shape}")
        units = self._indices(("units", units_of), len(values))
        return Resampled(float(np.median(values)), np.median(values[units], axis=1))


def disagree(intervals: list[dict[str, float]]) -> bool:
    """Whether some two of these (per-seed) intervals do not overlap: the seeds then differ by
    more than their evaluation noise, and a mean over them would hide it."""
    return len(intervals) > 1 and max(i["low"] for i in intervals) > min(
        i["high"] for i in intervals
    )
