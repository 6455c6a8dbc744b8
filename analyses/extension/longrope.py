"""LongRoPE's rescale factors for the study's models, from a published profile.

LongRoPE (Ding et al. 2024) finds one factor per frequency pair by an evolutionary search on
the model being extended; that search cannot run at this scale. Instead the section takes the
long factors a shipped model publishes (by default Phi-3-mini-128k's, 48 pairs, extending
4096 to 131072: 32x) and rescales them to the study's pairs and scales:

* **to our pair count**, by frequency: our pair i of d/2 turns at base^(-2i/d); it takes the
  published factor of the pair at the same exponent 2i/d, interpolating ln(factor) linearly
  between the published pairs. With both bases 10 000 (Phi-3's and the study's), that is the
  published pair with the same frequency.
* **to our scale** s, by a power: factor^(ln s / ln S), S the published extension (32), so at
  s = S the published factors return, at s = 1 all are 1, and the profile's shape (which pairs
  are interpolated more) is kept on a log scale.

The short factors (used up to L_train) are all 1: the study's models were trained with plain
RoPE there, while Phi-3's short factors belong to its own fine-tuning. The attention factor is
LongRoPE's default, sqrt(1 + ln s / ln L_train) (``posenc.rope_scaling``). The result is
labelled in the report as a published profile transplanted, not a searched one.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import posenc

ZOO = Path(posenc.__file__).resolve().parent / "zoo"  # the shipped-configs section's zoo


def published_profile(name: str) -> dict[str, Any]:
    """The long factors of the zoo model ``name`` (its ``rope_scaling`` of type longrope),
    with what places them: its rotated width, base and extension S (read at parse time: the
    values travel in the rule's settings, so editing the zoo file re-evaluates)."""
    path = ZOO / f"{name}.json"
    if not path.is_file():
        raise ValueError(f"no zoo model {name!r} (looked for {path})")
    cfg = json.loads(path.read_text())
    scaling = cfg.get("rope_scaling") or cfg.get("rope_parameters") or {}
    if scaling.get("type", scaling.get("rope_type")) != "longrope":
        raise ValueError(f"zoo model {name!r} ships no longrope rope_scaling")
    head = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    width = int(head * cfg.get("partial_rotary_factor", 1.0))
    original = cfg["original_max_position_embeddings"]
    factors = [float(f) for f in scaling["long_factor"]]
    if len(factors) != width // 2:
        raise ValueError(f"zoo model {name!r}: {len(factors)} long factors for {width // 2} pairs")
    return {
        "model": name,
        "long_factor": factors,
        "rotated_width": width,
        "base": float(cfg["rope_theta"]),
        "scale": cfg["max_position_embeddings"] / original,
    }


def placed_factors(profile: dict[str, Any], rotated_width: int, base: float, scale: float):
    """Long factors for a RoPE of ``rotated_width`` and ``base`` extended ``scale`` times:
    the published profile read at each pair's frequency and raised to ln s / ln S."""
    if scale <= 1:
        return [1.0] * (rotated_width // 2)
    published = profile["long_factor"]
    # Each published pair's exponent on a common scale: ln(1 / theta_i) = (2i/d) ln base.
    width, log_base = profile["rotated_width"], math.log(profile["base"])
    at = [2 * i / width * log_base for i in range(len(published))]
    logs = [math.log(f) for f in published]
    power = math.log(scale) / math.log(profile["scale"])
    out = []
    for i in range(rotated_width // 2):
        x = 2 * i / rotated_width * math.log(base)
        out.append(math.exp(power * _interpolate(x, at, logs)))
    return out


def _interpolate(x: float, xs: list[float], ys: list[float]) -> float:
    """Piecewise-linear y(x) through increasing ``xs``, held at the ends."""
    if x <= xs[0]:
        return ys[0]
    for (x0, y0), (x1, y1) in zip(zip(xs, ys), zip(xs[1:], ys[1:]), strict=False):
        if x <= x1:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return ys[-1]


def longrope_params(profile: dict[str, Any], rotated_width: int, base: float, scale: float):
    """``posenc.rope_scaling.scaled_rope("longrope", ...)``'s params for the study's model at
    ``scale``: short factors 1, long factors placed from the profile."""
    return {
        "short_factor": [1.0] * (rotated_width // 2),
        "long_factor": placed_factors(profile, rotated_width, base, scale),
    }
