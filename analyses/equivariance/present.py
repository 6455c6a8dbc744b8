"""Equivariance figures and tables: one function per figure and per table of the spec."""

import itertools

from posenc.analysis import Context, Measurements
from posenc.plotting import DTYPES, PAGE_WIDTH_IN, panel_grid, series_style, themed

from .compute import _select


def _dtype_colors(dtypes) -> dict[str, str]:
    """Each dtype's colour, the one it has in every figure (posenc.plotting.DTYPES), none of
    them an encoding's."""
    looks = series_style([*DTYPES, *dtypes])
    return {dt: looks[dt]["color"] for dt in dtypes}


def _error_panel(ax, rows, encodings, dtypes, depths, floor: float) -> None:
    """One vertical bar (min to max over models and transforms) per encoding x dtype x depth,
    and a cross at the reversal's largest error where the rows have one.

    The reversal is kept out of the bars and drawn apart: under it a bias symmetric in
    |i - j| is unchanged, so its error sits at rounding and would stretch a bar down to 1e-16
    for an encoding that every other permutation breaks."""
    combos = list(itertools.product(dtypes, depths))
    width = 0.7 / len(combos)
    colors = _dtype_colors(dtypes)
    barred = [r for r in rows if r.get("permutation") != "reversal"]
    for k, (dt, depth) in enumerate(combos):
        for i, encoding in enumerate(encodings):
            errors = _select(barred, encoding=encoding, dtype=dt, n_layers=depth)
            lo, hi = max(min(errors), floor), max(max(errors), floor)
            x = i - 0.35 + width * (k + 0.5)
            ax.plot([x, x], [lo, hi], color=colors[dt], lw=2)
            ax.plot(
                x,
                hi,
                marker="o" if depth == 1 else "s",
                color=colors[dt],
                mfc=colors[dt] if depth == 1 else "white",
                ms=4,
                label=f"{dt}, {depth} layer{'s' if depth > 1 else ''}" if i == 0 else None,
            )
            reversal = _select(
                rows, encoding=encoding, dtype=dt, n_layers=depth, permutation="reversal"
            )
            if reversal:
                ax.plot(
                    x,
                    max(max(reversal), floor),
                    marker="x",
                    color="black",
                    ms=4,
                    label="reversal (not in the bars)" if i == 0 and k == 0 else None,
                )
    ax.set_yscale("log")
    ax.set_xticks(range(len(encodings)), encodings, rotation=30)
    ax.grid(axis="y", alpha=0.3)


def _thresholds(ax, tol: dict[str, float], broken_min: float) -> None:
    # Each dtype's tolerance in its bars' colour: the line a bar of that dtype is held to.
    colors = _dtype_colors(tol)
    for dt, t in tol.items():
        ax.axhline(t, color=colors[dt], ls="--", lw=0.8, label=f"{dt} tolerance")
    ax.axhline(broken_min, color="black", ls=":", lw=0.8, label="broken above")


def _depths(cfg) -> list[int]:
    return sorted({1, cfg["n_layers"]})


def _floor(m: Measurements) -> float:
    return min(m.summary["tolerance"].values()) / 100  # exact zeros sit here, below every tolerance


@themed
def figure_permutation(m: Measurements, ctx: Context):
    """The permutation error per case, bidirectional and causal side by side."""
    cfg = ctx.cfg
    # One above the other: side by side, each panel's encodings would need half the width.
    fig, axes = panel_grid(2, ncols=1, panel_height=2.9, sharey=True)
    for ax, attention in zip(axes, ("bidirectional", "causal")):
        rows = [r for r in m.rows["permutation_errors"] if r["attention"] == attention]
        _error_panel(ax, rows, ctx.encodings, cfg["dtypes"], _depths(cfg), _floor(m))
        _thresholds(ax, m.summary["tolerance"], cfg["thresholds"]["broken_min"])
        ax.set_title(f"{attention} attention")
    # One label for both panels: on the upper panel alone it was taller than the panel and
    # ran above the figure.
    fig.supylabel("max|f(PX) − P f(X)| / max|f(X)|")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncol=3)
    return fig


@themed
def figure_shift(m: Measurements, ctx: Context):
    """The change of the output when every position is shifted by the same constant."""
    import matplotlib.pyplot as plt

    cfg = ctx.cfg
    fig, ax = plt.subplots(figsize=(PAGE_WIDTH_IN, 4.2), layout="constrained")
    _error_panel(ax, m.rows["shift_errors"], ctx.encodings, cfg["dtypes"], _depths(cfg), _floor(m))
    _thresholds(ax, m.summary["tolerance"], cfg["thresholds"]["broken_min"])
    ax.set_ylabel("max|f(X; p+c) − f(X; p)| / max|f(X)|")
    ax.set_title("shifting every position by the same c")
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncol=3)
    return fig


def table_seed(m: Measurements, ctx: Context):
    s, th = m.evidence["seed"], ctx.cfg["thresholds"]
    columns = ["input", "max |difference|", "atol", "allclose"]
    rows = [
        ["no positions", s["no_pe_max_abs"], th["seed_atol_equal"], str(s["no_pe_allclose"])],
        ["sinusoidal PE added", s["pe_max_abs"], th["seed_atol_broken"], str(s["pe_allclose"])],
    ]
    return columns, rows


def _stat_columns(dtypes) -> tuple[list[str], list[str]]:
    keys = [f"{k}_{dt}" for k in ("max", "weakest") for dt in dtypes]
    headers = [
        f"{'largest' if k == 'max' else 'weakest model'} {dt}"
        for k in ("max", "weakest")
        for dt in dtypes
    ]
    return keys, headers


def table_permutation(m: Measurements, ctx: Context):
    keys, headers = _stat_columns(ctx.cfg["dtypes"])
    columns = ["encoding", "attention", *headers, "reversal"]
    rows = [
        [r["encoding"], r["attention"], *(r[k] for k in keys), r["reversal"]]
        for r in m.summary["permutation"]
    ]
    return columns, rows


def table_shift(m: Measurements, ctx: Context):
    keys, headers = _stat_columns(ctx.cfg["dtypes"])
    columns = ["encoding", "relative (registry)", *headers]
    rows = [[r["encoding"], str(r["relative"]), *(r[k] for k in keys)] for r in m.summary["shift"]]
    return columns, rows
