"""Rotation figures and tables: one function per figure and per table of the spec."""

import itertools

from posenc.analysis import Context, Measurements
from posenc.plotting import (
    nothing_to_show,
    panel_grid,
    reference_line,
    series_style,
    style,
    themed,
)

FLOOR = 2.0**-52 / 8  # exact zeros are drawn here, below every error (eps(float64) / 8)


@themed
def figure_identity(m: Measurements, ctx: Context):
    """The identity's error against the position: a row per base, a column per dtype."""
    cfg = ctx.cfg
    if not m.summary["fixed_tables"]:
        return nothing_to_show("No fixed sinusoidal table among this run's encodings.")
    d, bases, dtypes = m.summary["identity_figure_d"], cfg["bases"], cfg["dtypes"]
    # A panel per (base, dtype), two a row: a row of every dtype was drawn 13 inches wide.
    cases = list(itertools.product(bases, dtypes))
    fig, axes = panel_grid(len(cases), ncols=2, panel_height=2.4, sharex=True, sharey=True)
    for ax, (base, dt) in zip(axes, cases):
        bound: dict[int, float] = {}
        for encoding in m.summary["fixed_tables"]:
            by_p: dict[int, float] = {}
            for r in m.rows["identity"]:
                if (r["encoding"], r["d"], r["base"], r["dtype"]) == (encoding, d, base, dt):
                    by_p[r["position"]] = max(by_p.get(r["position"], 0.0), r["max_abs_error"])
                    bound[r["position"]] = max(bound.get(r["position"], 0.0), r["tolerance"])
            ps = sorted(p for p in by_p if p > 0)
            ax.plot(
                ps,
                [max(by_p[p], FLOOR) for p in ps],
                lw=1,
                ms=3,
                markevery=max(1, len(ps) // 12),
                label=f"{encoding} error",
                **style(encoding),
            )
        ps = sorted(p for p in bound if p > 0)
        ax.plot(ps, [bound[p] for p in ps], color="black", lw=1, ls="--", label="rounding bound")
        ax.set(xscale="log", yscale="log", title=f"{dt}, base {base:g}")
        ax.grid(alpha=0.3, which="both")
        ax.set_xlabel("position p")
        ax.label_outer()  # the x labels of the bottom row, the y labels of the first column
    fig.supylabel(f"max |R(k) PE(p) − PE(p+k)| over k  (d = {d})")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncol=3)
    return fig


