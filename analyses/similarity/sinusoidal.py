"""The sinusoidal formula's similarity against offset: the seed's values, the (d, base) sweep,
and the window of offsets where the fastest wave guarantees that the kernel falls."""

import itertools
import math

import torch
from torch import Tensor

from posenc.encodings import (
    PositionalEncoding,
    group_calls,
    inverse_frequencies,
    sinusoidal_table,
)

from .properties import concordance, monotone_range


def sinusoidal_profile(d: int, base: float, max_offset: int, device) -> tuple[Tensor, Tensor]:
    """cos(PE(0), PE(k)) and |PE(0) - PE(k)| / sqrt(d) for k = 0..max_offset, float64.
    By translation invariance (measured on the kernels) position 0 stands for any."""
    pe = sinusoidal_table(torch.arange(max_offset + 1, device=device), d, base, torch.float64)
    similarity = torch.nn.functional.cosine_similarity(pe[:1], pe, dim=-1)
    distance = (pe - pe[:1]).norm(dim=-1) / math.sqrt(d)
    return similarity, distance


def fastest_frequency(ladders: list[tuple[int, float]], modules: list[PositionalEncoding]) -> float:
    """omega_max over every frequency ladder (d, base) swept and every wave an encoding writes
    positions into (:meth:`PositionalEncoding.frequencies`, in each group of heads).
    omega_0 = base^0 = 1 on any geometric ladder, so in practice this is 1."""
    waves = [inverse_frequencies(d, base) for d, base in ladders]
    waves += [f for m in modules for g in group_calls(m) if (f := m.frequencies(*g)) is not None]
    return max(w.max().item() for w in waves)


def near_window(omega_max: float, half_periods: float) -> int:
    """Offsets within ``half_periods`` half periods of the fastest sinusoid, floor(h pi/omega_max).

    Every term cos(omega_i k) falls on k in [0, pi/omega_i], so within one half period of the
    fastest frequency the sum (the kernel) falls strictly: monotonicity is guaranteed there.
    """
    return math.floor(half_periods * math.pi / omega_max)


def reach(monotone: int, omega_max: float) -> float:
    """The first offset at which a profile does not fall (``monotone`` + 1; one past the end
    when it never rises), in half periods pi/omega_max of the fastest wave. A profile falls at
    every integer offset within h half periods exactly when this exceeds h."""
    return (monotone + 1) * omega_max / math.pi


def seed_values(sc: dict, device) -> tuple[Tensor, list[float]]:
    """The seed's table, as the seed builds it (float32, its positions and width), and the
    cosine similarity of its ``position`` with each of ``others``."""
    pe = sinusoidal_table(torch.arange(sc["n_positions"]), sc["d_model"], sc["base"]).to(device)
    values = [
        torch.nn.functional.cosine_similarity(pe[sc["position"]], pe[j], dim=0).item()
        for j in sc["others"]
    ]
    return pe.cpu(), values


def sweep(cfg: dict, offsets: list[int], device) -> tuple[list[dict], list[dict]]:
    """Sinusoidal profiles for every (d, base): tidy curve rows, and one summary row each."""
    profile_rows, rows = [], []
    for d, base in itertools.product(cfg["dims"], cfg["bases"]):
        similarity, distance = sinusoidal_profile(d, base, cfg["max_offset"], device)
        profile_rows += [
            {"d": d, "base": base, "offset": k, "similarity": s, "distance": dist}
            for k, (s, dist) in enumerate(zip(similarity.tolist(), distance.tolist()))
        ]
        rows.append(
            {
                "d": d,
                "base": base,
                "monotone_range": monotone_range(similarity[None, :]),
                "concordance": concordance(similarity[None, :], cfg["window"]),
                **{f"cos_at_{k}": similarity[k].item() for k in offsets},
            }
        )
    return profile_rows, rows
