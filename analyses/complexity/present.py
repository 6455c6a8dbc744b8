"""Complexity figures and tables: one function per figure and per table of the spec."""

import numpy as np

from posenc.analysis import Context, Measurements
from posenc.plotting import (
    PAGE_WIDTH_IN,
    panel_grid,
    reference_line,
    series_style,
    style,
    themed,
)

from .compute import ATTENTION

MIB = 2**20
# Line style per width, in the order the config lists them (colour and marker: the encoding).
WIDTH_LINES = ("-", "--", ":", "-.")


def _width_panels(widths):
    """One panel per width, one above the other, sharing the axes: (figure, axes). A row of
    every width was drawn 4.2 inches a panel, and shrunk to the page with its type."""
    fig, axes = panel_grid(len(widths), ncols=1, panel_height=3.0, sharex=True, sharey=True)
    return fig, axes


def _legend_beside(ax, **kws) -> None:
    """The panel's legend to its right, outside the data: an encoding's lines are never hidden."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False, **kws)


def look(name: str) -> dict:
    """An encoding's look, or the bare attention's from the palette of series that are not
    encodings; colour and marker only, the width takes the line style."""
    if name == ATTENTION:
        bare = series_style([ATTENTION])[ATTENTION]
        return {"color": bare["color"], "marker": bare["marker"]}
    return style(name)


@themed
def figure_scaling(m: Measurements, ctx: Context):
    """Time per call against L, log-log, one panel per width, with the fitted lines over the
    fit range."""

    cfg, widths = ctx.cfg, m.summary["d_models"]
    fig, axes = _width_panels(widths)
    fits = {(f["workload"], f["d_model"]): f for f in m.summary["fits"]}
    timings = m.rows["timings"]
    for ax, d in zip(axes, widths):
        for name in dict.fromkeys(r["workload"] for r in timings):
            rows = [r for r in timings if (r["workload"], r["d_model"]) == (name, d)]
            rows = [r for r in rows if r["length"] > 1]
            f = fits.get((name, d))
            ax.plot(
                [r["length"] for r in rows],
                [r["median_s"] for r in rows],
                ms=3,
                lw=1.2 if name == ATTENTION else 1,
                label=name if f is None else f"{name} ({f['slope']:.2f})",
                **look(name),
            )
            if f is not None:
                xs = np.geomspace(f["fit_from"], f["fit_to"], 16)
                fit = f["overhead_s"] + np.exp(f["intercept"]) * xs ** f["slope"]
                ax.plot(xs, fit, color=look(name)["color"], ls=":", lw=2, alpha=0.6)
        ax.set(
            xscale="log",
            yscale="log",
            xlabel="sequence length L",
            title=f"d = {d}, {d // cfg['head_dim']} heads, batch {cfg['batch']}",
        )
        ax.grid(alpha=0.3, which="both")
        _legend_beside(ax, title="slope of t − t₀")
        ax.set_ylabel("median s per call")
    return fig


def size_text(n: int) -> str:
    """48 KiB, 2 MiB, 480 MiB."""
    for unit, size in (("GiB", 2**30), ("MiB", MIB), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n} B"


def fresh_ratio(r: dict) -> bool:
    return bool(r["out_bytes"]) and r["fresh_bytes"] is not None


@themed
def figure_memory(m: Measurements, ctx: Context):
    """Seconds per output byte, and bytes faulted in per output byte, against the output's
    bytes, with the machine's cache sizes as vertical lines."""
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(PAGE_WIDTH_IN, 6.2), layout="constrained", sharex=True
    )
    timings = [r for r in m.rows["timings"] if r["workload"] != ATTENTION and r["length"] > 1]
    lines = dict(zip(m.summary["d_models"], WIDTH_LINES * 4))
    for name, d in dict.fromkeys((r["workload"], r["d_model"]) for r in timings):
        rows = [r for r in timings if (r["workload"], r["d_model"]) == (name, d) and r["out_bytes"]]
        x = [r["out_bytes"] for r in rows]
        kw = {"ls": lines[d], "ms": 3, "lw": 1, **look(name)}
        top.plot(
            x, [r["median_s"] / r["out_bytes"] * 1e9 for r in rows], label=f"{name} d={d}", **kw
        )
        fresh = [(xi, r["fresh_bytes"] / r["out_bytes"]) for xi, r in zip(x, rows)]
        fresh = [(xi, f) for xi, f in fresh if f is not None]
        if fresh:
            bottom.plot(*zip(*fresh), **kw)
    for c in m.timing.get("machine", {}).get("caches", {}).get("levels", []):
        for ax in (top, bottom):
            reference_line(ax, c["bytes"], axis="x", lw=0.8)
        top.annotate(
            f"L{c['level']} {size_text(c['bytes'])}",
            (c["bytes"], 1),
            xycoords=("data", "axes fraction"),
            rotation=90,
            va="top",
            ha="right",
            color="0.35",
        )
    top.set(xscale="log", yscale="log", ylabel="ns per output byte")
    bottom.set(xscale="log", xlabel="output bytes per call", ylabel="fresh bytes / output bytes")
    bottom.set_yscale("symlog", linthresh=0.01)  # 0 (memory reused) and 1-4 (fresh) both show
    highest = max((r["fresh_bytes"] / r["out_bytes"] for r in timings if fresh_ratio(r)), default=1)
    bottom.set_ylim(0, 2 * max(highest, 1))
    for ax in (top, bottom):
        ax.grid(alpha=0.3, which="both")
    fig.legend(*top.get_legend_handles_labels(), loc="outside right upper", frameon=False)
    return fig


