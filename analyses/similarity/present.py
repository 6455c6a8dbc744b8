"""Similarity figures and tables: one function per figure and per table of the spec."""

import itertools
import math

import numpy as np

from posenc.analysis import Context, Measurements
from posenc.plotting import (
    PAGE_HEIGHT_IN,
    PAGE_WIDTH_IN,
    REFERENCE_DASHES,
    panel_grid,
    style,
    themed,
)

from .compute import FIXED, PROPERTIES, RANDOM_INIT, TRAINED

# Kernels in this order: the formulas, the trained tables, then the untrained contrast.
ORDER = {FIXED: 0, TRAINED: 1, RANDOM_INIT: 2}


def _matrix(rows: list[dict], row: str, col: str, value: str) -> list[list[float]]:
    """Tidy rows {row: i, col: j, value: v} back into the matrix M[i][j]."""
    n = 1 + max(r[row] for r in rows)
    m = 1 + max(r[col] for r in rows)
    out = [[math.nan] * m for _ in range(n)]
    for r in rows:
        out[r[row]][r[col]] = r[value]
    return out


def _tick_step(n: int, most: int = 8) -> int:
    """The first of 1, 2, 5, 10, 20, 50, ... that labels at most ``most`` of ``n`` indices."""
    for magnitude in itertools.count():
        for mantissa in (1, 2, 5):
            step = mantissa * 10**magnitude
            if math.ceil(n / step) <= most:
                return step


def _heatmap(ax, matrix: np.ndarray, **kws) -> None:
    """``matrix`` (rows down, columns across) in red and blue, its indices labelled at a round
    step; NaN left blank. Rasterized, as an image: a vector cell per pair would make the SVG
    of a 128-position kernel tens of thousands of paths."""
    import seaborn as sns

    rows, cols = matrix.shape
    sns.heatmap(
        matrix,
        ax=ax,
        cmap="RdBu",
        xticklabels=_tick_step(cols),
        yticklabels=_tick_step(rows),
        rasterized=True,
        **kws,
    )
    ax.tick_params(axis="y", labelrotation=0)  # heatmap stands row labels on end


@themed
def figure_seed_heatmap(m: Measurements, ctx: Context):
    """The seed's table, dimensions down, positions across."""
    import matplotlib.pyplot as plt

    sc = ctx.cfg["seed"]
    table = _matrix(m.rows["seed_table"], "position", "dimension", "value")  # (L, d)
    fig, ax = plt.subplots(figsize=(PAGE_WIDTH_IN, 3.2), layout="constrained")
    _heatmap(ax, np.array(table).T)
    ax.set_xlabel("position")
    ax.set_ylabel("dimension")
    ax.set_title(
        f"Sinusoidal positional encoding ({sc['n_positions']} positions, d={sc['d_model']})"
    )
    return fig


@themed
def figure_offset_curves(m: Measurements, ctx: Context):
    """Similarity and scaled distance against the offset, one column per base."""
    import matplotlib.pyplot as plt

    cfg = ctx.cfg
    bases = cfg["bases"]
    fig, axes = plt.subplots(
        2,
        len(bases),
        figsize=(PAGE_WIDTH_IN if len(bases) > 1 else 4.8, 5.6),
        sharex=True,
        sharey="row",
        layout="constrained",
        squeeze=False,
    )
    rows = m.rows["offset_profiles"]
    # Every curve is the sinusoidal table's: its colour throughout, the head width d told
    # apart by the line's dashes (colours other than its own would read as other encodings).
    color = style("sinusoidal")["color"]
    dashes = ("-", *REFERENCE_DASHES)
    for col, base in enumerate(bases):
        for i, d in enumerate(cfg["dims"]):
            sel = [r for r in rows if r["d"] == d and r["base"] == base]
            k = [r["offset"] for r in sel]
            look = {"color": color, "ls": dashes[i % len(dashes)], "lw": 1.3, "label": f"d={d}"}
            axes[0, col].plot(k, [r["similarity"] for r in sel], **look)
            axes[1, col].plot(k, [r["distance"] for r in sel], **look)
        axes[0, col].set_title(f"base {base:g}")
        axes[1, col].set_xlabel("offset k")
    axes[0, 0].set_ylabel("cos(PE(p), PE(p+k))")
    axes[1, 0].set_ylabel("|PE(p) − PE(p+k)| / √d")
    axes[0, -1].legend()
    return fig


