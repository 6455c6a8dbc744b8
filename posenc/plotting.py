"""Every encoding's look in every figure, from the registry: its spec's colour and marker, or,
for an encoding that gives none (a plugin's, say), one assigned by its place in the registry.
No figure keeps its own table of encodings, so a new encoding can never be missing from one."""

from __future__ import annotations

from posenc.encodings import REGISTRY

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