def bounds(fit: dict) -> str | None:
    """A fit's bootstrap interval as text (None for a fit without one)."""
    if "slope_low" not in fit:
        return None
    return f"[{fit['slope_low']:.3f}, {fit['slope_high']:.3f}]"


def fraction_text(estimate, low=None, high=None) -> str | None:
    """A fraction of attention's time, three significant digits, with its interval when it
    has one of non-zero width: ``0.172 [0.165, 0.18]``; None where not timed."""
    if estimate is None:
        return None
    text = f"{estimate:.3g}"
    if low is not None and high is not None and low != high:
        text += f" [{low:.3g}, {high:.3g}]"
    return text


def table_slopes(m: Measurements, ctx: Context):
    times = {(r["workload"], r["d_model"], r["length"]): r["median_s"] for r in m.rows["timings"]}
    worst = m.summary["worst_fraction"]
    columns = [
        "workload",
        "acts on",
        "d",
        "t₀ (s)",
        "slope of t − t₀",
        "its interval",
        "fit range",
        "raw slope",
        "raw slope, every L",
        "time at end (s)",
        "largest time / attention",
        "at L",
    ]
    rows = [
        [
            f["workload"],
            f["acts_on"],
            f["d_model"],
            f["overhead_s"],
            f["slope"],
            bounds(f),
            f"{f['fit_from']}–{f['fit_to']}",
            f["slope_raw"],
            f["slope_every_length"],
            times[(f["workload"], f["d_model"], f["fit_to"])],
            fraction_text(w.get("estimate"), w.get("low"), w.get("high")),
            w.get("length"),
        ]
        for f in m.summary["fits"]
        for w in [worst.get(f"{f['workload']} d={f['d_model']}", {})]
    ]
    return columns, rows


def table_d_slopes(m: Measurements, ctx: Context):
    """One row per workload: its slope in d at its largest L, and its time at each width."""
    widths = m.summary["d_models"]
    columns = [
        "workload",
        "acts on",
        "L",
        "slope in d",
        "its interval",
        "flop model",
        *(f"d = {d} (s)" for d in widths),
    ]
    rows = [
        [
            f["workload"],
            f["acts_on"],
            f["length"],
            f["slope"],
            bounds(f),
            f["flop_model_slope"],
            *(f["seconds"].get(d) for d in widths),
        ]
        for f in m.summary["d_fits"]
    ]
    return columns, rows


