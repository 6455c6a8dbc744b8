"""RoPE across libraries: each library's rotated queries and keys, their scores and the
scores' change under a shift, against the float64 rotation (Su et al. 2021) and against ours,
each held to its rounding bound."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from posenc.analyses.conformance.libraries import Library
from posenc.analyses.conformance.reference import (
    EPS32,
    EPS64,
    from_layout,
    inverse_frequencies,
    missing,
    pair_norms,
    reference_angles,
    reference_rotation,
    to_layout,
)


def rope_rotations(
    lib: Library, q: Tensor, k: Tensor, head_dim: int, base: float
) -> tuple[Tensor, Tensor, str]:
    """``lib``'s float32 rotation of the interleaved ``q``, ``k`` (n, 1, L, d) at positions
    0..L−1, brought back to the interleaved layout, float64; and the layout it rotates in."""
    rope = lib.rope(head_dim, base, q.shape[-2])
    with torch.no_grad():
        rq, rk = rope.rotate(to_layout(q, rope.layout), to_layout(k, rope.layout))
    back = from_layout(rq, rope.layout).double(), from_layout(rk, rope.layout).double()
    return *back, rope.layout


def rotation_tolerance(x: Tensor, omega: Tensor, thresholds: dict, eps: float) -> Tensor:
    """The bound on each element of the rotated ``x`` (n, 1, L, d), per pair and position:
    ‖x_c‖ (angle_ulps·eps·p·ω_c + ulps·2·eps) (float32 storage and angles). Shape of x."""
    length = x.shape[-2]
    p = torch.arange(length, dtype=torch.float64)[:, None]  # (L, 1)
    per_pair = thresholds["rope_angle_ulps"] * eps * p * omega + thresholds["rope_ulps"] * 2 * eps
    tol = pair_norms(x) * per_pair  # (n, 1, L, d/2)
    return tol.repeat_interleave(2, dim=-1)


def score_tolerance(
    q: Tensor, k: Tensor, omega: Tensor, angle_sum: Tensor, storage: float, thresholds: dict
) -> Tensor:
    """The bound on a score error, Σ_c ‖q_c‖‖k_c‖ (angle_ulps·eps·ω_c·Σp + storage·ulps·2·eps)
    + d·eps64·‖q‖‖k‖, with Σp (m,) the positions whose angles enter (two per score) and
    ``storage`` the rotated vectors involved. q, k (n, d); returns (n, m)."""
    w = pair_norms(q) * pair_norms(k)  # (n, d/2)
    per_pair = (
        thresholds["rope_angle_ulps"] * EPS32 * angle_sum[:, None] * omega[None, :]
        + storage * thresholds["rope_ulps"] * 2 * EPS32
    )  # (m, d/2)
    norms = (q.double().norm(dim=-1) * k.double().norm(dim=-1))[:, None]
    return w @ per_pair.T + q.shape[-1] * EPS64 * norms


def scores(rq: Tensor, rk: Tensor, pq: Tensor, pk: Tensor) -> Tensor:
    """⟨R(pq_j) q_i, R(pk_j) k_i⟩ from rotated (n, 1, L, d), float64 products. (n, m)."""
    return (rq[:, 0, pq, :] * rk[:, 0, pk, :]).sum(-1)


def rope_conformance(cfg: dict, libraries: tuple[Library, ...], generator: torch.Generator):
    """Rotated q and k, scores and shifted scores of every RoPE library against the float64
    reference and against ours; rows per library (n/a with the reason where missing)."""
    d, base, th = cfg["head_dim"], float(cfg["base"]), cfg["thresholds"]
    length = cfg["max_position"] + 1
    n = cfg["n_vectors"]
    q64 = torch.randn(n, d, generator=generator, dtype=torch.float64)
    k64 = torch.randn(n, d, generator=generator, dtype=torch.float64)
    widest = max(cfg["shifts"])
    pq = torch.randint(0, length - widest, (cfg["n_pairs"],), generator=generator)
    pk = torch.randint(0, length - widest, (cfg["n_pairs"],), generator=generator)
    # The float32 inputs, the same vector at every position: (n, 1, L, d).
    q = q64.float()[:, None, None, :].expand(n, 1, length, d).contiguous()
    k = k64.float()[:, None, None, :].expand(n, 1, length, d).contiguous()
    omega = inverse_frequencies(d, base)
    theta = reference_angles(length, d, base)
    ref_q, ref_k = reference_rotation(q, theta), reference_rotation(k, theta)
    tol_q = rotation_tolerance(q, omega, th, EPS32)
    tol_k = rotation_tolerance(k, omega, th, EPS32)
    ref_scores = scores(ref_q, ref_k, pq, pk)
    score_tol = score_tolerance(q64.float(), k64.float(), omega, (pq + pk).double(), 2, th)
    rotated: dict[str, tuple[Tensor, Tensor]] = {}
    rows = []
    for lib in libraries:
        if lib.rope is None:
            continue
        row: dict[str, Any] = {"library": lib.name, "status": "measured", "reason": None}
        try:
            rq, rk, layout = rope_rotations(lib, q, k, d, base)
        except ImportError as error:
            rows.append({**row, "status": "n/a", "reason": missing(error)})
            continue
        rotated[lib.name] = (rq, rk)
        err = torch.maximum((rq - ref_q).abs() / tol_q, (rk - ref_k).abs() / tol_k)
        s = scores(rq, rk, pq, pk)
        row |= {
            "layout": layout,
            "max_abs_error": max((rq - ref_q).abs().max().item(), (rk - ref_k).abs().max().item()),
            "error_over_bound": err.max().item(),
            "score_error": (s - ref_scores).abs().max().item(),
            "score_over_bound": ((s - ref_scores).abs() / score_tol).max().item(),
        }
        for t in cfg["shifts"]:
            moved = scores(rq, rk, pq + t, pk + t)
            angle_sum = (2 * (pq + pk) + 2 * t).double()
            tol = score_tolerance(q64.float(), k64.float(), omega, angle_sum, 4, th)
            row[f"shift_{t}_over_bound"] = ((moved - s).abs() / tol).max().item()
        rows.append(row)
    # Ours against each library: each within its bound of the reference, so within twice it
    # of one another.
    ours = rotated.get(libraries[0].name)
    for row in rows:
        if row["status"] != "measured" or ours is None:
            row["ours_over_bound"] = None
            continue
        rq, rk = rotated[row["library"]]
        gap = torch.maximum((rq - ours[0]).abs() / tol_q, (rk - ours[1]).abs() / tol_k)
        row["ours_over_bound"] = (gap / 2).max().item()
    return rows
