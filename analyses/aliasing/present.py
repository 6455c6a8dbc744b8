"""Aliasing figures and tables: one function per figure and per table of the spec. Tables of
angles are panels, one per configured encoding that has one, styled from the registry."""

import math

from posenc.analysis import Context, Measurements
from posenc.plotting import DTYPES, PAGE_WIDTH_IN, panel_grid, series_style, style, themed

from .compute import _find

ERROR_FLOOR = 1e-12  # exact zeros are drawn here on log axes, below every rounding error shown
TABLE_LINES = ("-", "--", ":", "-.")


def _dtype_color(dtype: str) -> str:
    """A dtype's colour, the one it has in every figure (posenc.plotting.DTYPES); one not
    listed there still gets one that no encoding has."""
    return series_style([*DTYPES, dtype])[dtype]["color"]


def _variant_styles(variants: list[str]) -> dict[str, dict]:
    """One colour per stored dtype, one line style per way of computing."""
    out = {}
    for name in variants:
        store = name.split()[1] if name.startswith("naive") else name.split()[0]
        dashes = "-" if name.startswith("naive") else ("--" if "float32 angles" in name else ":")
        out[name] = {"color": _dtype_color(store), "ls": dashes}
    return out


def _panels(n: int, panel_height: float = 2.6):
    """One panel per table, two a row, sharing the y axis (at least one panel)."""
    return panel_grid(max(n, 1), ncols=2, panel_height=panel_height, sharey=True)


def _title(ax, table: dict, what: str = "") -> None:
    base = "" if table["base"] is None else f", base {table['base']:g}"
    ax.set_title(
        f"{table['encoding']}{what} (width {table['width']}{base})",
        color=style(table["encoding"])["color"],
    )


def _none_configured(ax) -> None:
    ax.text(
        0.5, 0.5, "no table of angles configured", ha="center", va="center", transform=ax.transAxes
    )


def _drawable(errors: list[float], floor: float) -> list[float]:
    """Log axes: exact zeros at ``floor``, non-finite errors left out (NaN)."""
    return [max(e, floor) if e is not None and math.isfinite(e) else math.nan for e in errors]


@themed
def figure_min_distance(m: Measurements, ctx: Context):
    """Exact minimum distance against L, one panel per base, one line per d."""
    cfg = ctx.cfg
    bases = cfg["exact"]["bases"]
    fig, axes = panel_grid(len(bases), ncols=2, panel_height=3.6, sharey=True)
    if len(bases) == 1:
        fig.set_figwidth(PAGE_WIDTH_IN * 0.75)
    ds = cfg["exact"]["d_values"]
    looks = series_style(ds)
    for ax, base in zip(axes, bases):
        for d in ds:
            rows = _find(m.rows["min_distance"], d=d, base=base)
            ax.plot(
                [r["length"] for r in rows],
                [r["min_distance"] for r in rows],
                ms=3,
                label=f"d = {d}",
                **looks[d],
            )
        ax.set(xscale="log", yscale="log", xlabel="L (positions 0..L−1)", title=f"base {base:g}")
        ax.grid(alpha=0.3, which="both")
    axes[0].set_ylabel("min ‖PE(p) − PE(q)‖ over p ≠ q < L")
    axes[-1].legend()
    return fig


