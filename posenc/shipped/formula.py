"""RoPE frequencies of a shipped config straight from the papers, in float64, one pair at a time:
the reference the shipped section holds transformers and ``posenc.rope_scaling`` against, and the
truth of its precision scan. A second transcription, kept apart from ``posenc.rope_scaling`` on
purpose (plain loops, no shared helper), so that an error in either shows as a disagreement.
Torch-free.

ω_i = base^(−2i/d) for pair i of the rotated width d (Su et al. 2021), then per rope type:

* ``linear``   ω_i / s (Chen et al. 2023);
* ``dynamic``  at the trained length, plain RoPE (the base grows only past it);
* ``yarn``     Peng et al. 2023 §3.2 as their code rounds it: ramp over pair indices between
  ⌊d ln(L/(2π β_fast)) / (2 ln base)⌋ and ⌈… β_slow …⌉ (kept fractional when ``truncate`` is
  false), 1 − ramp of ω_i kept and the rest ω_i / s;
* ``llama3``   Meta's ``apply_scaling``: wavelength 2π/ω below L/high kept, above L/low divided
  by s, in between blended by (L/λ − low)/(high − low); an empty band (low = high) is a step;
* ``longrope`` Ding et al. 2024 as Phi-3 ships it: ω_i / λ_i, with the short factors up to L;
* ``proportional`` Barbero et al. 2024: the fastest ⌊p·d/2⌋ pairs ω_i / s, the rest 0.
"""

from __future__ import annotations

import math


def plain(width: int, base: float) -> list[float]:
    return [base ** (-2.0 * i / width) for i in range(width // 2)]


def yarn_bounds(width, base, original, beta_fast, beta_slow, truncate):
    """The pair indices where YaRN's ramp starts and ends (Peng et al.'s find_correction_range)."""

    def pair(rotations):
        return width * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(base))

    low, high = pair(beta_fast), pair(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    return max(low, 0), min(high, width - 1)


def mscale(scale: float, m: float = 1.0) -> float:
    """DeepSeek's yarn_get_mscale: 0.1·m·ln s + 1 (1 at s ≤ 1)."""
    return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0


def inv_freq(rope_type: str, width: int, base: float, p: dict, length: int | None = None):
    """(ω per pair, attention factor) in float64. ``p``: the layer type's rope parameters in
    transformers' names, with ``factor`` and ``original_max_position_embeddings`` resolved."""
    s = float(p.get("factor") or 1.0)
    original = p.get("original_max_position_embeddings")
    omega = plain(width, base)
    if rope_type in ("default", "dynamic"):
        return omega, 1.0
    if rope_type == "linear":
        return [w / s for w in omega], 1.0
    if rope_type == "yarn":
        low, high = yarn_bounds(
            width,
            base,
            original,
            p.get("beta_fast") or 32.0,
            p.get("beta_slow") or 1.0,
            p.get("truncate", True) is not False,
        )
        if high == low:
            high += 0.001
        out = []
        for i, w in enumerate(omega):
            ramp = min(max((i - low) / (high - low), 0.0), 1.0)
            out.append(w / s * ramp + w * (1 - ramp))
        factor = p.get("attention_factor")
        if factor is None:
            m, m_all = p.get("mscale"), p.get("mscale_all_dim")
            factor = mscale(s, m) / mscale(s, m_all) if m and m_all else mscale(s)
        return out, float(factor)
    if rope_type == "llama3":
        low, high = p.get("low_freq_factor", 1.0), p.get("high_freq_factor", 4.0)
        out = []
        for w in omega:
            wavelength = 2 * math.pi / w
            if wavelength < original / high:
                out.append(w)
            elif wavelength > original / low:
                out.append(w / s)
            elif high == low:  # λ exactly L/low: the step's edge, kept
                out.append(w)
            else:
                smooth = (original / wavelength - low) / (high - low)
                out.append((1 - smooth) * w / s + smooth * w)
        return out, 1.0
    if rope_type == "longrope":
        longer = length is not None and length > original
        factors = p["long_factor"] if longer else p["short_factor"]
        out = [w / f for w, f in zip(omega, factors)]
        factor = p.get("attention_factor")
        if factor is None:
            factor = 1.0 if s <= 1 else math.sqrt(1 + math.log(s) / math.log(original))
        return out, float(factor)
    if rope_type == "proportional":
        kept = int(p.get("partial_rotary_factor", 1.0) * width // 2)
        return [w / s if i < kept else 0.0 for i, w in enumerate(omega)], 1.0
    raise ValueError(f"rope_type {rope_type!r} has no formula here")
