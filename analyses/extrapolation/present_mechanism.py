"""The mechanism measurement's figure and table (``mechanism.py`` computes them): per encoding,
how much its attention's entropy rises and how much of it reaches past L_train, against how
much its loss rises, with uniform attention's rise as the reference for dilution."""

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


def _title(m: Measurements, name: str, key: str) -> str:
    """A panel's title: the rank correlation over the encodings that learned and its
    one-sided permutation p-value."""
    rho = (m.evidence.get(f"{name}_rank_correlation", {}).get(key) or {}).get("estimate")
    p = m.evidence.get(f"{name}_rank_p", {}).get(key)
    if rho is None:
        return "rho: too few encodings"
    return f"Spearman rho {rho:.2f}\npermutation p = {p:.2g}"


@themed
def figure_mechanism(m: Measurements, ctx: Context):
    """At the longest length: the loss rise against the raw entropy rise (with uniform
    attention's rise, dashed) and against the mass past L_train, one point per encoding
    (hollow: its LMs did not learn), with the rank correlation over those that learned."""

    rows = _mean_rows(m)
    longest = max((r["multiplier"] for r in rows), default=1)
    at = [r for r in rows if r["multiplier"] == longest and r["bits_rise"] is not None]
    fig, axes = panel_grid(2, ncols=2, panel_height=3.4)
    panels = (
        ("entropy_rise", "entropy", "entropy rise from 1x (nats)"),
        ("far_mass", "far_mass", "attention mass at\ndistances >= L_train"),
    )
    for ax, (key, name, label) in zip(axes, panels):
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
        ax.set_title(_title(m, name, f"{longest}x"))
        ax.set_xlabel(label)
        ax.grid(alpha=0.3)
    # Dilution's reference: uniform attention over the same queries rises by this much.
    uniform = next((r["uniform_rise"] for r in at if r.get("uniform_rise") is not None), None)
    if uniform is not None:
        axes[0].axvline(uniform, color="0.5", ls="--", lw=1, label="uniform attention")
    axes[0].set_ylabel(f"bits/char rise, 1x to {longest}x")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=3, frameon=False)
    return fig


def _number(x: float | None) -> str:
    return "undefined" if x is None else f"{x:.3f}"


def table_mechanism(m: Measurements, ctx: Context):
    """Per encoding and length: the loss and its rise, the attention's raw entropy (nats) and
    its rise beside uniform attention's, the entropy divided by ln n, and the mass past
    L_train (mean over layers), plainly and under log-n query scaling."""
    columns = [
        "encoding",
        "length",
        "query scaling",
        "bits/char",
        "rise from 1x",
        "entropy (nats)",
        "entropy rise",
        "uniform rise",
        "entropy / ln n",
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
            _number(r.get("uniform_rise")),
            interval_text(_interval(r, "entropy_normalised")),
            interval_text(_interval(r, "far_mass")),
        ]
        for arm in ("plain", "logn")
        for r in _mean_rows(m, arm)
    ]
    return columns, rows
