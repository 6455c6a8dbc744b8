"""Means of trained models' scores with intervals that cover at a handful of seeds: a
Student-t interval whose variance has a seed part and a text part, each estimated from its
own replicates, with Welch-Satterthwaite degrees of freedom.

A study's score is the mean over S seeds (models) of each model's mean over U evaluation
units (windows of text, test sequences), and the units are the same for every model. Two
things vary: another seed trains another model, other text gives other windows. The units
are not independent either: windows of text fall in F fragments of contiguous text (a
fragment of the validation split, :attr:`posenc.data.CharCorpus.val_fragments`), which share
a topic and a style. So the mean's variance is estimated as the sum of

* the seed part, var(per-seed means) / S, on S - 1 degrees of freedom (it also carries the
  model-by-window noise, once), and
* the text part, the cluster-robust variance of a ratio mean over the F fragments with
  Bell & McCaffrey's (2002) small-sample correction (CR2), sum_f (T_f - n_f x)^2 / (N^2 (1 -
  n_f / N)), on Kish's effective number of fragments less one, 1 / sum_f (n_f / N)^2 - 1, as
  degrees of freedom (T_f the fragment's total of the per-unit means over seeds, n_f its
  units, N all units): the crossed design of Cameron, Gelbach & Miller (2011) with the
  interaction counted in both parts, so never less than it should be. The study's 64 scored
  windows fall in 13 fragments of 1 to 13 windows: 8 effective fragments, 7 degrees of
  freedom, where counting 13 equal ones covered 0.91 at a nominal 0.95;

and the interval is estimate ± sqrt(sum_i t(df_i)^2 v_i), each part scaled by its own t
quantile (:func:`posenc.tdist.half_width`; the Welch-Satterthwaite df is recorded beside
it). At 3 seeds the seed part alone has 2 degrees of freedom, t = 4.30 at 95 %: a percentile
bootstrap over 3 seeds can at best resample 10 distinct sets and covers about 0.72 where the
seeds dominate; this covers the nominal level (the simulations of :mod:`posenc.coverage`, run
by ``tests/test_estimates.py`` and ``benchmarks/coverage.py``).

Comparisons are paired where the data are: an :class:`Estimate` keeps, per population of
models (an encoding's models of a task) each seed's contribution and, per set of units, each
fragment's, so a difference of two lengths scored on the same windows by the same models
cancels what they share, and two encodings scored on the same text share the text part only.
Ratios are linearised (the delta method). Pure numpy and Python; deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from posenc.tdist import half_width


@dataclass(frozen=True)
class Estimate:
    """A linear statistic of model scores: its point value and, for its variance, each seed's
    and each fragment's centred contribution (``seeds``: {population: {seed: value}};
    ``clusters``: {unit set: (F,) array})."""

    point: float
    seeds: Mapping[Hashable, Mapping[int, float]] = field(default_factory=dict)
    clusters: Mapping[Hashable, np.ndarray] = field(default_factory=dict)
    # Each unit set's fragment weights n_f / N (the share of its units each holds).
    weights: Mapping[Hashable, np.ndarray] = field(default_factory=dict)

    def _combine(self, other: Estimate, sign: float) -> Estimate:
        seeds = {k: dict(v) for k, v in self.seeds.items()}
        for population, parts in other.seeds.items():
            mine = seeds.setdefault(population, {})
            for seed, value in parts.items():
                mine[seed] = mine.get(seed, 0.0) + sign * value
        clusters = dict(self.clusters)
        for units, parts in other.clusters.items():
            if units in clusters and len(clusters[units]) != len(parts):
                raise ValueError(f"unit set {units!r} has two fragment counts")
            clusters[units] = clusters.get(units, 0.0) + sign * np.asarray(parts)
        weights = {**self.weights, **other.weights}
        return Estimate(self.point + sign * other.point, seeds, clusters, weights)

    def scaled(self, factor: float) -> Estimate:
        return Estimate(
            self.point * factor,
            {k: {s: x * factor for s, x in v.items()} for k, v in self.seeds.items()},
            {k: np.asarray(v) * factor for k, v in self.clusters.items()},
            self.weights,
        )

    def __add__(self, other: Estimate | float) -> Estimate:
        if isinstance(other, Estimate):
            return self._combine(other, 1.0)
        return Estimate(self.point + other, self.seeds, self.clusters, self.weights)

    __radd__ = __add__

    def __sub__(self, other: Estimate | float) -> Estimate:
        if isinstance(other, Estimate):
            return self._combine(other, -1.0)
        return Estimate(self.point - other, self.seeds, self.clusters, self.weights)

    def __rsub__(self, other: float) -> Estimate:
        return (-self) + other

    def __neg__(self) -> Estimate:
        return self.scaled(-1.0)

    def ratio(self, other: Estimate) -> Estimate:
        """self / other, linearised about the point (the delta method): the contributions of
        (self - r other) / other at r = self / other."""
        if other.point == 0:
            raise ZeroDivisionError("a ratio to an estimate of 0")
        r = self.point / other.point
        linear = (self - other.scaled(r)).scaled(1.0 / other.point)
        return Estimate(r, linear.seeds, linear.clusters, linear.weights)

    def parts(self) -> list[tuple[float, float]]:
        """(variance, degrees of freedom) of each part: a population's seeds, a unit set's
        fragments."""
        out = []
        for values in self.seeds.values():
            x = np.array(list(values.values()), dtype=float)
            if len(x) > 1:
                out.append((len(x) / (len(x) - 1) * float(np.sum(x**2)), len(x) - 1.0))
            elif len(x) == 1 and x[0] != 0.0:
                out.append((math.inf, 1.0))  # one seed: its spread is unknown
        for units, values in self.clusters.items():
            z = np.asarray(values, dtype=float)
            w = self.weights.get(units, np.full(len(z), 1.0 / max(len(z), 1)))
            if len(z) > 1:
                # CR2 (Bell & McCaffrey 2002) for a mean: each fragment's residual over
                # 1 - its leverage n_f / N; on Kish's effective number of fragments less one,
                # 1 / sum (n_f / N)^2 - 1: a few large fragments carry the mean, and count as
                # few (equal fragments: CR1's F / (F - 1) and F - 1).
                variance = float(np.sum(z**2 / (1.0 - w)))
                out.append((variance, max(1.0 / float(np.sum(w**2)) - 1.0, 1.0)))
        return out

    @property
    def se(self) -> float:
        return math.sqrt(sum(v for v, _ in self.parts()))

    @property
    def df(self) -> float | None:
        """Welch-Satterthwaite degrees of freedom, for the record (the interval itself is
        :func:`posenc.tdist.half_width`'s); None when the variance is 0 or unknown."""
        return _satterthwaite(self.parts())

    def interval(self, level: float) -> dict[str, Any]:
        """``{"estimate", "low", "high", "se", "df", "level", "parts"}``: estimate ± the
        :func:`half_width` of its parts at ``level``; the claims' evaluator re-derives wider
        bounds from the parts where a claim judges several entries
        (:func:`posenc.verdicts.adjusted`)."""
        parts = self.parts()
        half = half_width(parts, level)
        return {
            "estimate": float(self.point),
            "low": float(self.point - half),
            "high": float(self.point + half),
            "se": math.sqrt(sum(v for v, _ in parts)),
            "df": _satterthwaite(parts),
            "level": level,
            "parts": [[float(v), float(d)] for v, d in parts],
        }


def _satterthwaite(parts: list[tuple[float, float]]) -> float | None:
    parts = [(v, d) for v, d in parts if v > 0]
    if not parts or any(math.isinf(v) for v, _ in parts):
        return None
    return sum(v for v, _ in parts) ** 2 / sum(v * v / d for v, d in parts)


def seeds_by_units(values: Any) -> np.ndarray:
    """``values`` as a float (n_seeds, n_units) array, a row per model and a column per unit
    that every model scored: the shape both :class:`Design` and :class:`posenc.stats.Bootstrap`
    take their means of; anything else is a ValueError."""
    values = np.asarray(values, dtype=float)
    if values.ndim != 2 or values.size == 0:
        raise ValueError(f"values must be a non-empty (seeds, units) array, got {values.shape}")
    return values


class Design:
    """How units fall in fragments: ``clusters`` maps a unit set's name (``units_of``) to each
    unit's fragment label; a unit set not named has each unit its own fragment (independent
    test sequences)."""

    def __init__(self, clusters: Mapping[Hashable, Sequence[Hashable]] | None = None):
        # Each unit set's fragment index per unit (0..F-1), computed once.
        self._labels = {
            k: np.unique(np.asarray(v), return_inverse=True)[1].reshape(-1)
            for k, v in (clusters or {}).items()
        }

    def fragments(self, units_of: Hashable, n_units: int) -> np.ndarray:
        """Each unit's fragment index (0..F-1)."""
        labels = self._labels.get(units_of)
        if labels is None:
            return np.arange(n_units)
        if len(labels) != n_units:
            raise ValueError(
                f"unit set {units_of!r}: {n_units} units scored, {len(labels)} labelled"
            )
        return labels

    def mean(
        self,
        values: np.ndarray,
        seeds_of: Hashable,
        units_of: Hashable,
        seed_ids: Sequence[int] | None = None,
    ) -> Estimate:
        """The mean over seeds (rows) of the mean over units (columns) of ``values``, an
        (n_seeds, n_units) array; ``seed_ids`` name the rows (default 0..S-1), so that the
        same models pair across calls."""
        values = seeds_by_units(values)
        n_seeds, n_units = values.shape
        seed_ids = list(range(n_seeds)) if seed_ids is None else list(seed_ids)
        grand = float(values.mean())
        per_seed = values.mean(axis=1)  # (S,)
        per_unit = values.mean(axis=0)  # (U,)
        fragment = self.fragments(units_of, n_units)
        totals = np.bincount(fragment, weights=per_unit - grand)  # (F,): T_f - n_f x
        return Estimate(
            grand,
            {seeds_of: {s: float(x) for s, x in zip(seed_ids, (per_seed - grand) / n_seeds)}},
            {units_of: totals / n_units},
            {units_of: np.bincount(fragment) / n_units},
        )
