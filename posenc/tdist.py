"""Student's t quantiles, in pure Python (the claims are judged at parse-free, torch-free and
scipy-free time): the intervals of :mod:`posenc.estimates` and the claims' family-wise
adjustment (:mod:`posenc.verdicts`) both read them.

The t distribution's CDF is the regularised incomplete beta function, P(T <= t) =
1 - I_x(df/2, 1/2) / 2 with x = df / (df + t^2) for t >= 0 (Abramowitz & Stegun 26.7.1); I_x
is evaluated by its continued fraction (Numerical Recipes, 3rd ed., §6.4), and the quantile by
bisection on it, to a relative 1e-12. Any real df > 0 (Welch-Satterthwaite degrees of freedom
are not whole numbers); ``df=None`` or infinite is the normal distribution.
"""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist

_EPS = 1e-15
_TINY = 1e-300


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b), by the modified Lentz method."""
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, 10_000):
        m2 = 2 * m
        for numerator in (
            m * (b - m) * x / ((a + m2 - 1.0) * (a + m2)),
            -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + numerator / c
            c = c if abs(c) > _TINY else _TINY
            h *= d * c
        if abs(d * c - 1.0) < _EPS:
            break
    return h


def incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b), 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(log_front)
    # The fraction converges fast for x < (a + 1) / (a + b + 2); use the symmetry otherwise.
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float | None) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom (None: the normal)."""
    if df is None or math.isinf(df):
        return NormalDist().cdf(t)
    tail = 0.5 * incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


@lru_cache(maxsize=4096)  # the same few (level, df) recur: seeds - 1, fragments - 1
def t_quantile(p: float, df: float | None) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (None: the normal)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"a quantile needs 0 < p < 1, got {p}")
    if df is not None and not df > 0:
        raise ValueError(f"degrees of freedom must be positive, got {df}")
    if df is None or math.isinf(df):
        return NormalDist().inv_cdf(p)
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    # Newton's method on the CDF from the normal quantile, kept inside a bracket that
    # bisection shrinks wherever a Newton step would leave it (t's heavy tails at small df).
    low, high = 0.0, max(1.0, NormalDist().inv_cdf(p))
    while t_cdf(high, df) < p:
        low, high = high, high * 2.0
    log_density = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    t = min(max(NormalDist().inv_cdf(p), low), high)
    for _ in range(100):
        error = t_cdf(t, df) - p
        if error < 0:
            low = t
        else:
            high = t
        density = math.exp(log_density - (df + 1) / 2 * math.log1p(t * t / df))
        step = t - error / density if density > 0 else math.nan
        t = step if low < step < high else 0.5 * (low + high)
        if high - low <= 1e-12 * high or abs(error) < 1e-15:
            break
    return t


def half_width(parts, level: float) -> float:
    """The interval's half-width from its parts (variance, degrees of freedom): the square
    root of sum_i t(df_i)^2 v_i, each part scaled by its own quantile. One part: the exact t
    interval. Several: never narrower than one t on their Welch-Satterthwaite df would be
    where it matters. Welch-Satterthwaite's df rises exactly when the seed part happens to
    come out small, which is when the estimate is furthest out, and so covered 0.93 at 3
    seeds where the seeds dominate; each part at its own df covers the nominal level (the
    modified large-sample idea of Graybill & Wang 1980)."""
    if any(math.isinf(v) for v, _ in parts):
        return math.inf
    p = 0.5 + level / 2.0
    return math.sqrt(sum(t_quantile(p, d) ** 2 * v for v, d in parts if v > 0))
