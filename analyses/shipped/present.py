"""Shipped-configs figures and tables: one function per figure and per table of the spec.
Model × property grid colouring is the template's, from the ledger's per-model outcomes."""

import textwrap

from posenc.analysis import Context, Measurements
from posenc.plotting import (
    PAGE_WIDTH_IN,
    nothing_to_show,
    panel_grid,
    reference_line,
    series_style,
    themed,
)

FLOOR = 1e-9  # an exact zero is drawn here, below every rounding error
NA = "n/a"


def _marks(n: int) -> int:
    """markevery for a line of ``n`` points: about eight markers, enough to tell a line's
    marker past its colour (the palette repeats a colour past eight models), few enough to
    leave the line readable."""
    return max(1, n // 8)


def _model_looks(m: Measurements) -> dict[str, dict]:
    """One look per model, the same in both figures: from the palette of series that are not
    encodings, in the order the summary lists the models."""
    names = [model["model"] for model in m.summary["models"]]
    return series_style([*names, *(r["model"] for r in m.rows.get("curve", []))])


@themed
def figure_spectrum(m: Measurements, ctx: Context):
    """Wavelength over the advertised context per pair (log y), a line per model and layer type."""
    import matplotlib.pyplot as plt

    looks = _model_looks(m)
    lines = []
    for model in m.summary["models"]:
        for k, s in enumerate(model["spectra"]):
            several = len(model["spectra"]) > 1
            label = f"{model['model']} ({s['layer_type']})" if several else model["model"]
            # A model's later layer types in its colour and marker, hollow and loosely dotted
            # (a dash no model's first line has): the colour still names the model.
            look = looks[model["model"]] | ({"ls": (0, (1, 3)), "mfc": "none"} if k else {})
            lines.append((label, s["wavelength"], model["context"], look))
    if not lines:
        return nothing_to_show("no rotary model measured")
    fig, ax = plt.subplots(figsize=(PAGE_WIDTH_IN, 4.6), layout="constrained")
    for label, wavelength, context, look in lines:
        n = len(wavelength)
        x = [(i + 0.5) / n for i in range(n)]
        y = [w / context if w is not None else None for w in wavelength]
        ax.plot(
            x,
            [v if v is not None else float("nan") for v in y],
            lw=1.2,
            ms=4,
            markevery=_marks(n),
            label=label,
            **look,
        )
    reference_line(ax, 1.0)
    ax.set_yscale("log")
    ax.set_xlabel("pair index i / (d/2)")
    ax.set_ylabel("wavelength 2π/ω over advertised context")
    fig.legend(loc="outside lower center", ncol=2, frameon=False)
    return fig


@themed
def figure_angle_error(m: Measurements, ctx: Context):
    """Angle error against position, log-log: a panel per path, a line per model (its first
    layer type with the largest error at the context)."""

    paths = list(m.summary["paths"])
    curve = m.rows.get("curve", [])
    if not curve:
        return nothing_to_show("no rotary model measured")
    models = list(dict.fromkeys(r["model"] for r in curve))
    looks = _model_looks(m)
    # Two panels a row: a row of every path was drawn 13 inches wide.
    fig, axes = panel_grid(len(paths), ncols=2, panel_height=2.3, sharex=True, sharey=True)
    for ax, path in zip(axes, paths):
        for model in models:
            rows = [
                r for r in curve if r["model"] == model and r["path"] == path and r["position"] > 0
            ]
            by_pos: dict[int, float] = {}
            for r in rows:  # worst layer type per position
                by_pos[r["position"]] = max(by_pos.get(r["position"], 0.0), r["max_angle_error"])
            xs = sorted(by_pos)
            ax.plot(
                xs,
                [max(by_pos[x], FLOOR) for x in xs],
                lw=1,
                ms=4,
                markevery=_marks(len(xs)),
                label=model,
                **looks[model],
            )
        reference_line(ax, ctx.cfg["thresholds"]["angle_rad"])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(textwrap.fill(m.summary["paths"][path], 30))  # two lines, not overlapping
        ax.set_xlabel("position")
        ax.label_outer()  # the x labels of the bottom row, the y labels of the first column
    fig.supylabel("largest angle error (rad)")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncol=2)
    return fig


def _fmt(value, digits=3):
    if value is None:
        return NA
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return value


