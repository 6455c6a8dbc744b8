"""Every encoding's look in every figure, from the registry: its spec's colour and marker, or,
for an encoding that gives none (a plugin's, say), one assigned by its place in the registry.
No figure keeps its own table of encodings, so a new encoding can never be missing from one.

Every figure is drawn under one seaborn theme (:func:`themed`), whose colour cycle is the same
palette. Torch-free until :func:`style` reads the registry, so the report card, which measures
nothing, can take the theme without loading the model code."""

from __future__ import annotations

import functools
from collections.abc import Callable

# Colour-blind-safe first (matplotlib's tab10), markers distinct at a glance.
PALETTE = (
    "tab:blue",
    "tab:orange",
    "tab:green",
    "tab:red",
    "tab:purple",
    "tab:brown",
    "tab:pink",
    "tab:gray",
    "tab:olive",
    "tab:cyan",
)
MARKERS = ("o", "s", "D", "^", "v", "P", "X", "<", ">", "*", "h", "p")


def theme() -> dict:
    """The rc settings every figure is drawn under: seaborn's "ticks" style at its "notebook"
    scale (type a little larger than matplotlib's, for figures the page shrinks), lines
    cycling through :data:`PALETTE`."""
    import matplotlib as mpl
    import seaborn as sns

    rc = {**sns.axes_style("ticks"), **sns.plotting_context("notebook")}
    # seaborn puts Arial first, where a machine has it: matplotlib's own DejaVu Sans, which
    # ships with it, draws the same figure on every machine.
    del rc["font.sans-serif"]
    # The figures' faint grids (alpha 0.3) were set against matplotlib's grey; seaborn's
    # lighter one would all but hide them in print.
    rc["grid.color"] = mpl.rcParamsDefault["grid.color"]
    rc["axes.prop_cycle"] = mpl.cycler(color=list(PALETTE))
    return rc


def themed(figure: Callable) -> Callable:
    """A figure function drawn under :func:`theme`, scoped to the call so that nothing else
    drawn in the process (a test's figure, say) changes with it; ``themed`` marks it, for the
    tests that hold every figure of every analysis to the theme."""

    @functools.wraps(figure)
    def draw(*args, **kwargs):
        import matplotlib as mpl

        with mpl.rc_context(theme()):
            return figure(*args, **kwargs)

    draw.themed = True
    return draw


def estimate_band(ax, xs, cells, color, **line) -> None:
    """One series: its estimate as a line (``line``: matplotlib's line keywords) and its
    confidence interval as a band in the same colour. ``cells``: a ``{"estimate", "low",
    "high"}`` per x."""
    ax.plot(xs, [c["estimate"] for c in cells], color=color, **line)
    # matplotlib's band, not seaborn's lineplot: lineplot bands only an interval it computes
    # itself from raw observations (its errorbar=), and ours is the analysis' own bootstrap
    # over seeds and evaluation units, the one its tables and claims quote.
    ax.fill_between(
        xs, [c["low"] for c in cells], [c["high"] for c in cells], color=color, alpha=0.15, lw=0
    )


def nothing_to_show(what: str):
    """A figure for a run whose encodings include none of the kind a figure is about (a report
    card's study of bias encodings has no fixed table to rotate, say): it says so, rather than
    failing on an empty log-scaled axis."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 1.2))
    ax.text(0.5, 0.5, what, ha="center", va="center", fontsize=10, wrap=True)
    ax.set_axis_off()
    return fig


def style(name: str) -> dict[str, str]:
    """``{"color", "marker"}`` of encoding ``name``; ``base+variant`` names (``rope+PI``) take
    their base encoding's colour. An unregistered name still gets a style: never a KeyError."""
    from posenc.encodings import REGISTRY

    base = name.split("+", 1)[0]
    names = list(REGISTRY)
    index = names.index(base) if base in names else len(names) + sum(map(ord, base))
    spec = REGISTRY.get(base)
    # Unstyled encodings take palette entries after those the built-ins use.
    taken = {s.color for s in REGISTRY.values() if s.color}
    free = [c for c in PALETTE if c not in taken] or list(PALETTE)
    color = spec.color if spec and spec.color else free[index % len(free)]
    marker = spec.marker if spec and spec.marker else MARKERS[index % len(MARKERS)]
    return {"color": color, "marker": marker}