def _panel_title(source: str, encoding: str, seed) -> str:
    """What a kernel panel shows: the encoding, and for a learned one how its parameters came."""
    if source == TRAINED:
        return f"{encoding} (trained, seed {seed})"
    if source == RANDOM_INIT:
        return f"{encoding} (random init)"
    return encoding


@themed
def figure_kernels(m: Measurements, ctx: Context):
    """One heatmap per kernel (fixed, trained, then the random-init contrast), titled in the
    encoding's colour; pairs a causal model never scores are left blank."""
    import matplotlib.pyplot as plt

    rows = m.rows["kernels"]
    by_panel: dict[tuple, list[dict]] = {}
    for r in rows:
        by_panel.setdefault((r["source"], r["encoding"], r["seed"]), []).append(r)
    panels = sorted(by_panel, key=lambda panel: ORDER[panel[0]])
    n = len(panels)
    # Three square panels a row fill the printed column; the page's height, not the panels,
    # sets the size when there are many rows.
    ncols = min(n, 3)
    nrows = math.ceil(n / ncols)
    side = min(PAGE_WIDTH_IN / ncols, PAGE_HEIGHT_IN / nrows)
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(side * ncols, side * nrows), layout="constrained", squeeze=False
    )
    # Each kernel on its own scale (their ranges differ by orders of magnitude), read as its
    # largest |value| = 1: one colour bar then serves every panel.
    image = None
    for ax, (source, encoding, seed) in zip(axes.flat, panels):
        K = np.array(_matrix(by_panel[source, encoding, seed], "p", "q", "kernel"))
        vmax = np.nanmax(np.abs(K))
        _heatmap(ax, K / vmax if vmax > 0 else K, vmin=-1, vmax=1, square=True, cbar=False)
        image = ax.collections[0]
        title = _panel_title(source, encoding, seed).replace(" (", "\n(")
        ax.set_title(title, color=style(encoding)["color"])
        ax.label_outer()
    for ax in axes[-1]:
        ax.set_xlabel("position q")
    for ax in axes[:, 0]:
        ax.set_ylabel("position p")
    for ax in list(axes.flat)[n:]:
        ax.remove()
    if image is not None:
        fig.colorbar(image, ax=list(axes.flat)[:n], shrink=0.6, label="kernel / max|kernel|")
    return fig


@themed
def figure_long_term_decay(m: Measurements, ctx: Context):
    """One panel per rotary encoding, one line per head width d."""

    rows = m.rows["rotary_upper_bound"]
    names = list(dict.fromkeys(r["encoding"] for r in rows))
    fig, axes = panel_grid(max(len(names), 1), ncols=1, panel_height=3.2, sharey=True)
    # The encoding's colour for each of its lines, the head width d told apart by dashes.
    dashes = ("-", *REFERENCE_DASHES)
    for ax, encoding in zip(axes, names):
        for i, d in enumerate(ctx.cfg["rope_decay"]["dims"]):
            sel = [r for r in rows if r["encoding"] == encoding and r["d"] == d]
            ax.plot(
                [r["distance"] for r in sel],
                [r["bound"] for r in sel],
                color=style(encoding)["color"],
                ls=dashes[i % len(dashes)],
                lw=1.3,
                label=f"d={d}",
            )
        ax.set_xlabel("relative distance")
        ax.set_title(f"{encoding}: long-term decay", color=style(encoding)["color"])
        ax.legend()
    if not names:
        axes[0].text(0.5, 0.5, "no rotary encoding configured", ha="center", va="center")
    for ax in axes:
        ax.set_ylabel("relative upper bound")
    return fig


