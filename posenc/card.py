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

# Cell colours by verdict: the claim holds for that encoding, fails, the evidence cannot decide
# it (an interval straddles the threshold), or there is no verdict (no claim judges the
# number, or the claim does not cover that encoding).
COLOURS = {
    "pass": "#d4edda",
    "fail": "#f8d7da",
    "inconclusive": "#fff3cd",
    None: "#eceff1",
    "missing": "#ffffff",
}
VERDICT_WORDS = {
    "pass": "holds",
    "fail": "fails",
    "inconclusive": "inconclusive",
    None: "no verdict",
}


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


def cell(
    column: CardColumn, evidence: Mapping[str, Any], ledger: Mapping[str, dict], encoding: str
) -> dict[str, Any]:
    """One encoding's cell of ``column``: its value, text and verdict (None: none given)."""
    values = _scalars(evidence, encoding)
    if column.routes:
        route = next((r for r in column.routes if r[0] == encoding), None)
        if route is None:
            return {"value": None, "text": "—", "verdict": "missing"}
        _, path, key, claim = route
        column = CardColumn(column.label, (path,), key=key, claim=claim)
    key = column.key.format_map(values)
    path, value = None, None
    for candidate in column.evidence:
        value = _at(evidence.get(candidate), key)
        if value is not None:
            path = candidate
            break
    if path is None:
        return {"value": None, "text": "—", "verdict": "missing"}
    verdict = None
    entry = ledger.get(column.claim) if column.claim else None
    if entry is not None:
        judged = column.judged or path
        judged_key = (column.judged_key or column.key).format_map(values)
        # An outcome is kept per top-level entry of the evidence mapping.
        verdict = entry.get("outcomes", {}).get(judged, {}).get(judged_key.split(".")[0])
    return {"value": value, "text": cell_text(value), "verdict": verdict}


def build(
    sections: list[dict[str, Any]], encodings: list[str], meta: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """The card's data. ``sections``: in report order, each ``{"id", "title", "columns"
    (CardColumn list), "evidence" (its metrics.json evidence), "ledger" (its claims)}``;
    ``encodings``: the rows, in the config's order; ``meta``: each encoding's registry
    metadata, of which the card shows its summary and its plugin file (None for a built-in
    one), so a user's encoding stands out."""
    columns, getters = [], []
    for sec in sections:
        ledger = {c["id"]: c for c in sec["ledger"]}
        scalars = _scalars(sec["evidence"])
        for column in sec["columns"]:
            columns.append(
                {
                    "label": column.label.format_map(scalars),
                    "note": column.note.format_map(scalars),
                    "section": sec["id"],
                    "section_title": sec["title"],
                    "claim": column.claim,
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
    return {"columns": columns, "rows": rows}


def figure(card: dict[str, Any]):
    """The card as a grid: a row per encoding, a column per property, each cell its number on
    its verdict's colour; a plugin's encoding is marked in bold."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    columns, rows = card["columns"], card["rows"]
    n_cols, n_rows = max(len(columns), 1), max(len(rows), 1)
    fig, ax = plt.subplots(figsize=(1.05 * n_cols + 2.2, 0.36 * n_rows + 2.4), layout="constrained")
    for i, row in enumerate(rows):
        for j, c in enumerate(row["cells"]):
            ax.add_patch(
                plt.Rectangle((j, i), 1, 1, facecolor=COLOURS[c["verdict"]], edgecolor="white")
            )
            ax.text(j + 0.5, i + 0.5, c["text"], ha="center", va="center", fontsize=7.5)
    ax.set_xlim(0, n_cols)
    ax.set_ylim(n_rows, 0)
    ax.set_xticks([j + 0.5 for j in range(len(columns))])
    ax.set_xticklabels([c["label"] for c in columns], rotation=40, ha="left", fontsize=8)
    ax.xaxis.tick_top()
    ax.set_yticks([i + 0.5 for i in range(len(rows))])
    ax.set_yticklabels([r["encoding"] for r in rows], fontsize=8)
    for label, row in zip(ax.get_yticklabels(), rows):
        if row["plugin"]:
            label.set_fontweight("bold")
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    ax.legend(
        handles=[
            Patch(facecolor=COLOURS[v], edgecolor="grey", label=f"claim {VERDICT_WORDS[v]}")
            for v in ("pass", "fail", "inconclusive", None)
        ],
        loc="upper center",
        bbox_to_anchor=(0.5, -0.02),
        ncol=4,
        fontsize=7.5,
        frameon=False,
    )
    return fig