@themed
def figure_score_shift(m: Measurements, ctx: Context):
    """The largest score change under a common shift, per qk encoding and dtype case, and its
    ratio to the rounding bound (the registry's angles; the naive case is held to it too)."""
    # One above the other: side by side they were drawn 12.5 inches wide.
    fig, (ax, bx) = panel_grid(2, ncols=1, panel_height=3.0, sharex=True)
    rows = m.rows["score_shift"]
    cases = list(dict.fromkeys((r["dtype"], r["angles"], r["naive"]) for r in rows))
    names = [f"{x}, {a} angles" + (" (naive)" if naive else "") for x, a, naive in cases]
    # Each line in its encoding's colour, its case told by marker and line style both (from
    # the palette of series that are not encodings): a case's lines read alike in every
    # encoding's colour, and a reader who sees this figure in grey can still tell them apart.
    looks = {
        name: {"marker": look["marker"], "ls": look["ls"]}
        for name, look in series_style(names).items()
    }
    for encoding in m.summary["qk_measured"]:
        for name, (x, a, _) in zip(names, cases):
            case = [
                r
                for r in rows
                if r["shift"] and (r["encoding"], r["dtype"], r["angles"]) == (encoding, x, a)
            ]
            line = {
                "lw": 1,
                "ms": 4,
                "markevery": max(1, len(case) // 8),
                "color": style(encoding)["color"],
                **looks[name],
            }
            positions = [r["max_position"] for r in case]
            ax.plot(positions, [max(r["max_deviation"], FLOOR) for r in case], **line)
            bx.plot(positions, [r["deviation_over_tolerance"] for r in case], **line)
    limit = ctx.cfg["thresholds"]["max_over_bound"]
    reference_line(bx, limit, label="limit of the claims")
    for dt, first in m.summary["naive_exact_integers"].items():
        for a_ in (ax, bx):
            a_.axvline(first, color="grey", lw=0.8, ls="--")
        bx.annotate(
            f"{dt}: last exact integer",
            (first, limit),
            xytext=(3, 4),
            textcoords="offset points",
            color="0.35",
        )
    ax.set(
        xscale="log",
        yscale="log",
        ylabel="max |Δs| / ‖q‖‖k‖",
        title=f"(a) score change, head width {ctx.cfg['qk']['head_dim']}",
    )
    bx.set(
        xscale="log",
        yscale="log",
        xlabel="largest absolute position P",
        ylabel="change / its bound",
        title="(b) against the bound of the registry's angles",
    )
    for a_ in (ax, bx):
        a_.grid(alpha=0.3, which="both")
    # One key for the encodings (their colour) and one for the cases (marker and line style,
    # drawn in black: any encoding's colour), rather than every encoding-case pair.
    from matplotlib.lines import Line2D

    keys = [
        Line2D([], [], color=style(e)["color"], lw=2, label=e) for e in m.summary["qk_measured"]
    ]
    keys += [Line2D([], [], color="black", lw=1, ms=4, label=n, **looks[n]) for n in names]
    handles, labels = bx.get_legend_handles_labels()  # the limit of the claims
    labels = [k.get_label() for k in keys] + labels
    fig.legend(keys + handles, labels, loc="outside lower center", ncol=2)
    return fig


def table_hand_trace(m: Measurements, ctx: Context):
    h, decimals = m.summary["hand_trace"], ctx.cfg["hand_trace"]["decimals"]
    rotated = f"R({h['offset']}) PE({h['from_position']})"
    rows = [[p, *row] for p, row in zip(h["positions"], h["table"])]
    rows.append([f"{rotated}, exact", *h["rotated_exact"]])
    rows.append([f"{rotated}, {decimals} decimals", *h["rotated_by_hand"]])
    columns = ["p", *(f"PE(p, {j}) = {('sin', 'cos')[j % 2]} ω{j // 2}·p" for j in range(h["d"]))]
    return columns, rows


def table_identity(m: Measurements, ctx: Context):
    cfg = ctx.cfg
    rows = []
    for e, d, base, dt in itertools.product(
        m.summary["fixed_tables"], cfg["d_values"], cfg["bases"], cfg["dtypes"]
    ):
        sel = [
            r
            for r in m.rows["identity"]
            if (r["encoding"], r["d"], r["base"], r["dtype"]) == (e, d, base, dt)
        ]
        rows.append(
            [
                e,
                d,
                base,
                dt,
                max(r["max_abs_error"] for r in sel),
                max(r["error_over_tolerance"] for r in sel),
            ]
        )
    return ["encoding", "d", "base", "dtype", "max error", "error / bound"], rows


def table_score_shift(m: Measurements, ctx: Context):
    rows = []
    groups = dict.fromkeys((r["encoding"], r["dtype"], r["angles"]) for r in m.rows["score_shift"])
    for e, x, a in groups:
        sel = [
            r
            for r in m.rows["score_shift"]
            if (r["encoding"], r["dtype"], r["angles"]) == (e, x, a)
        ]
        small = min((r for r in sel if r["shift"]), key=lambda r: r["shift"])
        large = max(sel, key=lambda r: r["shift"])
        past = [r["deviation_over_tolerance"] for r in sel if r["past_exact_integers"]]
        rows.append(
            [
                e,
                x,
                a,
                small["max_deviation"],
                large["max_position"],
                large["max_deviation"],
                large["tolerance"],
                max(r["deviation_over_tolerance"] for r in sel),
                min(past) if past else "—",
            ]
        )
    columns = [
        "encoding",
        "dtype",
        "angles",
        "deviation, shift 1",
        "largest position",
        "deviation there",
        "its bound (worst sample)",
        "deviation / bound, largest",
        "smallest past the exact integers",
    ]
    return columns, rows


def table_linear_map(m: Measurements, ctx: Context):
    offsets = ctx.cfg["linear_map"]["offsets"]
    columns = [
        "encoding",
        "d",
        "base",
        "k",
        "training",
        "span",
        "cond",
        "held-out error",
        "bound",
        "max |W − Mᵀ|",
    ]
    rows = [
        [
            r["encoding"],
            r["d"],
            r["base"] if r["base"] is not None else "—",
            r["offset"],
            r["training"],
            r["train_span"],
            r["condition_number"],
            r["held_out_rel_error"],
            r["tolerance"],
            r["map_error"],
        ]
        for r in m.rows["linear_map"]
        if r["offset"] in (offsets[0], offsets[-1])
    ]
    return columns, rows