def table_ratios(m: Measurements, ctx: Context):
    """One row per encoding timed and width, one column per L: its time over attention's with
    its bootstrap interval (None, shown as "—", where either was not timed at that L), then
    the length where it is largest."""
    lengths = m.summary["ratio_lengths"]
    columns = ["encoding", "acts on", "d", *(f"L = {n}" for n in lengths), "largest at L"]
    by = {(r["workload"], r["d_model"], r["length"]): r for r in m.rows["ratios"]}
    pairs = dict.fromkeys((r["workload"], r["d_model"]) for r in m.rows["ratios"])
    worst = m.summary["worst_fraction"]
    rows = [
        [
            name,
            by[(name, d, lengths[0])]["acts_on"],
            d,
            *(
                fraction_text(r["ratio"], r.get("ratio_low"), r.get("ratio_high"))
                for n in lengths
                for r in [by[(name, d, n)]]
            ),
            worst.get(f"{name} d={d}", {}).get("length"),
        ]
        for name, d in pairs
    ]
    return columns, rows


def _bound(row: dict, key: str) -> float:
    """A ratio row's interval bound, or the ratio itself where it has none."""
    return row["ratio"] if row.get(key) is None else row[key]


@themed
def figure_fractions(m: Measurements, ctx: Context):
    """Each encoding's time over one attention layer's against L, log-log, one panel per
    width, with each point's bootstrap interval and the claim's bound for the tables."""

    widths = m.summary["d_models"]
    fig, axes = _width_panels(widths)
    ratio_rows = [r for r in m.rows["ratios"] if r["ratio"] is not None]
    bound = m.summary["pe_max_fraction"]
    for ax, d in zip(axes, widths):
        for name in dict.fromkeys(r["workload"] for r in ratio_rows):
            rows = sorted(
                (r for r in ratio_rows if (r["workload"], r["d_model"]) == (name, d)),
                key=lambda r: r["length"],
            )
            if not rows:
                continue
            y = [r["ratio"] for r in rows]
            below = [r["ratio"] - _bound(r, "ratio_low") for r in rows]
            above = [_bound(r, "ratio_high") - r["ratio"] for r in rows]
            ax.errorbar(
                [r["length"] for r in rows],
                y,
                yerr=[below, above],
                ms=3,
                lw=1,
                capsize=2,
                label=name,
                **look(name),
            )
        reference_line(ax, bound)
        ax.annotate(
            f"tables' bound {bound:g}",
            (0.02, bound),
            xycoords=("axes fraction", "data"),
            ha="left",
            va="bottom",
            color="0.35",
        )
        ax.set(
            xscale="log",
            yscale="log",
            xlabel="sequence length L",
            title=f"d = {d}, {d // ctx.cfg['head_dim']} heads",
        )
        ax.grid(alpha=0.3, which="both")
        _legend_beside(ax)
        ax.set_ylabel("encoding time /\nattention layer time")
    return fig


def _over(b, cache):
    return None if b is None or not cache else b / cache


def table_memory(m: Measurements, ctx: Context):
    """Per encoding and width, its largest step in time per output byte and what changed."""
    machine = m.timing.get("machine", {})
    l2, llc = machine.get("l2_bytes"), machine.get("last_level_cache_bytes")
    columns = [
        "encoding",
        "d",
        "H",
        "L",
        "time ×",
        "output bytes ×",
        "output (MiB)",
        "fresh MiB per call",
        "output / L2",
        "output / last level",
    ]
    rows = [
        [
            s["workload"],
            s["d_model"],
            s["heads"],
            f"{s['from_len']} → {s['to_len']}",
            s["time_x"],
            s["bytes_x"],
            _arrow(s["out_mib_from"], s["out_mib_to"]),
            _arrow(s["fresh_mib_from"], s["fresh_mib_to"]),
            _over(s["out_bytes_to"], l2),
            _over(s["out_bytes_to"], llc),
        ]
        for s in m.summary["steps"]
    ]
    return columns, rows


def _arrow(a, b):
    if a is None or b is None:
        return None
    return f"{a:.3g} → {b:.3g}"


def table_caches(m: Measurements, ctx: Context):
    caches = m.timing.get("machine", {}).get("caches", {"levels": [], "source": "unknown"})
    columns = ["level", "type", "size", "shared by CPUs", "read from"]
    rows = [
        [c["level"], c["type"], size_text(c["bytes"]), c["shared_cpus"], caches["source"]]
        for c in caches["levels"]
    ]
    return columns, rows or [[None, "unknown", None, None, caches["source"]]]