@themed
def figure_spectra(m: Measurements, ctx: Context):
    """Every table's frequency per pair, side by side; pairs that never turn at the bottom."""
    spectra = m.summary["spectra"]
    fig, axes = _panels(len(spectra))
    if not spectra:
        _none_configured(axes[0])
        return fig
    turning = [w for row in spectra for w in row["omega"] if w > 0]
    floor = min(turning) / 10 if turning else 1e-6
    for ax, row in zip(axes, spectra):
        look = style(row["encoding"])
        pairs = list(range(row["pairs"]))
        moving = [(i, w) for i, w in zip(pairs, row["omega"]) if w > 0]
        still = [i for i, w in zip(pairs, row["omega"]) if w == 0]
        if moving:
            ax.plot(*zip(*moving), marker=look["marker"], color=look["color"], ls="", ms=4)
        if still:
            ax.plot(still, [floor] * len(still), marker="x", color="0.45", ls="", ms=4)
        ax.set_yscale("log")
        ax.set_xlabel("pair i of the vector")
        ax.set_title(f"{row['encoding']} ({len(moving)} of {row['pairs']} turn)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("ω_i (rad per position)\nx: never turns")
    return fig


def _curves_by_table(m: Measurements, rows: str, y: str, ylabel: str, axis: dict, line: dict):
    """``y`` of ``m.rows[rows]`` against L, one panel per table, one line per variant (styled
    by :func:`_variant_styles`, with ``line`` on top); ``axis``: each panel's y axis."""
    tables, variants = m.summary["tables"], m.summary["variants"]
    styles = _variant_styles(variants)
    fig, axes = _panels(len(tables))
    for ax, table in zip(axes, tables):
        for name in variants:
            found = _find(m.rows[rows], encoding=table["encoding"], variant=name)
            ax.plot(
                [r["length"] for r in found],
                [r[y] for r in found],
                label=name,
                **line,
                **styles[name],
            )
        ax.set(xscale="log", xlabel="L", **axis)
        _title(ax, table)
        ax.grid(alpha=0.3, which="both")
    if not tables:
        _none_configured(axes[0])
    axes[0].set_ylabel(ylabel)
    if tables:
        fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncol=2)
    return fig


@themed
def figure_distinct(m: Measurements, ctx: Context):
    """Distinct fraction against L, one panel per table, one line per variant."""
    return _curves_by_table(
        m, "distinct_curve", "distinct_fraction", "distinct encodings / L", {"yscale": "log"}, {}
    )


