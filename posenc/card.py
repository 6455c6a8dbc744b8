"""The report card: one row per encoding, one column per measured property, each cell a number
from an analysis' evidence coloured by a claim's verdict on that encoding.

The columns are data, declared by the analyses that measure them (``AnalysisSpec.card``, a
tuple of :class:`~posenc.analysis.CardColumn`), so a new analysis brings its own columns and a
new encoding (a user's plugin, say) gets a row without any edit here. The card reads only what
the analyses wrote, their metrics.json evidence and their ledger's per-entry ``outcomes``: it
measures and judges nothing itself. Torch-free; the figure imports matplotlib when drawn.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from posenc.analysis import CardColumn
from posenc.claims import is_interval
from posenc.plotting import DENSE_PT, themed

# What a cell's colour says: whether the encoding has the column's property, as the claim
# that judges the cell found. Green only ever marks a property that holds: a claim that
# asserts an encoding *lacks* it (positions that collide in bfloat16; its column says so in
# ``CardColumn.asserts_absence``) and holds is a weakness confirmed, in its own colour. A claim
# that fails is red, whichever way it pointed. The page's stylesheet gives the table the same
# colours (report_templates/style.css, .card-*).
OUTCOMES = ("holds", "lacks", "fail", "inconclusive", "unjudged", "none", "missing")
COLOURS = {
    "holds": "#cfe8d5",
    "lacks": "#fde0c2",
    "fail": "#f5c2c7",
    "inconclusive": "#e4d9f2",
    "unjudged": "#d9dde0",
    "none": "#eceff1",
    "missing": "#ffffff",
}
OUTCOME_WORDS = {
    "holds": "has the property: its claim holds",
    "lacks": "lacks the property, as its claim says",
    "fail": "its claim fails",
    "inconclusive": "inconclusive: the evidence cannot decide",
    "unjudged": (
        "not judged: its models did not beat a trigram (language models) or learn the task "
        "(passkey), so its claim sets it aside"
    ),
    "none": "no verdict: no claim judges it, or none could be tested",
    "missing": "not measured",
}

# What each unit a column may name (``CardColumn.units``) means, for the card's caption. The
# analyses declare which numbers are in which unit; the card words them. A unit missing here
# stops the card (:func:`build`) rather than show a unit the caption cannot explain.
UNIT_WORDS = {
    "ε": "ε, the machine epsilon of the dtype",
    "%": "%, a relative change or error in per cent",
    "× bound": "× bound, a multiple of the rounding bound the section derives (≤ 1: rounding)",
    "ulp": "ulp, units in the last place",
    "buckets": "buckets, T5 buckets that differ from the formula",
}


def outcome(verdict: str | None, asserts_absence: bool = False) -> str:
    """A cell's colour (:data:`OUTCOMES`) from its claim's verdict on the encoding."""
    if verdict == "pass":
        return "lacks" if asserts_absence else "holds"
    if verdict == "not judged":  # posenc.claims.NOT_JUDGED
        return "unjudged"
    return "none" if verdict is None else verdict


class _Scalars(dict):
    """Braces in a key or a label: ``{encoding}`` and the evidence's scalars; anything else is
    left as written, so a label never raises for a value this run lacks."""

    def __missing__(self, key):
        return "{" + key + "}"


def _scalars(evidence: Mapping[str, Any], encoding: str | None = None) -> _Scalars:
    values = _Scalars({k: v for k, v in evidence.items() if isinstance(v, (int, float, str))})
    if encoding is not None:
        values["encoding"] = encoding
    return values


def _at(mapping: Any, path: str) -> Any:
    """``mapping`` read along a dotted ``path``; None where an entry is missing."""
    for part in path.split("."):
        if not isinstance(mapping, Mapping) or part not in mapping:
            return None
        mapping = mapping[part]
    return mapping


def cell_text(value: Any) -> str:
    """A number at three significant digits (an interval by its estimate); yes/no for a fact."""
    if is_interval(value):
        value = value["estimate"]
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            return str(value)
        if value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e5):
            return f"{value:.2e}"
        return f"{value:.3g}"
    return str(value)


def _number(value: Any, factor: float, unit: str) -> str:
    """A cell's number in its unit: a fraction shown in per cent is multiplied first."""
    if is_interval(value):
        value = value["estimate"]
    if factor != 1 and isinstance(value, (int, float)) and not isinstance(value, bool):
        value = value * factor
    text = cell_text(value)
    return text + "%" if unit == "%" and text != "—" else text


