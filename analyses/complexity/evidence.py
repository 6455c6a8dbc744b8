"""The complexity analysis' evidence: what the claims read, from the fits and fractions."""

from typing import Any

from posenc.claims import interval

from .fits import flop_model_slope, worst_fractions
from .workloads import ATTENTION, Point, label


def _slope(fit: dict) -> float | dict[str, float]:
    """A fit's slope: an interval when it has bootstrap bounds, else the number."""
    if "slope_low" in fit:
        return interval(fit["slope"], fit["slope_low"], fit["slope_high"])
    return fit["slope"]


def evidence(
    fitted: list[dict],
    d_fitted: list[dict],
    by_length: dict[Point, dict[int, dict[str, float]]],
    tables: list[str],
) -> dict[str, Any]:
    """The named values the claims read, by label: for each encoding that computes a table
    (and has a fit) at each width, its log-log slope in L, and its time over one attention
    layer's at every L where both were timed (``by_length``, :func:`fractions`: "negligible
    next to attention" must hold at each, so the worst length decides), with the length where
    that fraction is largest; its slope in d; for attention at each width, its slope in L,
    the range it was fitted over and the slope the flop model expects at the fit's start; its
    slope in d and the flop model's. The claims compare the slopes with the exponents the
    config states, within a tolerance; a mapping passes when every value does. A fit or a
    fraction with bootstrap bounds (:mod:`.resample`) is an interval, which the claims judge
    whole."""
    fitted_tables = [f for f in fitted if f["workload"] in tables]
    att = [f for f in fitted if f["workload"] == ATTENTION]
    d_tables = [f for f in d_fitted if f["workload"] in tables]
    d_att = next((f for f in d_fitted if f["workload"] == ATTENTION), None)
    # Every table with a fit, and every table with a fraction of attention.
    table_points = list(
        dict.fromkeys(
            [(f["workload"], f["d_model"]) for f in fitted_tables]
            + [k for k in by_length if k[0] in tables]
        )
    )
    worst = worst_fractions(by_length)
    return {
        "table_slope": {label(f["workload"], f["d_model"]): _slope(f) for f in fitted_tables},
        # At every L where the table and attention of its width were both timed; None (never
        # within a threshold) for a table timed at no such L.
        "table_to_attention": {
            label(*k): {f"L={n}": v for n, v in sorted(by_length[k].items())}
            if k in by_length
            else None
            for k in table_points
        },
        "worst_fraction_length": {
            label(*k): worst[k]["length"] for k in table_points if k in worst
        },
        # The lengths at which some table's fraction of attention was measured.
        "fraction_lengths": sorted({n for k in table_points for n in by_length.get(k, {})}),
        "attention_fit_slope": {f"d={f['d_model']}": _slope(f) for f in att},
        "attention_fit_range": {f"d={f['d_model']}": f"{f['fit_from']}–{f['fit_to']}" for f in att},
        "flop_model_slope": {
            f"d={f['d_model']}": flop_model_slope(f["fit_from"], f["d_model"]) for f in att
        },
        "table_d_slope": {f"{f['workload']} L={f['length']}": _slope(f) for f in d_tables},
        "attention_d_slope": _slope(d_att) if d_att else None,
        # Each encoding's slope in L at the widest width fitted, for the report card.
        "cost_slope": {
            f["workload"]: f["slope"]
            for f in sorted(fitted, key=lambda f: f["d_model"])
            if f["workload"] != ATTENTION
        },
        "widest_d": max((f["d_model"] for f in fitted), default=None),
        "attention_d_length": d_att["length"] if d_att else None,
        "flop_model_d_slope": d_att["flop_model_slope"] if d_att else None,
    }