def table_frequencies(m: Measurements, ctx: Context):
    columns = (
        "model",
        "layer type",
        "rope type",
        "base",
        "rotated dims",
        "tf − posenc (ulps)",
        "tf − formula (ulps)",
        "posenc − formula (ulps)",
        "factor tf",
        "factor posenc",
        "status",
    )
    rows = [
        (
            r["model"],
            r["layer_type"],
            r.get("rope_type", NA),
            _fmt(r.get("base")),
            r.get("rotated_dims", NA),
            _fmt(r.get("transformers_vs_posenc_ulps")),
            _fmt(r.get("transformers_vs_formula_ulps")),
            _fmt(r.get("posenc_vs_formula_ulps")),
            _fmt(r.get("attention_factor_transformers"), 6),
            _fmt(r.get("attention_factor_posenc"), 6),
            r["status"],
        )
        for r in m.rows.get("frequencies", [])
    ]
    return columns, rows


def table_precision(m: Measurements, ctx: Context):
    columns = (
        "model",
        "layer type",
        "path",
        "context",
        "error at context",
        "max error",
        "first sampled past",
        "relative max",
        "product part",
        "inv_freq part",
    )
    rows = [
        (
            r["model"],
            r["layer_type"],
            # The path in words (its key is for the CSV and the ledger).
            m.summary["paths"].get(r["path"], r["path"]),
            r["context"],
            _fmt(r["error_at_context"]),
            _fmt(r["max_error"]),
            r["first_sampled_past"] or "none",
            _fmt(r["relative_max"]),
            _fmt(r["product_part_at_context"]),
            _fmt(r["inv_freq_part_at_context"]),
        )
        for r in m.rows.get("precision", [])
    ]
    return columns, rows


def table_spectrum(m: Measurements, ctx: Context):
    columns = (
        "model",
        "layer type",
        "pairs",
        "trained L",
        "context",
        "critical pairs",
        "Liu d_extra",
        "moved pairs",
        "critical moved",
        "critical turning in context",
        "longest wavelength",
    )
    rows = [
        (
            r["model"],
            r["layer_type"],
            r["pairs"],
            r["original_length"],
            r["context"],
            r["critical_pairs"],
            r["liu_critical_dimension"],
            r["moved_pairs"],
            r["critical_moved"],
            r["critical_turning_within_context"],
            _fmt(r["longest_wavelength"]),
        )
        for r in m.rows.get("spectrum", [])
    ]
    return columns, rows


def table_distinct(m: Measurements, ctx: Context):
    columns = (
        "model",
        "layer type",
        "path",
        "exact up to",
        "first repeat",
        "of",
        "distinct fraction",
        "sampled beyond",
        "sampled first repeat",
    )
    rows = [
        (
            r["model"],
            r["layer_type"],
            # The path in words (its key is for the CSV and the ledger).
            m.summary["paths"].get(r["path"], r["path"]),
            r["exact_up_to"],
            r["first_repeat"] or "none",
            r["first_repeat_of"] if r["first_repeat_of"] is not None else "—",
            _fmt(r["distinct_fraction"]),
            r["sampled_beyond"] or "—",
            r["sampled_first_repeat"] or "none",
        )
        for r in m.rows.get("distinct", [])
    ]
    return columns, rows


def table_jumps(m: Measurements, ctx: Context):
    columns = ("model", "layer type", "kind", "measured")
    rows = []
    for r in m.rows.get("jumps", []):
        measured = "; ".join(
            f"{k.replace('_', ' ')} {_fmt(v)}"
            for k, v in r.items()
            if k not in ("model", "layer_type", "kind")
        )
        rows.append((r["model"], r["layer_type"], r["kind"], measured))
    return columns, rows


def table_engines(m: Measurements, ctx: Context):
    columns = (
        "model",
        "engine",
        "version",
        "layer type",
        "inv_freq vs tf (ulps)",
        "angle vs tf (rad)",
        "attention factor (tf)",
        "forward = tables",
        "verdict",
    )
    rows = []
    for r in m.rows.get("engines", []):
        if r["status"] != "ok":
            verdict = f"{r['status'].replace('_', ' ')}: {r['reason']}"
        elif r["agrees"]:
            verdict = "agrees"
        elif r["differences"]:
            kind = "differs" if r["confirmed"] else "differs, not confirmed by its forward"
            verdict = f"{kind}: {r['differences']} ({r['source']})"
        else:
            verdict = "no angles to compare"
        factor = _fmt(r.get("attention_factor"), 6)
        if r.get("transformers_factor") is not None:
            factor = f"{factor} ({_fmt(r['transformers_factor'], 6)})"
        rows.append(
            (
                r["model"],
                r["engine"],
                r.get("version") or NA,
                r.get("layer_type") or NA,
                _fmt(r.get("freq_ulps_transformers")),
                _fmt(r.get("angle_rad_transformers")),
                factor,
                {True: "yes", False: "no", None: NA}[r.get("forward_matches_tables")],
                verdict,
            )
        )
    return columns, rows