def cell(
    column: CardColumn, evidence: Mapping[str, Any], ledger: Mapping[str, dict], encoding: str
) -> dict[str, Any]:
    """One encoding's cell of ``column``: its value; its number as shown and the unit it is
    in, where its column mixes units (``CardColumn.units``), and both as one ``text``; its
    claim's ``verdict`` (None: none given; "missing": not measured) and the ``outcome`` its
    colour shows (:func:`outcome`, with ``CardColumn.asserts_absence``)."""
    missing = {
        "value": None,
        "number": "—",
        "unit": "",
        "text": "—",
        "interval": None,
        "single": False,
        "verdict": "missing",
        "outcome": "missing",
    }
    values = _scalars(evidence, encoding)
    paths, key, claim = column.evidence, column.key, column.claim
    judged, judged_key = column.judged, column.judged_key
    if column.routes:
        route = next((r for r in column.routes if r[0] == encoding), None)
        if route is None:
            return missing
        _, path, key, claim = route
        paths, judged, judged_key = (path,), None, None
    shown_key = key.format_map(values)
    path, value = None, None
    for candidate in paths:
        value = _at(evidence.get(candidate), shown_key)
        if value is not None:
            path = candidate
            break
    if path is None:
        return missing
    verdict = None
    judged = judged or path
    entry = ledger.get(claim) if claim else None
    if entry is not None:
        judged_key = (judged_key or key).format_map(values)
        # An outcome is kept per top-level entry of the evidence mapping.
        verdict = entry.get("outcomes", {}).get(judged, {}).get(judged_key.split(".")[0])
    unit, factor = column.unit(path)
    number = _number(value, factor, unit)
    text = f"{number} {unit}" if unit and unit != "%" else number
    return {
        "value": value,
        "number": number,
        "unit": "" if unit == "%" else unit,
        "text": text,
        # An estimate shows its interval; any other number is one measurement, marked so,
        # since a reader cannot tell from the number alone whether it would move in a rerun.
        "interval": _interval(value, factor, unit),
        "single": not is_interval(value) and _numeric(value),
        "verdict": verdict,
        "outcome": outcome(verdict, judged in column.asserts_absence),
    }