def table_seed_values(m: Measurements, ctx: Context):
    columns = ["positions", "this run", "printed", "this run − printed"]
    rows = [
        [f"{p['position']}, {p['other']}", p["similarity"], p["printed"], p["difference"]]
        for p in m.summary["seed_pairs"]
    ]
    return columns, rows


def table_sweep(m: Measurements, ctx: Context):
    offsets = m.summary["seed_offsets"]
    columns = [
        "d",
        "base",
        "monotone up to",
        f"concordance ≤ {ctx.cfg['window']}",
        *(f"cos at offset {k}" for k in offsets),
    ]
    rows = [
        [r["d"], r["base"], r["monotone_range"], r["concordance"]]
        + [r[f"cos_at_{k}"] for k in offsets]
        for r in m.summary["sweep"]
    ]
    return columns, rows


def _kernel_of(source: str, seeds: list, std: float) -> str:
    if source == TRAINED:
        return f"trained LM, seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))}"
    if source == RANDOM_INIT:
        return f"random init, N(0, {std:g}²)"
    return "fixed formula"


def _cell(values: list[float]):
    """One value as it is; over several seeds mean ± half range; None (a dash) if undefined."""
    defined = [v for v in values if v is not None and not math.isnan(v)]
    if not defined:
        return None
    if len(values) == 1 or min(defined) == max(defined):
        return defined[0]
    mean, half = sum(defined) / len(defined), (max(defined) - min(defined)) / 2
    return f"{mean:.4g} ± {half:.2g}"


def table_properties(m: Measurements, ctx: Context):
    """One row per encoding and kind of kernel (fixed, trained over its seeds, random init)."""
    columns = [
        "encoding",
        "kernel of",
        "monotone up to",
        f"concordance ≤ {ctx.cfg['window']}",
        "translation deviation",
        "symmetry deviation",
    ]
    groups: dict[tuple[str, str], list[dict]] = {}
    for p in m.rows["kernel_properties"]:
        groups.setdefault((p["encoding"], p["source"]), []).append(p)
    rows = [
        [
            encoding,
            _kernel_of(source, [p["seed"] for p in group], ctx.cfg["kernels"]["learned_init_std"]),
            *(_cell([p[name] for p in group]) for name in PROPERTIES),
        ]
        for (encoding, source), group in sorted(groups.items(), key=lambda g: ORDER[g[0][1]])
    ]
    return columns, rows


def table_properties_by_head(m: Measurements, ctx: Context):
    """For each encoding whose heads differ, its kernel over every head (the row of the
    properties table) beside each group of heads' own kernel."""
    columns = [
        "encoding",
        "kernel of",
        "heads",
        "monotone up to",
        f"concordance ≤ {ctx.cfg['window']}",
        "translation deviation",
        "symmetry deviation",
    ]
    std = ctx.cfg["kernels"]["learned_init_std"]
    cells: dict[tuple[str, str], dict[str, list[dict]]] = {}
    for p in m.rows["kernel_properties_by_head"]:
        cells.setdefault((p["encoding"], p["source"]), {}).setdefault(p["heads"], []).append(p)
    rows = []
    for (encoding, source), by_heads in sorted(cells.items(), key=lambda c: ORDER[c[0][1]]):
        whole = [
            p
            for p in m.rows["kernel_properties"]
            if (p["encoding"], p["source"]) == (encoding, source)
        ]
        for heads, group in [("all (mean kernel)", whole), *by_heads.items()]:
            kernel_of = _kernel_of(source, [p["seed"] for p in group], std)
            rows.append(
                [encoding, kernel_of, heads, *(_cell([p[n] for p in group]) for n in PROPERTIES)]
            )
    if not rows:
        rows = [["—", "no configured encoding's heads differ", "—", None, None, None, None]]
    return columns, rows


def table_long_term_decay(m: Measurements, ctx: Context):
    columns = ["encoding", "d", "bound at 0", "Spearman", "far max / at 0"]
    rows = [
        [encoding, int(d), s["at_zero"], s["spearman"], s["far_max_ratio"]]
        for encoding, by_d in m.summary["long_term_decay"].items()
        for d, s in by_d.items()
    ]
    return columns, rows
