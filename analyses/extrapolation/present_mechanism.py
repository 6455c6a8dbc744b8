"""The mechanism measurement's figure and table (``mechanism.py`` computes them): per encoding,
how much its attention dilutes and reaches past L_train, against how much its loss rises."""

from __future__ import annotations

from posenc.analysis import Context, Measurements
from posenc.claims import interval_text
from posenc.plotting import panel_grid, style, themed


def _interval(row: dict, key: str) -> dict | None:
    if row.get(key) is None:
        return None
    return {"estimate": row[key], "low": row[f"{key}_low"], "high": row[f"{key}_high"]}


def _mean_rows(m: Measurements, arm: str = "plain") -> list[dict]:
    return [r for r in m.rows.get("mechanism", []) if r["layer"] == "mean" and r["arm"] == arm]


@themed
def figure_mechanism(m: Measurements, ctx: Context):
    """At the longest length: the loss rise against the entropy rise and against the mass past
    L_train, one point per encoding (hollow: its LMs did not learn), with the rank
    correlation over those that learned."""

    rows = _mean_rows(m)
    longest = max((r["multiplier"] for r in rows), default=1)
    at = [r for r in rows if r["multiplier"] == longest and r["bits_rise"] is not None]
    fig, axes = panel_grid(2, ncols=2, panel_height=3.4)
    panels = (
        ("entropy_rise", "entropy rise from 1x\n(normalised)", "entropy_rank_correlation"),
        ("far_mass", "attention mass at\ndistances >= L_train", "far_mass_rank_correlation"),
    )
    for ax, (key, label, rho_key) in zip(axes, panels):
        for r in at:
            if r[key] is None:
                continue
            look = style(r["encoding"])
            ax.errorbar(
                r[key],
                r["bits_rise"],
                xerr=[[r[key] - r[f"{key}_low"]], [r[f"{key}_high"] - r[key]]],
                yerr=[
                    [r["bits_rise"] - r["bits_rise_low"]],
                    [r["bits_rise_high"] - r["bits_rise"]],
                ],
                color=look["color"],
                marker=look["marker"],
                mfc=look["color"] if r["learned"] else "none",
                ls="none",
                label=r["encoding"],
            )
        rho = m.evidence.get(rho_key, {}).get(f"{longest}x")
        ax.set_title(f"Spearman rho\n{interval_text(rho, 2)}" if rho else "rho: too few encodings")
        ax.set_xlabel(label)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(f"bits/char rise, 1x to {longest}x")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=3, frameon=False)
    return fig


def table_mechanism(m: Measurements, ctx: Context):
    """Per encoding and length: the loss and its rise, the attention's entropy and mass past
    L_train (mean over layers), plainly and under log-n query scaling."""
    columns = [
        "encoding",
        "length",
        "query scaling",
        "bits/char",
        "rise from 1x",
        "entropy",
        "entropy rise",
        "mass past L_train",
    ]
    rows = [
        [
            r["encoding"],
            f"{r['multiplier']}x",
            "log-n" if r["arm"] == "logn" else "none",
            interval_text(_interval(r, "bits")),
            interval_text(_interval(r, "bits_rise")),
            interval_text(_interval(r, "entropy")),
            interval_text(_interval(r, "entropy_rise")),
            interval_text(_interval(r, "far_mass")),
        ]
        for arm in ("plain", "logn")
        for r in _mean_rows(m, arm)
    ]
    return columns, rows