def _numeric(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _interval(value: Any, factor: float, unit: str) -> str | None:
    """An estimate's interval as the cell shows it, "low–high" in the cell's unit."""
    if not is_interval(value):
        return None
    low, high = (_number(value[k], factor, unit) for k in ("low", "high"))
    return f"{low}–{high}"


def marks(rows: list[dict[str, Any]]) -> str:
    """What the card's marks mean, for the marks its cells carry: the interval beneath an
    estimate (at the level its intervals were computed at) and the single measurement's †."""
    cells = [c for r in rows for c in r["cells"]]
    levels = sorted(
        {c["value"]["level"] for c in cells if c.get("interval") and "level" in c["value"]}
    )
    said = []
    if any(c.get("interval") for c in cells):
        at = " and ".join(f"{level:.0%}" for level in levels) or "its stated level"
        said.append(f"A range beneath a number is its {at} interval.")
    if any(c.get("single") for c in cells):
        said.append("† marks a single measurement, shown without an interval.")
    return " ".join(said)


def _fill(text: str, scalars: Mapping[str, Any], **more: str) -> str:
    """``text`` with the evidence's scalars (numbers written short: 1.0 as 1) in braces."""
    shown = {k: f"{v:g}" if isinstance(v, float) else v for k, v in scalars.items()}
    return text.format_map(_Scalars({**shown, **more}))


def build(
    sections: list[dict[str, Any]], encodings: list[str], meta: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """The card's data. ``sections``: in report order, each ``{"id", "title", "columns"
    (CardColumn list), "evidence" (its metrics.json evidence), "ledger" (its claims)}`` and
    optionally "summary" (its metrics.json summary, whose scalars labels may name);
    ``encodings``: the rows, in the config's order; ``meta``: each encoding's registry
    metadata, of which the card shows its summary and its plugin file (None for a built-in
    one), so a user's encoding stands out.

    Each column carries the expected text of the claim that colours it, and ``caption`` the
    sentences the card's caption needs: each column's own (``CardColumn.caption``) and the
    units named in cells (``CardColumn.units``, worded by :data:`UNIT_WORDS`)."""
    columns, getters, caption = [], [], []
    for sec in sections:
        ledger = {c["id"]: c for c in sec["ledger"]}
        # Labels and notes may name the section's summary scalars too (ω_max, say).
        scalars = _scalars({**sec.get("summary", {}), **sec["evidence"]})
        for column in sec["columns"]:
            unknown = [u for _, u, _ in column.units if u not in UNIT_WORDS]
            if unknown:
                raise ValueError(
                    f"card column {column.label!r} of {sec['id']}: unit "
                    f"{', '.join(map(repr, unknown))} is not one the card's caption can explain "
                    f"(posenc.card.UNIT_WORDS: {', '.join(map(repr, UNIT_WORDS))})"
                )
            claim = ledger.get(column.claim) if column.claim else None
            expected = (claim or {}).get("expected", "")
            if column.caption:
                caption.append(_fill(column.caption, scalars, expected=expected))
            columns.append(
                {
                    "label": column.label.format_map(scalars),
                    "note": _fill(column.note, scalars, expected=expected),
                    "section": sec["id"],
                    "section_title": sec["title"],
                    "claim": column.claim,
                    "claim_expected": expected or None,
                }
            )
            getters.append((column, sec["evidence"], ledger))
    rows = [
        {
            "encoding": name,
            "summary": meta.get(name, {}).get("summary", ""),
            "plugin": meta.get(name, {}).get("plugin"),
            "cells": [cell(column, ev, ledger, name) for column, ev, ledger in getters],
        }
        for name in encodings
    ]
    shown = {
        c["unit"] or ("%" if c["number"].endswith("%") else "") for r in rows for c in r["cells"]
    }
    units = [words for unit, words in UNIT_WORDS.items() if unit in shown]
    if units:
        caption.append(
            "Where a row mixes units, each cell names its own: " + "; ".join(units) + "."
        )
    present = {c["outcome"] for r in rows for c in r["cells"]}
    legend = [
        {"outcome": o, "words": OUTCOME_WORDS[o], "colour": COLOURS[o]}
        for o in OUTCOMES
        if o in present
    ]
    return {
        "columns": columns,
        "rows": rows,
        "legend": legend,
        "caption": caption,
        "marks": marks(rows),
    }


# The figure is drawn at the width the PDF prints it (A4 less the 16 mm margins of
# style.css's @page, with room to spare), so that its type sizes are the printed ones: the
# card was once drawn 15 inches wide and shrunk to 7, its numbers to 3.5 pt. Ten encodings fit
# that width at the theme's dense size (8 pt, every word of the card, units and legend too);
# more are drawn in panels of at most ten, one above the other.
PRINT_WIDTH_IN = 6.8
FONT_PT = DENSE_PT
PER_PANEL = 10
LABEL_IN = 1.8  # the property labels' column
CELL_H_IN = 0.34


def _panel(ax, columns: list[dict], rows: list[dict], font: float, slant: bool) -> None:
    """One grid of the card: a row per property, a column per encoding of ``rows``."""
    import textwrap

    import numpy as np
    import seaborn as sns
    from matplotlib.colors import ListedColormap

    # Each cell is its outcome's place in OUTCOMES, drawn in that outcome's colour; an empty
    # card (no encodings, or no properties) keeps one blank cell, as NaN draws nothing.
    outcomes = np.full((max(len(columns), 1), max(len(rows), 1)), np.nan)  # (property, encoding)
    for j, row in enumerate(rows):
        for i, c in enumerate(row["cells"]):
            outcomes[i, j] = OUTCOMES.index(c["outcome"])
    sns.heatmap(
        outcomes,
        ax=ax,
        cmap=ListedColormap([COLOURS[o] for o in OUTCOMES]),
        vmin=-0.5,
        vmax=len(OUTCOMES) - 0.5,
        cbar=False,
        linewidths=1.5,
        linecolor="white",
        xticklabels=False,
        yticklabels=False,
    )
    # The numbers are written here, not by heatmap's annot, which gives every cell one style:
    # a failure's is bold and dark red, a missing one's grey, a long one's unit on a line below.
    for j, row in enumerate(rows):
        for i, c in enumerate(row["cells"]):
            style = {"ha": "center", "va": "center", "fontsize": font}
            if c["outcome"] == "fail":
                style.update(color="#7f1d1d", fontweight="bold")
            elif c["outcome"] == "missing":
                style.update(color="#888888")
            # An estimate's interval, or a long unit, on a second line; a single
            # measurement's † beside its number (the caption says what both mean).
            mark = " †" if c.get("single") else ""
            below = c.get("interval") or (c["unit"] if c["unit"] and len(c["text"]) > 7 else "")
            if below:
                first = c["number"] if below == c["unit"] else c["text"]
                ax.text(j + 0.5, i + 0.36, first + mark, **style)
                ax.text(
                    j + 0.5, i + 0.76, below, ha="center", va="center", fontsize=font,
                    color="#5b6168",
                )  # fmt: skip
            else:
                ax.text(j + 0.5, i + 0.5, c["text"] + mark, **style)
    # A rule between the properties of different sections.
    for i in range(1, len(columns)):
        if columns[i]["section"] != columns[i - 1]["section"]:
            ax.axhline(i, color="#9aa0a6", lw=0.8)
    ax.set_yticks([i + 0.5 for i in range(len(columns))])
    ax.set_yticklabels(
        [textwrap.fill(c["label"], 26) for c in columns], fontsize=font, linespacing=1.0
    )
    ax.xaxis.tick_top()
    ax.set_xticks([j + 0.5 for j in range(len(rows))])
    ax.set_xticklabels(
        [r["encoding"] for r in rows],
        fontsize=font,
        rotation=35 if slant else 0,
        ha="left" if slant else "center",
        rotation_mode="anchor",
    )
    for label, row in zip(ax.get_xticklabels(), rows):
        if row["plugin"]:
            label.set_fontweight("bold")
    ax.tick_params(length=0, pad=3)


@themed
def figure(card: dict[str, Any]):
    """The card as a grid: a row per property, grouped by the section that measures it, a
    column per encoding (a plugin's in bold), each cell its number on its outcome's colour.
    Properties as rows keep the labels level and the grid within a portrait page, drawn at
    the size it is printed (:data:`PRINT_WIDTH_IN`)."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    columns, rows = card["columns"], card["rows"]
    n_props = max(len(columns), 1)
    panels = max(math.ceil(len(rows) / PER_PANEL), 1)
    per = max(math.ceil(len(rows) / panels), 1)
    chunks = [rows[k : k + per] for k in range(0, len(rows), per)] or [[]]
    cell_w = min(0.8, (PRINT_WIDTH_IN - LABEL_IN) / per)
    font = FONT_PT  # never smaller: a narrower cell wraps its unit to a line of its own
    # Encoding names above their columns: level where they fit, slanted where they do not.
    widest = max((len(r["encoding"]) for r in rows), default=0) * 0.55 * font / 72
    slant = widest > cell_w * 0.95
    header_h = widest * 0.6 + 0.25 if slant else 0.35
    legend_h = 0.25 + 0.2 * ((len(card.get("legend", [])) + 1) // 2)
    panel_h = header_h + CELL_H_IN * n_props
    width = LABEL_IN + cell_w * per + 0.1
    height = panel_h * len(chunks) + legend_h
    fig = plt.figure(figsize=(width, height))
    for k, chunk in enumerate(chunks):
        bottom = height - (k + 1) * panel_h
        ax = fig.add_axes(
            (LABEL_IN / width, bottom / height, cell_w * len(chunk) / width,
             CELL_H_IN * n_props / height)
        )  # fmt: skip
        _panel(ax, columns, chunk, font, slant)
    if card.get("legend"):
        fig.legend(
            handles=[
                Patch(facecolor=item["colour"], edgecolor="#9aa0a6", label=item["words"])
                for item in card["legend"]
            ],
            loc="lower center",
            bbox_to_anchor=(0.5, 0.0),
            ncol=2,
            fontsize=font,
            frameon=False,
            handlelength=1.4,
            columnspacing=1.2,
        )
    return fig
