"""The sections' results as the report shows them: each section's metrics (its figures and
tables, checked against the section contract and numbered in report order), its claims merged
into one ledger, the report card, and the files offered for download beside the page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from posenc.claims import check_ledger
from posenc.report.errors import ReportError, read_result
from posenc.report.filters import slug

# Where downloads live, relative to the report's folder: the page links them relatively, so
# results/report/ can be published (GitHub Pages) or zipped on its own and the links still work.
FILES = "files"


def _require(entry: Any, keys: tuple[str, ...], kind: str, index: int, origin: str) -> None:
    if not isinstance(entry, dict):
        raise ReportError(f"{origin}: {kind} {index} is not an object")
    missing = [k for k in keys if k not in entry]
    if missing:
        name = entry.get("id", index)
        raise ReportError(f"{origin}: {kind} {name!r} lacks {', '.join(missing)}")


def check_metrics(metrics: Any, origin: str) -> dict:
    """The section contract (CONTRIBUTING.md): figures and tables well formed, files present."""
    if not isinstance(metrics, dict):
        raise ReportError(f"{origin}: metrics must be a JSON object, got {type(metrics).__name__}")
    for kind, keys, files in (
        ("figure", ("id", "png", "caption"), ("png", "svg")),
        ("table", ("id", "title", "csv", "columns", "rows"), ("csv",)),
    ):
        entries = metrics.get(f"{kind}s", [])
        if not isinstance(entries, list):
            raise ReportError(f"{origin}: '{kind}s' must be a list")
        seen = set()
        for i, entry in enumerate(entries):
            _require(entry, keys, kind, i, origin)
            if entry["id"] in seen:
                raise ReportError(f"{origin}: {kind} id {entry['id']!r} appears twice")
            seen.add(entry["id"])
            for key in files:
                if entry.get(key) is not None and not Path(entry[key]).is_file():
                    raise ReportError(
                        f"{origin}: {kind} {entry['id']!r} names {key} {entry[key]}, "
                        "which does not exist"
                    )
            if kind == "table":
                width = len(entry["columns"])
                for r, row in enumerate(entry["rows"]):
                    if not isinstance(row, list) or len(row) != width:
                        raise ReportError(
                            f"{origin}: table {entry['id']!r} row {r} does not have "
                            f"{width} cells like its columns"
                        )
    return metrics


def _downloads(sec_id: str, sources: dict[str, str | None]) -> dict[str, dict[str, str]]:
    """Where each of a figure's or table's files is offered, relative to the report folder."""
    return {
        label: {"source": str(src), "href": f"{FILES}/{slug(sec_id)}/{Path(src).name}"}
        for label, src in sources.items()
        if src is not None
    }


def _placement(item_id: str, in_appendix) -> str:
    return "appendix" if item_id in in_appendix else "body"


def load_sections(sections: list[dict[str, Any]]) -> tuple[list[dict], list[dict]]:
    """Read each section's metrics and claims; number figures and tables in the order of the
    metrics (:func:`posenc.report.render.number_in_reading_order` renumbers them in the order
    the page shows them). Each of ``sections`` names its files (``metrics``, ``claims``,
    optionally ``timing``) and may carry the ``constants`` its template quotes and the ids of
    the figures and tables it places in the appendix (``appendix``).

    Returns the sections (JSON-serialisable: the context both media render) and the merged
    ledger in section order. A malformed file is a :class:`ReportError` naming it.
    """
    loaded, ledger = [], []
    claim_origin: dict[str, str] = {}
    fig_no = table_no = 0
    for number, sec in enumerate(sections, start=1):
        sid = sec["id"]
        metrics = check_metrics(read_result(sec["metrics"], "metrics"), sec["metrics"])
        if sec.get("timing"):
            # Timings live in a file of their own so that metrics.json is byte-identical
            # between runs; their tables and figures are shown in the section all the same.
            timing = check_metrics(read_result(sec["timing"], "timing"), sec["timing"])
            metrics = {
                **metrics,
                "figures": metrics.get("figures", []) + timing.get("figures", []),
                "tables": metrics.get("tables", []) + timing.get("tables", []),
            }
        claims = check_ledger(read_result(sec["claims"], "claims"), origin=sec["claims"])
        figures, tables = {}, {}
        appendix = sec.get("appendix") or {}
        for fig in metrics.get("figures", []):
            fig_no += 1
            figures[fig["id"]] = {
                **fig,
                "number": fig_no,
                "anchor": f"fig-{slug(sid)}-{slug(fig['id'])}",
                "placement": _placement(fig["id"], appendix.get("figures", ())),
                "downloads": _downloads(sid, {"PNG": fig["png"], "SVG": fig.get("svg")}),
            }
        for tab in metrics.get("tables", []):
            table_no += 1
            tables[tab["id"]] = {
                **tab,
                "number": table_no,
                "anchor": f"tab-{slug(sid)}-{slug(tab['id'])}",
                "placement": _placement(tab["id"], appendix.get("tables", ())),
                "downloads": _downloads(sid, {"CSV": tab["csv"]}),
            }
        for c in claims:
            if c["id"] in claim_origin:
                raise ReportError(
                    f"{sec['claims']}: claim id {c['id']!r} is also in {claim_origin[c['id']]}"
                )
            claim_origin[c["id"]] = sec["claims"]
        ledger += claims
        loaded.append(
            {
                "id": sid,
                "devices": section_devices(metrics),
                "number": number,
                "anchor": f"sec-{slug(sid)}",
                "m": metrics,
                "figures": figures,
                "tables": tables,
                "constants": sec.get("constants", {}),
            }
        )
    # A claim links to the section that shows its evidence: that section must be in the report.
    anchors = {s["id"]: s for s in loaded}
    for c in ledger:
        if c["section"] not in anchors:
            raise ReportError(
                f"{claim_origin[c['id']]}: claim {c['id']!r} names section {c['section']!r}, "
                f"which is not in the report ({', '.join(anchors) or 'no sections'})"
            )
    for s in loaded:
        s["claims"] = [c for c in ledger if c["section"] == s["id"]]
    return loaded, ledger


def section_devices(metrics: dict) -> list[str]:
    """Every device a section's results were computed on: its own job's, and those its
    summary lists for the jobs before it (training and evaluation on a GPU, say, while the
    aggregate ran on the CPU)."""
    found = [metrics["device"]] if metrics.get("device") else []
    listed = metrics.get("summary", {}).get("devices")
    if isinstance(listed, list):
        found += listed
    return sorted({str(d) for d in found})


def check_download_names(loaded: list[dict]) -> None:
    """Two files offered under one name would overwrite each other in the files folder."""
    sources: dict[str, str] = {}
    for sec in loaded:
        for item in [*sec["figures"].values(), *sec["tables"].values()]:
            for d in item["downloads"].values():
                if sources.setdefault(d["href"], d["source"]) != d["source"]:
                    raise ReportError(
                        f"section {sec['id']}: {d['source']} and {sources[d['href']]} would "
                        f"both be offered as {d['href']}; give them different file names"
                    )


def load_card(path: str | Path, sections: dict[str, dict]) -> dict[str, Any]:
    """The report card (:mod:`posenc.card`), its figure offered like a section's and each
    column linked to the section that measured it. ``properties`` holds the same cells a
    property to a row, as the figure draws them (the card's ``rows`` are its encodings)."""
    data = read_result(path, "card")
    for key in ("columns", "rows", "png", "legend", "caption"):
        if key not in data:
            raise ReportError(f"{path}: the card lacks {key!r}")
    for column in data["columns"]:
        column["section_anchor"] = sections[column["section"]]["anchor"]
    data["properties"] = [
        {**column, "cells": [row["cells"][i] for row in data["rows"]]}
        for i, column in enumerate(data["columns"])
    ]
    data["has_plugins"] = any(row["plugin"] for row in data["rows"])
    data["size"] = {"properties": len(data["columns"]), "encodings": len(data["rows"])}
    data["figure"] = {
        "png": data["png"],
        "anchor": "fig-card",
        "downloads": _downloads("card", {"PNG": data["png"], "SVG": data.get("svg")}),
    }
    return data
