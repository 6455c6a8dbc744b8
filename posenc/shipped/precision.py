"""Precision at the model's own context: the angles each path applies (float32 as
transformers computes them, and three ways of running in bfloat16) against float64 p·ω, and
the first position whose stored (cos, sin) row repeats an earlier one's."""

from __future__ import annotations

import math

import numpy as np
import torch

from posenc.distinct import distinct_rows_many
from posenc.numerics import error_positions

# The precision paths: how the angles (or the stored cos/sin) depart from float32.
PATHS = {
    "float32": "float32 angles, as transformers computes them",
    "module_bf16": "module cast to bfloat16 (inv_freq rounded)",
    "positions_bf16": "bfloat16 positions",
    "storage_bf16": "cos and sin stored in bfloat16",
}


def sample_positions(context: int, per_octave: int, seed: int) -> torch.Tensor:
    """Positions in every octave [2^e, 2^(e+1)) below the context: both ends and
    ``per_octave`` uniform draws (the aliasing section's sampling), plus 0 and context − 1.
    Shape (n,), int64, sorted."""
    generator = torch.Generator().manual_seed(seed)
    octaves = max(1, math.ceil(math.log2(context)))
    p = error_positions(octaves, per_octave, generator)
    p = torch.cat((torch.tensor([0, context - 1]), p[p < context]))
    return p.unique()


def path_angles(positions: torch.Tensor, inv_freq32: torch.Tensor, path: str) -> torch.Tensor:
    """The angles each path applies, in float64, from the module's float32 ``inv_freq``: the
    forward's own float32 product with the path's rounding. (n, pairs)."""
    if path == "module_bf16":
        inv_freq32 = inv_freq32.to(torch.bfloat16).float()
    p = positions.to(torch.bfloat16) if path == "positions_bf16" else positions
    theta = (p.float()[:, None] * inv_freq32[None, :]).double()
    if path == "storage_bf16":
        cos, sin = theta.float().cos(), theta.float().sin()
        cos, sin = cos.to(torch.bfloat16).double(), sin.to(torch.bfloat16).double()
        # The applied angle, read back; the wrap below takes it to the true angle's turn.
        theta = torch.atan2(sin, cos)
    return theta


def wrapped(delta: torch.Tensor) -> torch.Tensor:
    """|delta| reduced to [0, π]: an angle error is one modulo a full turn. Where delta is so
    large that float64 cannot place it within a turn (its spacing past 2π), the reduction
    could land past π: clamped there, since such an angle may be any angle."""
    return (delta - 2 * math.pi * torch.round(delta / (2 * math.pi))).abs().clamp(max=math.pi)


def precision_rows(
    positions: torch.Tensor, inv_freq32: np.ndarray, omega64: np.ndarray, seed: int
) -> dict[str, list[dict]]:
    """Per path, per sampled position: the largest angle error against float64 p·ω, and the
    largest error of a relative angle θ(p) − θ(q) with q drawn uniformly in [0, p]. The float32
    path also splits its error into the product's rounding (against p times the module's own
    inv_freq in float64) and the inv_freq's (p times its distance from the formula)."""
    w32 = torch.tensor(inv_freq32, dtype=torch.float32)
    w64 = torch.tensor(omega64, dtype=torch.float64)
    generator = torch.Generator().manual_seed(seed)
    q = torch.rand(positions.shape, generator=generator, dtype=torch.float64) * (positions + 1)
    q = q.floor().long().clamp(max=positions)
    truth_p = positions.double()[:, None] * w64
    truth_q = q.double()[:, None] * w64
    out = {}
    for path in PATHS:
        got_p, got_q = path_angles(positions, w32, path), path_angles(q, w32, path)
        error = wrapped(got_p - truth_p).amax(-1)
        relative = wrapped((got_p - got_q) - (truth_p - truth_q)).amax(-1)
        rows = []
        for i, p in enumerate(positions.tolist()):
            rows.append(
                {
                    "position": p,
                    "max_angle_error": error[i].item(),
                    "relative_error": relative[i].item(),
                    "q": q[i].item(),
                }
            )
        if path == "float32":
            exact_product = positions.double()[:, None] * w32.double()
            product = wrapped(got_p - exact_product).amax(-1)
            drift = positions.double()[:, None] * (w32.double() - w64).abs()
            # Unwrapped: how far the angle has drifted, in turns it may have gone round; the
            # wrapped value is what the model sees.
            inv, inv_wrapped = drift.amax(-1), wrapped(drift).amax(-1)
            for i, row in enumerate(rows):
                row["product_part"] = product[i].item()
                row["inv_freq_part"] = inv[i].item()
                row["inv_freq_part_wrapped"] = inv_wrapped[i].item()
        out[path] = rows
    return out


def first_past(rows: list[dict], threshold: float) -> int | None:
    return next((r["position"] for r in rows if r["max_angle_error"] > threshold), None)


def stored_rows(path: str, inv_freq32: torch.Tensor):
    """The row each path stores for a position: (cos θ, sin θ) in its dtype. (c, 2·pairs)."""

    def rows(index: torch.Tensor) -> torch.Tensor:
        theta = path_angles(index, inv_freq32, "float32" if path == "storage_bf16" else path)
        cs = torch.cat((theta.float().cos(), theta.float().sin()), -1)
        return cs.to(torch.bfloat16) if path == "storage_bf16" else cs

    return rows


def distinguishability(
    inv_freq32: np.ndarray, context: int, exact_max: int, sampled: torch.Tensor, window: int
) -> dict[str, dict]:
    """Per path, the first position whose stored (cos, sin) row equals an earlier one's: exact
    up to min(context, exact_max) (the aliasing section's chunked hash scan, O(L·d) time and
    memory bounded by its chunks); beyond, at the sampled positions, each against the
    ``window`` positions before it, and stated as sampled."""
    w32 = torch.tensor(inv_freq32, dtype=torch.float32)
    n = min(context, exact_max)
    fns = [stored_rows(path, w32) for path in PATHS]
    scans = distinct_rows_many(lambda idx: [f(idx) for f in fns], len(fns), n)
    out = {}
    for path, fn, scan in zip(PATHS, fns, scans):
        entry = {
            "exact_up_to": n,
            "first_repeat": scan.first_repeat if scan.first_repeat >= 0 else None,
            "first_repeat_of": scan.first_repeat_of if scan.first_repeat >= 0 else None,
            "distinct_fraction": scan.n_distinct / n,
            "sampled_beyond": None,
            "sampled_first_repeat": None,
        }
        beyond = sampled[sampled >= n]
        if entry["first_repeat"] is None and beyond.numel():
            entry["sampled_beyond"] = int(beyond.numel())
            index = (beyond[:, None] - torch.arange(window, -1, -1)).clamp(min=0)  # (m, w + 1)
            rows = fn(index.reshape(-1)).reshape(*index.shape, -1)
            hit = (rows[:, :-1] == rows[:, -1:]).all(-1).any(-1)  # (m,)
            if bool(hit.any()):
                entry["sampled_first_repeat"] = int(beyond[hit.nonzero()[0, 0]])
        out[path] = entry
    return out
