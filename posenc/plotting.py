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


# One type scale for every figure, in points at the size a figure is drawn. Every figure is drawn
# at most PAGE_WIDTH_IN wide, the PDF's text column, so the PDF prints these sizes as they are
# (and the page, 984 CSS px wide at 1280, shows them at ~16 px and more). Tick labels are the
# largest because a log axis writes 10^k with its exponent at MATH_SHRINK of their size: 12 pt
# keeps the exponent at 8.4 pt, over the 8 pt floor tests/test_figure_sizes.py holds every
# figure to. A figure may set a size above these, never below.
LABEL_PT = 12.0  # axis labels, titles, tick labels
TEXT_PT = 11.0  # legends, annotations, any other text
DENSE_PT = 8.0  # the report card's grid, a table drawn as a figure: the floor itself
MATH_SHRINK = 0.7  # matplotlib's mathtext sub- and superscripts (its SHRINK_FACTOR)

# The PDF's text column (A4 less style.css's 16 mm margins: 178 mm) and the print stylesheet's
# tallest figure (170 mm, less room for the tight bounding box): a figure drawn within both is
# printed at its own size, never shrunk.
PAGE_WIDTH_IN = 6.9
PAGE_HEIGHT_IN = 6.4

# Lines that are not encodings (thresholds, reference values, chance): greys and dash styles,
# which no encoding's look uses.
REFERENCE_COLORS = ("0.25", "0.5", "0.65")
REFERENCE_DASHES = ((0, (1, 1.5)), (0, (4, 2)), (0, (6, 2, 1, 2)), (0, (2, 3)))

# Series that are not encodings (dtypes, methods, models, implementations, cases): colours that
# are neither tab10's nor any encoding's own. Each is at least 18 CIEDE2000 from every encoding
# colour (tab10 and the registry's teal, goldenrod, darkgreen, navy), from the greys above and
# from one another, where the encodings' own closest pair (olive and goldenrod) is 15: no series
# is easier to take for an encoding than one encoding is for another. Ready-made palettes could
# not do this (Dark2, Okabe-Ito and Tol's each hold a colour within 8 of an encoding: Dark2's
# yellow of goldenrod, Okabe-Ito's blue of tab:blue, Tol's indigo of navy), so these were
# picked by a max-min search over a colour grid. Their order keeps the first four, as many as a
# figure usually draws, at least 23 apart under simulated deuteranopia, protanopia and
# tritanopia (Machado et al. 2009). Beyond four, and for telling a series from an encoding
# under a colour-vision deficiency (fourteen encoding hues leave no room for that), every
# series also takes its own marker and line style.
SERIES_PALETTE = (
    "#443300",  # dark umber
    "#99aaff",  # periwinkle
    "#ff8888",  # light red
    "#3333ff",  # ultramarine
    "#996600",  # ochre
    "#880055",  # plum
    "#88bb99",  # sage
    "#661100",  # dark rust
)
# Seven markers and five line styles against eight colours: lengths pairwise coprime, so no two
# of the first 280 series share all three.
SERIES_MARKERS = ("o", "s", "^", "D", "v", "P", "X")
SERIES_LINESTYLES = ("-", "--", "-.", ":", (0, (5, 1, 1, 1, 1, 1)))
# The dtypes in the order that gives each its look: series_style([*DTYPES, *names]) draws a
# dtype alike in every figure, whichever of them a figure shows.
DTYPES = ("bfloat16", "float16", "float32", "float64")


def type_sizes() -> tuple[float, ...]:
    """Every size of the type scale, in points."""
    return (LABEL_PT, TEXT_PT, DENSE_PT)


def theme() -> dict:
    """The rc settings every figure is drawn under: seaborn's "ticks" style at its "notebook"
    scale, its type set to this module's one scale, lines cycling through :data:`PALETTE`."""
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
    for key in ("axes.labelsize", "axes.titlesize", "figure.titlesize", "figure.labelsize"):
        rc[key] = LABEL_PT
    for key in ("xtick.labelsize", "ytick.labelsize"):
        rc[key] = LABEL_PT
    for key in ("font.size", "legend.fontsize", "legend.title_fontsize"):
        rc[key] = TEXT_PT
    return rc


def panel_grid(n: int, ncols: int = 2, panel_height: float = 2.6, **subplots):
    """A figure of ``n`` panels in rows of at most ``ncols``, :data:`PAGE_WIDTH_IN` wide and
    ``panel_height`` inches a row, constrained layout: panels wrap to more rows rather than
    narrowing, so the type keeps its size. Returns the figure and the ``n`` axes, row by row;
    the grid's leftover cells are removed."""
    import matplotlib.pyplot as plt

    ncols = max(1, min(ncols, n))
    nrows = max(1, -(-n // ncols))
    fig, axes = plt.subplots(
        nrows,
        ncols,
        figsize=(PAGE_WIDTH_IN, min(panel_height * nrows, PAGE_HEIGHT_IN)),
        squeeze=False,
        layout="constrained",
        **subplots,
    )
    for ax in axes.flat[n:]:
        ax.remove()
    return fig, list(axes.flat[:n])


def reference_line(ax, value: float, k: int = 0, axis: str = "y", **line) -> None:
    """A horizontal (``axis="y"``) or vertical reference at ``value``, the ``k``-th of its
    figure: grey and dashed, so that no reader takes it for an encoding."""
    draw = ax.axhline if axis == "y" else ax.axvline
    style = {
        "color": REFERENCE_COLORS[k % len(REFERENCE_COLORS)],
        "ls": REFERENCE_DASHES[k % len(REFERENCE_DASHES)],
        "lw": 1.1,
        "zorder": 1,
    }
    draw(value, **{**style, **line})


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

    fig, ax = plt.subplots(figsize=(PAGE_WIDTH_IN, 1.2))
    ax.text(0.5, 0.5, what, ha="center", va="center", wrap=True)
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


def series_style(names) -> dict[str, dict]:
    """``{name: {"color", "marker", "ls"}}`` for series that are not encodings, by each name's
    first place in ``names``: a figure that passes the same names in the same order gives each
    the same look, and none takes an encoding's colour (:data:`SERIES_PALETTE`)."""
    order = list(dict.fromkeys(names))
    return {
        name: {
            "color": SERIES_PALETTE[i % len(SERIES_PALETTE)],
            "marker": SERIES_MARKERS[i % len(SERIES_MARKERS)],
            "ls": SERIES_LINESTYLES[i % len(SERIES_LINESTYLES)],
        }
        for i, name in enumerate(order)
    }
