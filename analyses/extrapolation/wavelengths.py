"""The wavelengths of the trained LMs' rotary pairs, against the training length.

A pair that turns at frequency omega repeats every 2 pi / omega positions. Within L_train a
pair whose wavelength is below L_train has shown the model every angle it will ever take; a
slower one has shown only an arc, so past L_train it turns to angles training never produced.
What a rotary variant changes about extrapolation shows here: p-RoPE stops its slowest pairs
(frequency 0, an infinite wavelength) and keeps the fastest share p; if every kept pair is
faster than L_train, p-RoPE meets no unseen angle at any length, and "it degrades less than
RoPE" holds by construction. The claim is only a test where some kept pair is slower.
"""

from __future__ import annotations

import math
from typing import Any

from posenc.encodings import build, lookup


def wavelength_rows(train_logs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per LM encoding that writes positions into waves (``waves``: a rotary encoding's pairs,
    or a sinusoidal table's), each pair's frequency and wavelength (inf for a pair that does
    not turn), built as the model was (its encoding settings and width); in pair order."""
    rows, seen = [], set()
    for log in train_logs:
        name = log["encoding"]
        if log["task"] != "lm" or name in seen:
            continue
        seen.add(name)
        spec = lookup(name)
        if not spec.waves:
            continue
        shape = log["model_config"]
        module = build(
            name,
            log.get("encoding_config") or {},
            d_model=shape["d_model"],
            n_heads=shape["n_heads"],
        )
        omega = module.frequencies().double().tolist()
        for pair, w in enumerate(omega):
            rows.append(
                {
                    "encoding": name,
                    "pair": pair,
                    "frequency": w,
                    "wavelength": 2 * math.pi / w if w > 0 else math.inf,
                }
            )
    return rows


def kept_wavelength_evidence(rows: list[dict[str, Any]], train_len: int) -> dict[str, Any]:
    """Per encoding: its slowest turning pair's wavelength, how many turning pairs are slower
    than L_train (the pairs that meet unseen angles past it), and whether any is."""
    out: dict[str, Any] = {
        "slowest_turning_wavelength": {},
        "pairs_slower_than_train": {},
        "meets_unseen_angles": {},
    }
    for name in dict.fromkeys(r["encoding"] for r in rows):
        turning = [r["wavelength"] for r in rows if r["encoding"] == name and r["frequency"] > 0]
        out["slowest_turning_wavelength"][name] = max(turning) if turning else None
        out["pairs_slower_than_train"][name] = sum(w > train_len for w in turning)
        out["meets_unseen_angles"][name] = out["pairs_slower_than_train"][name] > 0
    return out
