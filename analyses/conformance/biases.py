"""The score biases across libraries: ALiBi slopes against the paper's published get_slopes
(Press et al. 2022), T5 buckets against the Mesh TensorFlow formula (Raffel et al. 2020)."""

from __future__ import annotations

from typing import Any

import torch

from posenc.analyses.conformance.libraries import Library, paper_alibi_slopes, paper_t5_bucket
from posenc.analyses.conformance.reference import EPS32, EPS64, missing


def alibi_conformance(cfg: dict, libraries: tuple[Library, ...]) -> list[dict]:
    """Slopes for H = 1 .. max_heads against Press et al.'s get_slopes, in ulps of float64
    (ours) or float32 (a library's float32 buffer: its rounding alone is half an ulp)."""
    rows = []
    for lib in libraries:
        if lib.alibi is None:
            continue
        for h in range(1, cfg["alibi_max_heads"] + 1):
            row: dict[str, Any] = {
                "library": lib.name,
                "heads": h,
                "power_of_two": h & (h - 1) == 0,
            }
            try:
                got = lib.alibi(h)
            except ImportError as error:
                rows.append({**row, "status": "n/a", "reason": missing(error), "max_ulps": None})
                break  # one row says it: the library is missing
            want = paper_alibi_slopes(h)
            eps = EPS64 if lib.distribution is None else EPS32
            rel = max(abs(g - w) / w for g, w in zip(got, want, strict=True))
            rows.append({**row, "status": "measured", "reason": None, "max_ulps": rel / eps})
    return rows


def t5_conformance(cfg: dict, libraries: tuple[Library, ...]) -> list[dict]:
    """Buckets of key − query over −max_relative .. max_relative against Raffel et al.'s
    formula in float64, both directions, per (num_buckets, max_distance); and against ours."""
    span = cfg["t5"]["max_relative"]
    rel = torch.arange(-span, span + 1)
    rows = []
    for num_buckets, max_distance in cfg["t5"]["cases"]:
        for bidirectional in (True, False):
            want = torch.tensor(
                [paper_t5_bucket(r, bidirectional, num_buckets, max_distance) for r in rel.tolist()]
            )
            ours = None
            for lib in libraries:
                if lib.t5 is None:
                    continue
                row: dict[str, Any] = {
                    "library": lib.name,
                    "num_buckets": num_buckets,
                    "max_distance": max_distance,
                    "direction": "bidirectional" if bidirectional else "causal",
                }
                try:
                    got = lib.t5(rel, bidirectional, num_buckets, max_distance).long()
                except ImportError as error:
                    rows.append({**row, "status": "n/a", "reason": missing(error)})
                    continue
                ours = got if ours is None else ours
                wrong = rel[got != want].tolist()
                rows.append(
                    {
                        **row,
                        "status": "measured",
                        "reason": None,
                        "mismatches": len(wrong),
                        "first_mismatch": wrong[0] if wrong else None,
                        "ours_mismatches": int((got != ours).sum()),
                    }
                )
    return rows
