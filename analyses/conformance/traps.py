"""Precision traps: the angle each RoPE actually applied, recovered from its output (unit
vectors rotated, atan2 per pair in float64, wrapped to (−π, π]) against p·ω_c in float64,
along a float32 path and four ways of running it in bfloat16."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import torch
from torch import Tensor

from posenc.analyses.conformance.libraries import Library
from posenc.analyses.conformance.reference import (
    from_layout,
    missing,
    reference_angles,
    to_layout,
    wrap,
)

TRAPS = ("bf16_inputs", "module_cast", "autocast", "cached_angles")
PATHS = ("float32", *TRAPS)  # the float32 path is the baseline every trap departs from
CURVE_BINS = 64  # log-spaced position bins of the trap figure (the largest error in each)


def unit_probe(length: int, d: int, layout: str, dtype: torch.dtype) -> Tensor:
    """(1, 1, L, d): 1 in the first coordinate of every pair, 0 in its partner, so pair c of
    the rotated probe is (cos θ_c, sin θ_c) exactly as the library stored them."""
    probe = torch.zeros(d, dtype=torch.float64)
    probe[0::2] = 1.0
    return to_layout(probe, layout).to(dtype)[None, None, None, :].expand(1, 1, length, d)


def applied_angles(rotated: Tensor, layout: str) -> Tensor:
    """The angle each pair was turned by, read off the rotated unit probe in float64. (L, d/2)."""
    out = from_layout(rotated[0, 0].double(), layout)
    return torch.atan2(out[..., 1::2], out[..., 0::2])


def run_path(make: Callable[[], Any], path: str, length: int, d: int) -> Tensor:
    """The angles a freshly built RoPE applies along ``path`` to positions 0..L−1:

    * ``float32``: float32 inputs, float32 module (the baseline);
    * ``bf16_inputs``: bfloat16 queries and keys, the module as built;
    * ``module_cast``: the module cast with ``.to(torch.bfloat16)``, float32 inputs (so the
      cast alone is measured);
    * ``autocast``: float32 inputs and module under CPU bfloat16 autocast;
    * ``cached_angles``: one bfloat16 call, then the float32 call measured, on one module.
    """
    rope = make()
    probe32 = unit_probe(length, d, rope.layout, torch.float32)
    probe16 = unit_probe(length, d, rope.layout, torch.bfloat16)
    with torch.no_grad():
        if path == "float32":
            out, _ = rope.rotate(probe32, probe32)
        elif path == "bf16_inputs":
            out, _ = rope.rotate(probe16, probe16)
        elif path == "module_cast":
            rope.module.to(torch.bfloat16)
            out, _ = rope.rotate(probe32, probe32)
        elif path == "autocast":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                out, _ = rope.rotate(probe32, probe32)
        elif path == "cached_angles":
            rope.rotate(probe16, probe16)
            out, _ = rope.rotate(probe32, probe32)
        else:
            raise ValueError(f"unknown path {path!r}; paths are {', '.join(PATHS)}")
    return applied_angles(out, rope.layout)


def log_bins(length: int) -> list[tuple[int, int]]:
    """[start, end) position bins, log-spaced from 1 to ``length``, none empty."""
    edges = sorted({round(length ** (i / CURVE_BINS)) for i in range(CURVE_BINS + 1)} | {1, length})
    return list(zip(edges[:-1], edges[1:]))


def trap_measurements(cfg: dict, libraries: tuple[Library, ...]) -> tuple[list, list]:
    """Largest angle error and the first position past the threshold per library and path
    (rows), and the error curve in log bins (curve rows)."""
    d, base = cfg["head_dim"], float(cfg["base"])
    length = cfg["max_position"] + 1
    threshold = cfg["thresholds"]["trap_angle_rad"]
    exact = reference_angles(length, d, base)
    expected = cfg["expected"]
    rows, curve = [], []
    for lib in libraries:
        if lib.rope is None:
            continue
        for path in PATHS:
            row: dict[str, Any] = {
                "library": lib.name,
                "path": path,
                "expected": expected.get(lib.name, {}).get(path) if path in TRAPS else None,
            }
            try:
                applied = run_path(partial(lib.rope, d, base, length), path, length, d)
            except ImportError as error:
                rows.append({**row, "status": "n/a", "reason": missing(error)})
                continue
            error = wrap(applied - exact).abs().amax(-1)  # (L,): the worst pair per position
            over = (error > threshold).nonzero().flatten()
            lossy = bool(over.numel())
            rows.append(
                {
                    **row,
                    "status": "measured",
                    "reason": None,
                    "max_angle_error": error.max().item(),
                    "at_position": int(error.argmax()),
                    "first_over_threshold": int(over[0]) if lossy else None,
                    "measured": "lossy" if lossy else "exact",
                    "as_expected": None
                    if row["expected"] is None
                    else row["expected"] == ("lossy" if lossy else "exact"),
                }
            )
            for start, end in log_bins(length):
                curve.append(
                    {
                        "library": lib.name,
                        "path": path,
                        "position": end - 1,
                        "max_angle_error": error[start:end].max().item(),
                    }
                )
    return rows, curve
