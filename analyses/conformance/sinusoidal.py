"""Sinusoidal tables across libraries, against Vaswani et al.'s formula in float64 and against
ours, held to the RoPE comparison's per-element bound."""

from __future__ import annotations

from typing import Any

import torch

from posenc.analyses.conformance.libraries import Library
from posenc.analyses.conformance.reference import (
    EPS32,
    inverse_frequencies,
    missing,
    reference_table,
    to_half,
)


def sinusoidal_conformance(cfg: dict, libraries: tuple[Library, ...]) -> list[dict]:
    """Each library's sinusoidal table, in the interleaved layout, against Vaswani et al.'s
    formula in float64, held to angle_ulps·eps·p·ω_c + ulps·2·eps per element; and against
    ours, to twice that."""
    d, base, th = cfg["sinusoidal"]["d"], float(cfg["base"]), cfg["thresholds"]
    length = cfg["max_position"] + 1
    positions = torch.arange(length)
    reference = reference_table(length, d, base)
    p = positions.double()[:, None]
    tol = (
        th["rope_angle_ulps"] * EPS32 * p * inverse_frequencies(d, base)
        + th["rope_ulps"] * 2 * EPS32
    ).repeat_interleave(2, dim=-1)  # (L, d)
    tables, rows = {}, []
    for lib in libraries:
        if lib.sinusoidal is None:
            continue
        row: dict[str, Any] = {"library": lib.name, "status": "measured", "reason": None}
        try:
            table = lib.sinusoidal(positions, d, base)
        except ImportError as error:
            rows.append({**row, "status": "n/a", "reason": missing(error)})
            continue
        if lib.sinusoidal_layout == "concatenated":  # [sin_0 .. sin_{d/2-1} | cos_0 ..]
            table = table[..., torch.argsort(to_half(d))]
        tables[lib.name] = table
        row |= {
            "layout": lib.sinusoidal_layout,
            "max_abs_error": (table - reference).abs().max().item(),
            "error_over_bound": ((table - reference).abs() / tol).max().item(),
        }
        rows.append(row)
    ours = tables.get(libraries[0].name)
    for row in rows:
        measured = row["status"] == "measured" and ours is not None
        row["ours_over_bound"] = (
            ((tables[row["library"]] - ours).abs() / (2 * tol)).max().item() if measured else None
        )
    return rows
