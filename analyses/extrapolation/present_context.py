"""The effective context's figure and table (``context.py`` computes them): each encoding's
bits/char with its context cut to k characters, against the 4- and 5-gram of the text on the
same characters."""

from __future__ import annotations

from posenc.analysis import Context, Measurements
from posenc.claims import interval_text
from posenc.plotting import PAGE_WIDTH_IN, estimate_band, nothing_to_show, reference_line, themed

# The references drawn and tabulated beside the models, from the lower rung up.
REFERENCES = ("4-gram", "5-gram")


def _context(m: Measurements) -> dict:
    return m.summary.get("context") or {}


@themed
def figure_effective_context(m: Measurements, ctx: Context):
    """Bits/char against the context length k (log-2 axis), one line per encoding (mean over
    seeds, band: its interval), each labelled with its effective context; the 4- and 5-gram on
    the same characters as grey lines."""
    import matplotlib.pyplot as plt

    # The bits/char figure's looks and axis, so that an encoding looks alike in both.
    from .present import _length_axis, _model_look

    c = _context(m)
    if not c.get("encodings"):
        return nothing_to_show("No LM was scored with its context cut (lm.eval.context).")
    fig, ax = plt.subplots(figsize=(PAGE_WIDTH_IN, 4.2), layout="constrained")
    for enc, e in c["encodings"].items():
        look = _model_look(enc)
        estimate_band(
            ax,
            c["lengths"],
            [e["bits"][str(k)] for k in c["lengths"]],
            look["color"],
            ls=look["linestyle"],
            marker=look["marker"],
            ms=5,
            mfc="none" if look["hollow"] else look["color"],
            lw=1.4,
            label=f"{enc} (effective {e['effective']})",
        )
    for i, name in enumerate(n for n in REFERENCES if n in c["references"]):
        value = c["references"][name]["estimate"]
        reference_line(ax, value, i, label=f"{name} {value:.2f}")
    _length_axis(ax, c["lengths"])
    ax.set_xlabel("context length k (characters before the target)")
    ax.set_ylabel("loss (bits/char)")
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=3, frameon=False)
    return fig


def table_effective_context(m: Measurements, ctx: Context):
    """Per encoding: the rise from the full context at each shorter k, the full context's
    bits/char, the effective context and the full context minus each n-gram on the same
    characters; then the n-grams themselves."""
    c = _context(m)
    if not c.get("encodings"):
        return ["encoding"], []
    full = c["full"]
    shorter = [k for k in c["lengths"] if k < full]
    references = [n for n in REFERENCES if n in c["references"]]
    columns = [
        "encoding",
        *[f"rise at k = {k}" for k in shorter],
        f"bits/char at k = {full}",
        "effective context",
        *[f"minus {n}" for n in references],
    ]
    rows = [
        [
            enc,
            *[interval_text(e["rise"][str(k)]) for k in shorter],
            interval_text(e["bits"][str(full)]),
            e["effective"],
            *[interval_text(e["full_minus"].get(n)) for n in references],
        ]
        for enc, e in c["encodings"].items()
    ]
    rows += [
        [
            f"{n} (reads {int(n.split('-')[0]) - 1})",
            *["—"] * len(shorter),
            interval_text(c["references"][n]),
            "—",
            *["—"] * len(references),
        ]
        for n in references
    ]
    return columns, rows
