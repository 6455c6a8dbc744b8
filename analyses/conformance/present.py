"""Conformance figures and tables: one function per figure and per table of the spec. A row of
a library that is not installed shows n/a and the reason."""

from posenc.analysis import Context, Measurements
from posenc.plotting import panel_grid, reference_line, series_style, themed

FLOOR = 1e-9  # an exact zero is drawn here, below every rounding error
NA = "n/a"


def _look(names: list[str], name: str) -> dict:
    """One look per implementation, in the order compute lists them (ours first), from the
    palette of series that are not encodings. Implementations that agree draw the same curve:
    earlier ones wider, each dashed differently and its markers staggered, so that every one
    stays visible under the others."""
    i = names.index(name)
    return {
        **series_style(names)[name],
        "lw": 1 + 1.5 * (len(names) - 1 - i) / max(1, len(names) - 1),
    }


@themed
def figure_traps(m: Measurements, ctx: Context):
    """Angle error against position, log-log: a panel per path, a line per implementation."""
    paths = m.summary["paths"]
    curve = m.rows["trap_curve"]
    names = list(dict.fromkeys(r["library"] for r in m.rows["traps"]))
    # Two panels a row: a row of every path was drawn 16 inches wide.
    fig, axes = panel_grid(len(paths), ncols=2, panel_height=2.3, sharex=True, sharey=True)
    threshold = ctx.cfg["thresholds"]["trap_angle_rad"]
    for ax, path in zip(axes, paths):
        for name in names:
            points = [r for r in curve if (r["library"], r["path"]) == (name, path)]
            if not points:
                continue
            ax.plot(
                [r["position"] for r in points],
                [max(r["max_angle_error"], FLOOR) for r in points],
                ms=4,
                markevery=(names.index(name), max(1, len(points) // 8)),
                label=name,
                **_look(names, name),
            )
        reference_line(ax, threshold, label="threshold")
        ax.set(xscale="log", yscale="log", title=path.replace("_", " "))
        ax.grid(alpha=0.3, which="both")
        ax.set_xlabel("position p")
        ax.label_outer()  # the x labels of the bottom row, the y labels of the first column
    fig.supylabel("max |applied angle − p·ω| (rad)")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncol=3)
    return fig


def _cell(row: dict, key: str):
    if row["status"] != "measured":
        return NA
    value = row.get(key)
    return "—" if value is None else value


def _reason(row: dict) -> str:
    return row["reason"] or ""


def table_rope(m: Measurements, ctx: Context):
    shifts = ctx.cfg["shifts"]
    columns = [
        "implementation",
        "layout",
        "max error",
        "error / bound",
        "score error / bound",
        *(f"shift {t} / bound" for t in shifts),
        "gap to ours / 2·bound",
        "note",
    ]
    keys = [
        "layout",
        "max_abs_error",
        "error_over_bound",
        "score_over_bound",
        *(f"shift_{t}_over_bound" for t in shifts),
        "ours_over_bound",
    ]
    rows = [[r["library"], *(_cell(r, k) for k in keys), _reason(r)] for r in m.rows["rope"]]
    return columns, rows


def table_sinusoidal(m: Measurements, ctx: Context):
    columns = ["implementation", "layout", "max error", "error / bound", "gap to ours / 2·bound"]
    keys = ["layout", "max_abs_error", "error_over_bound", "ours_over_bound"]
    rows = [[r["library"], *(_cell(r, k) for k in keys), _reason(r)] for r in m.rows["sinusoidal"]]
    return [*columns, "note"], rows


def table_scaling(m: Measurements, ctx: Context):
    columns = [
        "implementation",
        "method (theirs)",
        "ours",
        "factor s",
        "inverse frequencies, ulps",
        "attention factor",
        "ours",
        "difference, ulps",
        "note",
    ]
    rows = [
        [
            r["library"],
            r["their_method"],
            r["method"],
            r["factor"],
            _cell(r, "inv_freq_ulps"),
            _cell(r, "attention_factor"),
            _cell(r, "ours_attention_factor"),
            _cell(r, "attention_ulps"),
            _reason(r),
        ]
        for r in m.rows["scaling"]
    ]
    return columns, rows


def table_dynamic(m: Measurements, ctx: Context):
    columns = [
        "implementation",
        "option",
        "factor s",
        "length l",
        "effective NTK scale",
        "ours",
        "difference from ours, ulps",
        "note",
    ]
    rows = [
        [
            r["library"],
            r["option"],
            r["factor"],
            "—" if r["length"] is None else r["length"],
            _cell(r, "effective_scale"),
            r["ours_scale"],
            _cell(r, "ntk_ulps"),
            _reason(r),
        ]
        for r in m.rows["dynamic"]
    ]
    return columns, rows


def table_alibi(m: Measurements, ctx: Context):
    """One row per implementation and kind of head count (powers of two or not)."""
    columns = ["implementation", "head counts", "how many", "largest difference, ulps", "at H"]
    rows = []
    for name in dict.fromkeys(r["library"] for r in m.rows["alibi"]):
        mine = [r for r in m.rows["alibi"] if r["library"] == name]
        if any(r["status"] != "measured" for r in mine):
            rows.append([name, NA, NA, NA, NA, _reason(mine[0])])
            continue
        for label, power in (("powers of two", True), ("others", False)):
            group = [r for r in mine if r["power_of_two"] == power]
            if group:
                worst = max(group, key=lambda r: r["max_ulps"])
                rows.append([name, label, len(group), worst["max_ulps"], worst["heads"], ""])
    return [*columns, "note"], rows


def table_t5(m: Measurements, ctx: Context):
    columns = [
        "implementation",
        "num_buckets",
        "max_distance",
        "direction",
        "mismatches with the formula",
        "first at",
        "mismatches with ours",
        "note",
    ]
    rows = [
        [
            r["library"],
            r["num_buckets"],
            r["max_distance"],
            r["direction"],
            _cell(r, "mismatches"),
            _cell(r, "first_mismatch"),
            _cell(r, "ours_mismatches"),
            _reason(r),
        ]
        for r in m.rows["t5"]
    ]
    return columns, rows


def table_traps(m: Measurements, ctx: Context):
    columns = [
        "implementation",
        "version",
        "path",
        "max angle error (rad)",
        "at position",
        "first position past the threshold",
        "measured",
        "read from the source",
        "as read",
        "note",
    ]
    version = m.summary["versions"]
    rows = []
    for r in m.rows["traps"]:
        agreed = r.get("as_expected")
        rows.append(
            [
                r["library"],
                version.get(r["library"]) or NA,
                r["path"].replace("_", " "),
                _cell(r, "max_angle_error"),
                _cell(r, "at_position"),
                _cell(r, "first_over_threshold"),
                _cell(r, "measured"),
                r["expected"] or "—",
                "—" if agreed is None else ("yes" if agreed else "no"),
                _reason(r),
            ]
        )
    return columns, rows
