"""Complexity figure and table: one function per figure and per table of the spec."""

import numpy as np

from posenc.analysis import Context, Measurements
from posenc.plotting import style

from .compute import ATTENTION


def figure_scaling(m: Measurements, ctx: Context):
    """Time per call against L, log-log, with the fitted lines over the fit range."""
    import matplotlib.pyplot as plt

    cfg = ctx.cfg
    fig, ax = plt.subplots(figsize=(7.5, 4.2), layout="constrained")
    slopes = {f["workload"]: f for f in m.summary["fits"]}
    timings = m.rows["timings"]
    for name in dict.fromkeys(r["workload"] for r in timings):
        rows = [r for r in timings if r["workload"] == name and r["length"] > 1]
        look = {"color": "black", "marker": "o"} if name == ATTENTION else style(name)
        label = name if name not in slopes else f"{name} (slope {slopes[name]['slope']:.2f})"
        ax.plot(
            [r["length"] for r in rows],
            [r["median_s"] for r in rows],
            ms=3,
            lw=1.2 if name == ATTENTION else 1,
            label=label,
            **look,
        )
        if name in slopes:
            f = slopes[name]
            xs = np.geomspace(f["fit_from"], f["fit_to"], 16)
            fit = f["overhead_s"] + np.exp(f["intercept"]) * xs ** f["slope"]
            ax.plot(xs, fit, color=look["color"], ls=":", lw=2, alpha=0.6)
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="sequence length L",
        ylabel="median seconds per call",
        title=f"d_model = {cfg['d_model']}, {cfg['n_heads']} heads, batch {cfg['batch']}",
    )
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)
    return fig


def table_slopes(m: Measurements, ctx: Context):
    times = {(r["workload"], r["length"]): r["median_s"] for r in m.rows["timings"]}
    ratio = m.summary["pe_to_attention"]
    columns = [
        "workload",
        "acts on",
        "t₀ (s)",
        "slope of t − t₀",
        "fit range",
        "raw slope",
        "raw slope, every L",
        "time at end (s)",
        "time / attention",
    ]
    rows = [
        [
            f["workload"],
            f["acts_on"],
            f["overhead_s"],
            f["slope"],
            f"{f['fit_from']}–{f['fit_to']}",
            f["slope_raw"],
            f["slope_every_length"],
            times[(f["workload"], f["fit_to"])],
            ratio.get(f["workload"]),
        ]
        for f in m.summary["fits"]
    ]
    return columns, rows


def table_ratios(m: Measurements, ctx: Context):
    """One row per encoding timed, one column per L: its time over attention's (None, shown
    as "—", where either was not timed at that L)."""
    lengths = m.summary["ratio_lengths"]
    acts_on = {r["workload"]: r["acts_on"] for r in m.rows["ratios"]}
    columns = ["encoding", "acts on", *(f"L = {n}" for n in lengths)]
    rows = [
        [name, acts_on[name], *(by_length.get(n) for n in lengths)]
        for name, by_length in m.summary["ratios"].items()
    ]
    return columns, rows
