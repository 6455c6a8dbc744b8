"""Engines on configs: every model's request to each engine in one run of its interpreter, and
per model the ``engines`` object ``posenc model`` writes and the shipped section tabulates."""

from __future__ import annotations

from typing import Any

from posenc.engines import ENGINES, run
from posenc.engines.compare import request, rows
from posenc.shipped.frequencies import layer_types
from posenc.shipped.precision import sample_positions
from posenc.shipped.reading import build_config


def engine_checks(
    models: list[tuple[dict, str, int | None]], engines: list[str], settings: dict, thresholds
) -> dict[str, dict[str, Any]]:
    """``{model: {engine: {...}}}`` for ``models`` as (config.json dict, name, context), with
    ``settings`` the shipped section's (per_octave, seed) and ``thresholds`` its agree_ulps and
    angle_rad. Models without rotary layers, or without a context, get no engine block."""
    prepared, requests = [], []
    for entry, name, context in models:
        config = build_config(entry, name)
        lts, _, _ = layer_types(config, name)
        if not lts or not context:
            continue
        positions = sample_positions(context, settings["per_octave"], settings["seed"]).tolist()
        prepared.append((entry, name, context, config, lts, positions))
        requests.append(request(name, entry, lts, context, positions))
    out: dict[str, dict[str, Any]] = {name: {} for _, name, *_ in prepared}
    if not requests:
        return out
    for engine in engines:
        answer = run(engine, requests)
        for _, name, context, config, lts, positions in prepared:
            found = rows(engine, answer, name, config, lts, context, positions, thresholds)
            out[name][engine] = summary(engine, answer, found)
    return out


def summary(engine: str, answer: dict, found: list[dict]) -> dict[str, Any]:
    """One engine's block for one model: version, what it could express, its differences."""
    statuses = {r["status"] for r in found}
    expressed = [r.get("layer_type") for r in found if r["status"] == "ok"]
    return {
        "title": ENGINES[engine].title,
        "version": answer.get("version"),
        "torch": answer.get("torch"),
        "status": "ok" if statuses == {"ok"} else sorted(statuses - {"ok"})[0],
        "expressed": expressed,
        "reasons": sorted({r["reason"] for r in found if r.get("reason")}),
        "agrees": _all(r.get("agrees") for r in found),
        "differences": [
            {
                "layer_type": r.get("layer_type"),
                "what": d,
                "confirmed": r["confirmed"],
                "source": r.get("source"),
            }
            for r in found
            for d in r.get("differences") or []
        ],
        "rows": found,
    }


def _all(values) -> bool | None:
    """True when every value is True, False when any is False, None when none decided."""
    values = [v for v in values if v is not None]
    if not values:
        return None
    return all(values)
