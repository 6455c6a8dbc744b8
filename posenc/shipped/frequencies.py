"""Each layer type's rotary frequencies three ways (transformers' module, posenc.rope_scaling,
the float64 formula), and their spectrum against the trained length and the context."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from posenc.rope_scaling import rope_inv_freq, scaled_rope
from posenc.shipped import formula
from posenc.shipped.reading import POSENC_METHOD, ModelError, rotary_class


@dataclass
class LayerType:
    """One layer type's rotary frequencies, three ways."""

    name: str
    rope_type: str
    base: float
    width: int  # rotated dims (for proportional, the full head)
    params: dict
    original: int  # the trained length L
    transformers: np.ndarray | None = None  # float32 buffer, as float64
    transformers_factor: float | None = None
    posenc: np.ndarray | None = None
    posenc_factor: float | None = None
    formula: np.ndarray | None = None
    formula_factor: float | None = None
    problems: list[str] = field(default_factory=list)


def ulps(a: np.ndarray, b: np.ndarray) -> float:
    """max |a − b| in float32 ulps of b (ulp(x) = 2^(⌊log2 |x|⌋ − 23)); 0 where both are 0."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    nonzero = b != 0
    spacing = np.where(nonzero, np.ldexp(1.0, np.frexp(np.where(nonzero, b, 1.0))[1] - 24), 1.0)
    gap = np.abs(a - b) / spacing
    return float(np.where(~nonzero & (a == 0), 0.0, gap).max())


def _head_width(text) -> int:
    if getattr(text, "qk_rope_head_dim", None):
        return int(text.qk_rope_head_dim)
    return getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads


def layer_types(config, where: str = "config") -> tuple[list[LayerType], Any, str | None]:
    """Each layer type's frequencies: transformers' module, posenc and the formula.
    Returns (layer types, the rotary module or None, why transformers built none). An odd
    rotated width raises a ModelError naming the key that makes it."""
    text = config.get_text_config()
    params = getattr(text, "rope_parameters", None)
    if not params:
        return [], None, None
    nested = all(isinstance(v, dict) for v in params.values())
    groups = dict(params) if nested else {"all layers": params}
    out, module, why = [], None, None
    cls = rotary_class(config)
    try:
        module = cls(text) if cls is not None else None
        if module is None:
            why = f"transformers has no rotary module for {config.model_type}"
    except Exception as error:
        why = f"{type(error).__name__}: {str(error).splitlines()[0]}"
    head = _head_width(text)
    for name, p in groups.items():
        kind = "default" if p.get("rope_type") == "mrope" else p.get("rope_type", "default")
        partial = p.get("partial_rotary_factor", getattr(text, "partial_rotary_factor", 1.0))
        width = head if kind == "proportional" else int(head * (partial or 1.0))
        if width % 2 or width < 2:
            key = "head_dim" if width == head else "partial_rotary_factor (v4: rotary_pct)"
            raise ModelError(
                f"{where}: key {key}: the rotated width int({head} × {partial or 1.0}) = "
                f"{width} must be even (RoPE turns pairs)"
            )
        if not isinstance(p.get("rope_theta"), (int, float)) or isinstance(p["rope_theta"], bool):
            raise ModelError(
                f"{where}: key rope_theta = {p.get('rope_theta')!r} as transformers resolved it "
                f"({name}): must be a finite number > 0"
            )
        original = p.get("original_max_position_embeddings") or text.max_position_embeddings
        resolved = dict(p, original_max_position_embeddings=original)
        if kind in ("yarn", "longrope") and resolved.get("factor") is None:
            resolved["factor"] = text.max_position_embeddings / original
        lt = LayerType(name, kind, float(p["rope_theta"]), width, resolved, int(original))
        if module is not None:
            prefix = "" if not nested else f"{name}_"
            buffer = getattr(module, f"{prefix}inv_freq", None)
            lt.transformers = None if buffer is None else buffer.double().numpy()
            lt.transformers_factor = getattr(module, f"{prefix}attention_scaling", None)
        try:
            got = posenc_frequencies(lt)
            lt.posenc, lt.posenc_factor = np.array(got.inv_freq), got.attention_factor
        except ValueError as error:
            lt.problems.append(f"posenc: {error}")
        omega, factor = formula.inv_freq(kind, width, lt.base, resolved)
        lt.formula, lt.formula_factor = np.array(omega), factor
        out.append(lt)
    return out, module, why


def posenc_frequencies(lt: LayerType, length: int | None = None):
    """posenc.rope_scaling's float64 frequencies for the layer type (at ``length`` for the
    length-dependent types)."""
    p = lt.params
    if lt.rope_type == "default":
        from posenc.rope_scaling import ScaledRope

        return ScaledRope(rope_inv_freq(lt.width, lt.base))
    method = POSENC_METHOD[lt.rope_type]
    names = {
        "yarn": ("beta_fast", "beta_slow", "attention_factor", "truncate"),
        "llama3": ("low_freq_factor", "high_freq_factor"),
        "longrope": ("short_factor", "long_factor", "attention_factor"),
        "proportional": ("partial_rotary_factor",),
    }.get(method, ())
    chosen = {k: p[k] for k in names if p.get(k) is not None}
    if method == "yarn" and chosen.get("attention_factor") is None:
        s = float(p["factor"])
        if p.get("mscale") and p.get("mscale_all_dim"):  # DeepSeek's ratio of two mscales
            chosen["attention_factor"] = formula.mscale(s, p["mscale"]) / formula.mscale(
                s, p["mscale_all_dim"]
            )
    scale = float(p.get("factor") or 1.0)
    return scaled_rope(method, lt.width, lt.base, scale, lt.original, chosen, length=length)


def spectrum(lt: LayerType, context: int, scaled: np.ndarray) -> dict:
    """Each pair's wavelength 2π/ω against the trained length L and the advertised context.

    Critical pairs (Liu et al. 2023, "Scaling Laws of RoPE-based Extrapolation"): those that
    complete no full turn within L before scaling, λ_i > L; their count is d/2 minus
    ⌈(d/2)·log_base(L/2π)⌉, the paper's critical dimension d_extra = 2⌈(d/2) log_base(L/2π)⌉
    over two. Scaling moved a pair when its ω changed; a critical pair that now turns within
    the context meets angles it never saw in training. ``scaled``: the frequencies in use at
    the context (LongRoPE's long factors)."""
    plain = np.array(formula.plain(lt.width, lt.base))
    with np.errstate(divide="ignore"):
        wavelength = np.where(scaled > 0, 2 * np.pi / np.where(scaled > 0, scaled, 1), np.inf)
    plain_wavelength = 2 * np.pi / plain
    critical = plain_wavelength > lt.original
    moved = np.abs(scaled - plain) > 1e-12 * plain
    d_extra = 2 * math.ceil(lt.width / 2 * math.log(lt.original / (2 * math.pi), lt.base))
    return {
        "pairs": len(plain),
        "wavelength": [float(w) if math.isfinite(w) else None for w in wavelength],
        "original_length": lt.original,
        "context": context,
        "critical_pairs": int(critical.sum()),
        "liu_critical_dimension": d_extra,
        "first_critical_pair": int(np.argmax(critical)) if critical.any() else None,
        "moved_pairs": int(moved.sum()),
        "critical_moved": int((critical & moved).sum()),
        "critical_turning_within_context": int((critical & (wavelength <= context)).sum()),
        "pairs_turning_within_context": int((wavelength <= context).sum()),
        "longest_wavelength": float(wavelength[np.isfinite(wavelength)].max()),
    }
