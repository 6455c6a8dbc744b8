"""The article's worked example (Vaswani et al. 2017, d = 4), traced by hand and exactly."""

from typing import Any

import torch

from posenc.encodings import inverse_frequencies, sinusoidal_table
from posenc.numerics import apply_rotation_blocks, rotation_blocks


def hand_trace(cfg: dict) -> dict[str, Any]:
    """The article's d = 4 example: PE(0..3), and PE(1) rotated by R(1) against PE(2).

    The article's own formula (Vaswani et al.'s table), three ways: the float64 table; exact
    rotation R(k) PE(p) in float64; and the article's arithmetic, which rounds PE(p) and
    cos/sin(ω_i k) to ``decimals`` before multiplying (it uses cos 1 = 0.540, sin 1 = 0.841).
    """
    d, base, k, p0 = cfg["d"], cfg["base"], cfg["offset"], cfg["from_position"]
    decimals = cfg["decimals"]
    positions = torch.arange(cfg["n_positions"])
    table = sinusoidal_table(positions, d, base, torch.float64)  # (n, d)
    omega = inverse_frequencies(d, base).tolist()
    blocks = rotation_blocks(torch.tensor([k]), d, base)[0]  # (d/2, 2, 2)
    exact = apply_rotation_blocks(table[p0], blocks)
    rounded_pe = table[p0].round(decimals=decimals)
    rounded_blocks = blocks.round(decimals=decimals)
    by_hand = apply_rotation_blocks(rounded_pe, rounded_blocks)
    article_target = torch.tensor(cfg["article_target"], dtype=torch.float64)
    return {
        "d": d,
        "base": base,
        "omega": omega,
        "positions": positions.tolist(),
        "table": table.tolist(),
        "offset": k,
        "from_position": p0,
        "target": table[p0 + k].tolist(),
        "rotated_exact": exact.tolist(),
        "rotated_by_hand": by_hand.tolist(),
        "cos_sin_first_pair": [blocks[0, 0, 0].item(), blocks[0, 0, 1].item()],
        "exact_error": (exact - table[p0 + k]).abs().max().item(),
        "by_hand_error": (by_hand - table[p0 + k]).abs().max().item(),
        "article_target": cfg["article_target"],
        "article_cos_sin": cfg["article_cos_sin"],
        "article_error": (article_target - table[p0 + k]).abs().max().item(),
        "article_cos_sin_error": max(
            abs(cfg["article_cos_sin"][0] - blocks[0, 0, 0].item()),
            abs(cfg["article_cos_sin"][1] - blocks[0, 0, 1].item()),
        ),
    }


def printed_rounding(decimals: int) -> float:
    """How far a value printed to ``decimals`` may be from the true one: half a unit of its
    last place, u = 0.5·10^−decimals. Each by-hand output a·c + b·s multiplies four such
    inputs of size ≤ 1, so it is off by at most 4u (to first order)."""
    return 0.5 * 10.0**-decimals