@themed
def figure_errors(m: Measurements, ctx: Context):
    """Angle error (every table in one panel) and encoding error (a panel per table) against
    the position."""
    tables, variants = m.summary["tables"], m.summary["variants"]
    errors = m.rows["errors"]
    styles = _variant_styles(variants)
    # Two panels a row: a row of every panel was drawn 15 inches wide.
    fig, axes = panel_grid(1 + len(tables), ncols=2, panel_height=3.0)
    angle_names = sorted({r["variant"] for r in errors if r["quantity"] == "angle"})
    for i, table in enumerate(tables):
        name = table["encoding"]
        for variant in angle_names:
            rows = _find(errors, encoding=name, quantity="angle", variant=variant)
            axes[0].plot(
                [r["position"] for r in rows],
                _drawable([r["max_abs_error"] for r in rows], ERROR_FLOOR),
                ls=TABLE_LINES[i % len(TABLE_LINES)],
                lw=1,
                marker=style(name)["marker"],
                ms=3,
                markevery=max(1, len(rows) // 12),
                color=_dtype_color(variant.split()[0]),
                label=f"{name}, {variant}",
            )
    axes[0].set(
        xscale="log",
        yscale="log",
        xlabel="position p",
        ylabel="max_i |θ̂_i − θ_i| (rad)",
        title="angle error (naive dtypes)",
    )
    if not tables:
        _none_configured(axes[0])
    for ax, table in zip(axes[1:], tables):
        for variant in variants:
            rows = _find(errors, encoding=table["encoding"], quantity="encoding", variant=variant)
            ax.plot(
                [r["position"] for r in rows],
                _drawable([r["max_abs_error"] for r in rows], ERROR_FLOOR),
                lw=1,
                label=variant,
                **styles[variant],
            )
        ax.set(xscale="log", yscale="log", xlabel="position p", ylabel="max |row − exact row|")
        _title(ax, table, "\nencoding error")
    if tables:
        # Both panels' keys in one legend below them: the angle lines' (a line style per
        # table, a colour per dtype) and the encoding errors' (a colour per stored dtype).
        handles, labels = axes[0].get_legend_handles_labels()
        more, more_labels = axes[-1].get_legend_handles_labels()
        fig.legend(handles + more, labels + more_labels, loc="outside lower center", ncol=2)
    for ax in axes:
        ax.grid(alpha=0.3, which="both")
    return fig


@themed
def figure_decode(m: Measurements, ctx: Context):
    """Decoding accuracy against L, one panel per table, one line per variant."""
    return _curves_by_table(
        m,
        "decode",
        "accuracy",
        "decoded to itself (fraction)",
        {"ylim": (-0.03, 1.03)},
        {"marker": "."},
    )


def table_min_distance(m: Measurements, ctx: Context):
    n = m.summary["max_len"]
    checks = {(c["d"], c["base"]): c for c in m.summary["scan_checks"]}
    columns = [
        "d",
        "base",
        "min distance",
        "at offset",
        "adjacent distance",
        "check L",
        "scan vs brute force (rel.)",
    ]
    rows = [
        [
            r["d"],
            r["base"],
            r["min_distance"],
            r["argmin_offset"],
            r["adjacent_distance"],
            checks[(r["d"], r["base"])]["length"],
            checks[(r["d"], r["base"])]["relative_difference"],
        ]
        for r in m.rows["min_distance"]
        if r["length"] == n
    ]
    return columns, rows


def table_far_pairs(m: Measurements, ctx: Context):
    lengths = m.summary["lengths"]
    shown = {lengths[1], lengths[len(lengths) // 2], lengths[-1]}
    far = sorted(
        (r for r in m.rows["min_distance"] if r["d"] == ctx.cfg["d_model"]),
        key=lambda r: (r["base"], r["length"]),
    )
    columns = ["base", "L", "min distance (offset ≥ 2)", "at offset", "ratio to adjacent"]
    rows = [
        [
            r["base"],
            r["length"],
            r["far_min_distance"],
            r["far_argmin_offset"],
            r["far_to_adjacent"],
        ]
        for r in far
        if r["length"] in shown
    ]
    return columns, rows


def table_floating_point(m: Measurements, ctx: Context):
    n = m.summary["max_len"]
    errs: dict[tuple, float] = {}
    for r in m.rows["errors"]:
        if r["quantity"] == "encoding":
            key = (r["encoding"], r["variant"])
            errs[key] = max(errs.get(key, 0.0), r["max_abs_error"])
    acc = {
        (r["encoding"], r["variant"]): r["accuracy"] for r in m.rows["decode"] if r["length"] == n
    }
    columns = [
        "encoding",
        "variant",
        "distinct",
        "fraction",
        "first repeat",
        "of row",
        "first non-finite",
        "non-finite rows",
        "max error",
        "decoded",
    ]
    rows = [
        [
            s["encoding"],
            s["variant"],
            s["distinct"],
            s["distinct_fraction"],
            # −1 is the rows' "none" (posenc.distinct); the table shows a dash.
            _none_if_negative(s["first_repeat"]),
            _none_if_negative(s["first_repeat_of"]),
            _none_if_negative(s["first_nonfinite"]),
            s["nonfinite_rows"],
            errs.get((s["encoding"], s["variant"])),
            acc.get((s["encoding"], s["variant"])),
        ]
        for s in m.rows["distinct"]
    ]
    return columns, rows


def _none_if_negative(value):
    return None if value is not None and value < 0 else value


def table_learned(m: Measurements, ctx: Context):
    columns = ["encoding", "L_max", "rows 0..L_max−1", "position L_max raises", "message"]
    rows = [
        [
            t["encoding"],
            t["max_len"],
            "x".join(map(str, t["in_range_shape"])),
            t["error"] or "nothing",
            t["message"] or "—",
        ]
        for t in m.summary["learned_tables"]
    ]
    return columns, rows
