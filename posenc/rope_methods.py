"""The RoPE context-extension methods' formulas, one pure function each: a head's inverse
frequencies in, the scaled frequencies and an attention factor out, in float64 (citations and
the differences from transformers in each docstring). Torch-free (stdlib ``math`` only).
:func:`posenc.rope_scaling.scaled_rope`, the one entry point, checks the arguments
(:mod:`posenc.rope_checks`) and resolves the defaults before it calls one of these.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class ScaledRope:
    """The rotary frequencies of one head after a context extension.

    ``inv_freq`` (d/2,): the angle per position of each pair, float64; before scaling, pair i
    has base^(-2i/d). ``attention_factor`` multiplies both cos and sin, so every q.k scales by
    its square (YaRN's 1/t); 1.0 for every method but YaRN and LongRoPE.
    """

    inv_freq: tuple[float, ...]
    attention_factor: float = 1.0


def rope_inv_freq(head_dim: int, base: float) -> tuple[float, ...]:
    """Plain RoPE (Su et al. 2021): theta_i = 1 / base^(2i/d), i = 0 .. d/2 - 1, computed as
    transformers does (a power, then a reciprocal). Shape (d/2,)."""
    return tuple(1.0 / base ** (2 * i / head_dim) for i in range(head_dim // 2))


def is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def pi(head_dim, base, scale, original_length, length, params) -> ScaledRope:
    """Position Interpolation (Chen et al. 2023): positions p -> p / s, so p * theta_i ->
    p * (theta_i / s) and no angle leaves the trained range [0, L theta_i). Applied to the
    frequencies, as transformers' ``linear`` does: theta_i' = theta_i / s. Factor 1."""
    return ScaledRope(tuple(theta / scale for theta in rope_inv_freq(head_dim, base)))


def ntk_scaled_base(base: float, scale: float, head_dim: int) -> float:
    """The NTK-aware base for an effective scale: base * scale^(d / (d - 2)), the one formula
    behind NTK-aware scaling, its dynamic form and the extrapolation section's NTK models."""
    return base * scale ** (head_dim / (head_dim - 2))


def ntk(head_dim, base, scale, original_length, length, params) -> ScaledRope:
    """NTK-aware scaling (bloc97 2023; Peng et al. 2023 §3.1, eqs. 15-16):
    base' = base * s^(d / (d - 2)), theta_i' = base'^(-2i/d). The exponent makes the lowest
    frequency, pair d/2 - 1, exactly theta / s while pair 0 keeps theta = 1. Factor 1."""
    return ScaledRope(rope_inv_freq(head_dim, ntk_scaled_base(base, scale, head_dim)))


def dynamic(head_dim, base, scale, original_length, length, params) -> ScaledRope:
    """Dynamic NTK (emozilla 2023; Peng et al. 2023 §3.3), as transformers' ``dynamic``
    (``_compute_dynamic_ntk_parameters``): at a current sequence length l > L,

        base' = base * ((s * l / L) - (s - 1))^(d / (d - 2)),   theta_i' = base'^(-2i/d),

    and plain RoPE at l <= L (transformers evaluates the formula at l = L there, which is
    base * 1^(d/(d-2)) = base up to one rounding). The effective NTK scale s * l / L - (s - 1)
    is 1 at l = L and grows s times faster than the paper's max(1, l / L), which it equals only
    at s = 1; at s = 1 this is therefore *not* plain RoPE beyond L. Factor 1.
    """
    if length <= original_length:
        return ScaledRope(rope_inv_freq(head_dim, base))
    effective = (scale * length / original_length) - (scale - 1)
    return ScaledRope(rope_inv_freq(head_dim, ntk_scaled_base(base, effective, head_dim)))


def yarn_correction_range(
    head_dim: int,
    base: float,
    original_length: int,
    beta_fast: float = 32.0,
    beta_slow: float = 1.0,
    truncate: bool = True,
) -> tuple[float, float]:
    """(low, high): the pair indices where YaRN's ramp starts and ends, as the authors' code and
    transformers' ``find_correction_range`` compute them (Peng et al. 2023 §3.2).

    Pair i turns r_i = L / lambda_i = L base^(-2i/d) / (2 pi) times over the trained length;
    the pair that turns r times is i(r) = d ln(L / (2 pi r)) / (2 ln base)
    (``find_correction_dim``). low = floor(i(beta_fast)) and high = ceil(i(beta_slow)) when
    ``truncate`` (transformers' default; False keeps the fractions), then clamped to [0, d - 1]
    (the reference code's bound, although the pairs stop at d/2 - 1). Pairs <= low turn at
    least beta_fast times and are kept; pairs >= high turn at most beta_slow times and are
    interpolated.
    """

    def pair_turning(rotations: float) -> float:
        return (head_dim * math.log(original_length / (rotations * 2 * math.pi))) / (
            2 * math.log(base)
        )

    low, high = pair_turning(beta_fast), pair_turning(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    return max(low, 0), min(high, head_dim - 1)


def _yarn_attention_factor(scale: float, params: dict) -> float:
    """YaRN's sqrt(1/t) = 0.1 ln(s) + 1 (Peng et al. 2023, eq. 22; 1 at s <= 1), unless
    ``params["attention_factor"]`` gives it. It multiplies cos and sin, so q.k scales by 1/t."""
    if params["attention_factor"] is not None:
        return float(params["attention_factor"])
    return 0.1 * math.log(scale) + 1.0 if scale > 1 else 1.0


def yarn(head_dim, base, scale, original_length, length, params) -> ScaledRope:
    """YaRN (Peng et al. 2023, §3.2-3.4): NTK-by-parts plus an attention temperature, exactly as
    transformers' ``_compute_yarn_parameters`` and the authors' code (jquesnelle/yarn):

        extrapolation_i = 1 / base^(2i/d),   interpolation_i = 1 / (s base^(2i/d))
        ramp_i = clamp((i - low) / (high - low), 0, 1)      (high += 0.001 if high == low)
        e_i = 1 - ramp_i
        theta_i' = interpolation_i (1 - e_i) + extrapolation_i e_i

    with (low, high) from :func:`yarn_correction_range` (rounded to whole pairs by default:
    transformers' ``truncate`` = True). The code's ramp is linear in the pair index, i.e. in
    ln r; the paper's (eq. 18) is linear in r itself: see :func:`yarn_inv_freq_continuous`.
    Attention factor: :func:`_yarn_attention_factor`.
    """
    low, high = yarn_correction_range(
        head_dim,
        base,
        original_length,
        params["beta_fast"],
        params["beta_slow"],
        params["truncate"],
    )
    if high == low:
        high += 0.001  # the reference code's guard against a zero-width ramp
    inv_freq = []
    for i in range(head_dim // 2):
        pos_freq = base ** (2 * i / head_dim)
        extrapolation, interpolation = 1.0 / pos_freq, 1.0 / (scale * pos_freq)
        extrapolation_factor = 1 - min(max((i - low) / (high - low), 0.0), 1.0)
        inv_freq.append(
            interpolation * (1 - extrapolation_factor) + extrapolation * extrapolation_factor
        )
    return ScaledRope(tuple(inv_freq), _yarn_attention_factor(scale, params))


def llama3(head_dim, base, scale, original_length, length, params) -> ScaledRope:
    """Llama 3.1's scaling (Dubey et al. 2024 name the model, not this formula: it is in Meta's
    reference code, ``apply_scaling``, and transformers' ``_compute_llama3_parameters``), in
    wavelength lambda_i = 2 pi / theta_i:

        lambda_i < L / high_freq_factor  ->  theta_i                (kept)
        lambda_i > L / low_freq_factor   ->  theta_i / s            (interpolated)
        otherwise, with smooth = (L / lambda_i - low_freq_factor)
                                 / (high_freq_factor - low_freq_factor):
                                 (1 - smooth) theta_i / s + smooth theta_i

    Llama 3.1: s = 8, low_freq_factor = 1, high_freq_factor = 4, L = 8192. Factor 1.

    Llama 4 Scout ships low_freq_factor = high_freq_factor = 1: the band is empty and the
    formula the limit high -> low, a step (kept below lambda = L / low, divided above; kept at
    lambda = L / low itself, where smooth would be 0 / 0). Meta's reference code asserts
    low != high; transformers computes the 0 / 0 and discards it with ``torch.where``.
    """
    low_freq_factor, high_freq_factor = params["low_freq_factor"], params["high_freq_factor"]
    low_freq_wavelen = original_length / low_freq_factor
    high_freq_wavelen = original_length / high_freq_factor
    inv_freq = []
    for theta in rope_inv_freq(head_dim, base):
        wavelen = 2 * math.pi / theta
        if wavelen < high_freq_wavelen:
            inv_freq.append(theta)
        elif wavelen > low_freq_wavelen:
            inv_freq.append(theta / scale)
        elif high_freq_factor == low_freq_factor:
            inv_freq.append(theta)
        else:
            smooth = (original_length / wavelen - low_freq_factor) / (
                high_freq_factor - low_freq_factor
            )
            inv_freq.append((1 - smooth) * theta / scale + smooth * theta)
    return ScaledRope(tuple(inv_freq))


def longrope_attention_factor(scale: float, original_length: int) -> float:
    """LongRoPE's attention factor as Phi-3 and transformers compute it by default (the policy
    the LongRoPE reference code calls ``"su"``): sqrt(1 + ln s / ln L) for s > 1, 1 at s <= 1.

    It multiplies cos and sin, so q.k scales by 1 + ln s / ln L = ln(s L) / ln L: the log of the
    extended length over the log of the trained one. Any s > 0 is accepted (a config's
    max_position_embeddings may be below L); at s > 1, L must be >= 2 (ln 1 = 0).
    """
    if not is_number(scale) or scale <= 0:
        raise ValueError(f"scale must be a finite number > 0, got {scale!r}")
    if not isinstance(original_length, int) or isinstance(original_length, bool):
        raise ValueError(f"original_length must be a positive integer, got {original_length!r}")
    if original_length < 1:
        raise ValueError(f"original_length must be a positive integer, got {original_length!r}")
    if scale <= 1:
        return 1.0
    if original_length < 2:
        raise ValueError(
            "original_length must be >= 2 for LongRoPE's attention factor "
            f"sqrt(1 + ln s / ln L) at s = {scale!r} (ln 1 = 0); give attention_factor instead"
        )
    return math.sqrt(1 + math.log(scale) / math.log(original_length))


def longrope(head_dim, base, scale, original_length, length, params) -> ScaledRope:
    """LongRoPE (Ding et al. 2024), as Phi-3 ships it and transformers' ``longrope`` computes it:
    pair i's angle n theta_i becomes n theta_i / lambda_i, with lambda_i a searched per-pair
    rescale factor, i.e.

        theta_i' = 1 / (lambda_i base^(2i/d)),    i = 0 .. d/2 - 1,
        lambda = short_factor  if l <= L,   long_factor  if l > L,

    at a current sequence length l (``length``; None: L, the short set, as transformers with no
    ``seq_len``). Attention factor: ``params["attention_factor"]`` when given, else
    :func:`longrope_attention_factor` at s = ``scale``; the same at every length.

    ``scale`` is transformers' ``factor`` when the config sets it, else its
    max_position_embeddings / original_max_position_embeddings (Phi-3's s); it enters only
    the attention factor. ``head_dim`` is the rotated width: for a config with
    partial_rotary_factor < 1, transformers' int(head_dim * partial_rotary_factor), with the
    spectrum over that width and d/2 factors per list.

    The paper and its reference code (microsoft/LongRoPE ``rope/longrope.py``) against
    transformers 5.24 (``_compute_longrope_parameters`` and ``dynamic_rope_update``):

    * Start tokens: the paper's second non-uniformity keeps the first n_hat positions at
      RoPE's original angles, and the reference code's start-token classes overwrite those
      positions' cos/sin. Phi-3 and transformers have no n_hat (n_hat = 0), nor does this
      function, which returns per-pair frequencies, not per-position tables.
    * Two factor sets: the reference code holds one set (``rescale_factors``) per target
      length; the paper readjusts a separate set for the short (8k) window. The switch at
      l > L between ``short_factor`` and ``long_factor``, with l = max(position_ids) + 1, is
      Phi-3's modeling code, which transformers keeps.
    * Attention factor: the reference code's default ``"su"`` is this formula with
      s = max_position_embeddings / L; it also offers ``"yarn"`` (0.1 ln s + 1) or a constant,
      and an older reference class takes s = max(l / L, 1) from the current length, so that its
      factor grows with the sequence. transformers fixes it once: from ``factor`` when given,
      and only then from max_position_embeddings / original_max_position_embeddings, which
      is the reverse of its docstring ("this value will be overridden as the ratio"). It
      multiplies cos and sin at every length, so below L too the model is not plain RoPE.
    * Where L comes from: transformers' ``standardize_rope_params`` lets a top-level
      ``config.original_max_position_embeddings`` (Phi-3's configs) override the one in
      rope_parameters, and when neither exists sets L = max_position_embeddings: then s = 1,
      attention factor 1 unless ``factor`` is set, and the long factors start only past
      max_position_embeddings.
    * Checks: the reference search (``evolution/algorithms/dim_mono.py``) draws each factor
      from [1, 1 + s] and keeps them non-decreasing in i; neither transformers nor this
      function requires either (here: finite and > 0). transformers only logs a warning for a
      list of the wrong length, after which a one-entry list broadcasts over every pair and
      any other length fails with a shape error; it reads no ``short_mscale`` /
      ``long_mscale`` (vLLM does). Here each of these raises a ValueError.
    * Precision: transformers rounds the factors to float32 and computes in float32; this is
      float64.
    """
    factors = params["long_factor"] if length > original_length else params["short_factor"]
    inv_freq = tuple(
        1.0 / (factor * base ** (2 * i / head_dim)) for i, factor in enumerate(factors)
    )
    attention = params["attention_factor"]
    if attention is None:
        attention = longrope_attention_factor(scale, original_length)
    return ScaledRope(inv_freq, float(attention))


def proportional_rotated_pairs(head_dim: int, proportion: float) -> int:
    """How many pairs p-RoPE turns: k = int(p * d // 2), as the paper's code, Gemma's
    ``apply_rope`` and transformers compute it, i.e. floor(p d / 2) with p d rounded to a float
    first (p = 0.58, d = 100: p d = 57.99999999999999, so 28 and not 29)."""
    return int(proportion * head_dim // 2)


def proportional(head_dim, base, scale, original_length, length, params) -> ScaledRope:
    """p-RoPE (Barbero et al. 2024, "Round and Round We Go!", and their code), as
    transformers' ``proportional`` (Gemma 4's global layers: p = 0.25, d = 512, base 10^6):

        k = int(p * d // 2)                 (:func:`proportional_rotated_pairs`)
        theta_i' = base^(-2i/d) / s   for i < k,     0   for k <= i < d/2,

    with p = ``params["partial_rotary_factor"]`` in (0, 1] (default 1, plain RoPE), s =
    ``scale`` and d the full head width. p counts pairs from the fast end: pair 0 (theta = 1)
    is kept first, and the slowest pairs, which Barbero et al. find Gemma 7B uses most and
    suspect carry semantic rather than positional information, stop turning: cos = 1 and
    sin = 0 at every position, so q and k pass them unchanged, as under NoPE. The kept pairs
    have exactly full RoPE's frequencies, so the slowest one that turns is base^(-2(k-1)/d),
    about base^(-p). Factor 1; ``original_length`` and ``length`` unused.

    Not GPT-NeoX's partial RoPE (``rotary_pct``; posenc's ``rope_partial``; what
    ``partial_rotary_factor`` means in transformers for every other rope type), which turns the
    first r = int(p d) dimensions with theta_i = base^(-2i/r), i < r/2: the whole range from 1
    down to about 1/base recomputed over the rotated width, in fewer and coarser steps, so its
    slowest pair still turns at about 1/base. In the half-split layout pair i is
    (x_i, x_{i + d/2}), so p-RoPE's still dimensions are [k, d/2) and [d/2 + k, d), not
    GPT-NeoX's contiguous tail [r, d).

    The paper against transformers 5.24 (``_compute_proportional_rope_parameters``): the same k
    and the same kept frequencies (the paper's code pads the timescales with infinity, whose
    reciprocal is this 0). transformers adds ``factor``, dividing every frequency as PI does
    (Gemma's ``scale_factor`` divides the angles alike, and raises below 1); the paper has no
    factor, so s = 1 is the paper's p-RoPE. transformers names p ``partial_rotary_factor``
    (Gemma's code: ``rope_proportion``), and its checks only warn: when p is absent (then 1,
    plain RoPE), and about ``factor`` as an unrecognised key although it reads it; p > 1
    silently returns more than d/2 frequencies, and p = 0 (the paper's NoPE end) all zeros.
    Here p must lie in (0, 1]; a p with p d < 2 turns no pair (transformers alike). It
    computes in float32; this is float64.
    """
    kept = proportional_rotated_pairs(head_dim, params["partial_rotary_factor"])
    plain = rope_inv_freq(head_dim, base)
    inv_freq = tuple(theta / scale if i < kept else 0.0 for i, theta in enumerate(plain))
    return ScaledRope(inv_freq)
