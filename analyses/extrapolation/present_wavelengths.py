"""The rotary LMs' wavelengths against the training length (``wavelengths.py`` computes them):
which pairs meet, past L_train, angles training never showed."""

from __future__ import annotations

import math

from posenc.analysis import Context, Measurements
from posenc.plotting import nothing_to_show, panel_grid, reference_line, style, themed


@themed
def figure_wavelengths(m: Measurements, ctx: Context):
    """Each rotary encoding's pairs, fastest first, at their wavelength 2 pi / omega (a pair
    that does not turn is drawn at the top, marked "still"), with L_train and the longest
    evaluated length as references."""
    rows = m.summary.get("wavelengths") or []
    if not rows:
        return nothing_to_show("No LM of this run writes its positions into rotating pairs.")
    names = list(dict.fromkeys(r["encoding"] for r in rows))
    train_len = m.evidence["train_len"]
    longest = train_len * max(m.summary["multipliers"])
    finite = [r["wavelength"] for r in rows if math.isfinite(r["wavelength"])]
    still_at = max([*finite, longest]) * 4  # where a pair that does not turn is drawn
    fig, (ax,) = panel_grid(1, ncols=1, panel_height=3.2)
    width = 0.8 / len(names)
    for k, name in enumerate(names):
        mine = [r for r in rows if r["encoding"] == name]
        look = style(name)
        xs = [r["pair"] + (k - (len(names) - 1) / 2) * width for r in mine]
        ys = [r["wavelength"] if math.isfinite(r["wavelength"]) else still_at for r in mine]
        ax.scatter(
            xs,
            ys,
            color=look["color"],
            marker=look["marker"],
            label=name,
            zorder=3,
        )
    ax.set_yscale("log")
    reference_line(ax, train_len, 0, label=f"L_train = {train_len}")
    reference_line(ax, longest, 1, label=f"longest evaluated, {longest}")
    if any(not math.isfinite(r["wavelength"]) for r in rows):
        ax.annotate("still (no rotation)", (0, still_at), xytext=(4, 6), textcoords="offset points")
    ax.set_xlabel("pair (fastest first)")
    ax.set_ylabel("wavelength (positions)")
    ax.legend(loc="upper left", ncols=2)
    ax.grid(alpha=0.3)
    return fig
