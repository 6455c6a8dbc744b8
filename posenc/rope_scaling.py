"""RoPE context-extension methods as pure functions of the head: inverse frequencies in, scaled
inverse frequencies and an attention factor out. Torch-free (stdlib ``math`` only), so the
workflow may import it while it parses.

RoPE (Su et al. 2021) rotates pair i of a head of dimension d by the angle p * theta_i at position
p, with theta_i = base^(-2i/d), i = 0 .. d/2 - 1, and wavelength lambda_i = 2 pi / theta_i. A
model trained on sequences of ``original_length`` L has only seen angles up to L * theta_i. To run
it on a context ``scale`` s = L' / L times longer, each method changes the theta_i:

* ``pi``      Position Interpolation: every frequency divided by s;
* ``ntk``     NTK-aware: a larger base, which divides the lowest frequency by s and leaves the
  highest one untouched;
* ``dynamic`` NTK-aware with a base that grows with the current sequence length;
* ``yarn``    NTK-by-parts (keep the fast pairs, interpolate the slow ones, ramp in between) and
  an attention temperature;
* ``llama3``  the same idea with the ramp in wavelength bands (Llama 3.1);
* ``longrope`` a searched rescale factor per pair, one set up to L and another beyond, and an
  attention factor (LongRoPE, as Phi-3 ships it);
* ``proportional`` p-RoPE: the fastest share p of the pairs at their usual frequencies, the rest
  at frequency 0 (transformers' rope type for Gemma; a change of encoding more than an
  extension, with s dividing the kept frequencies as PI does).

:func:`scaled_rope` is the one entry point. ``params`` take transformers' ``rope_parameters``
names and defaults, and every formula follows transformers' ``modeling_rope_utils.py``
(v5.24.0) where it implements the method, which itself follows the authors' reference code. The
values are those formulas in float64; transformers evaluates them in float32.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

# Pairs whose inverse frequencies differ by more than this, relatively, count as differing in
# yarn_rounding_gap: float64 rounding alone stays below 1e-15.
DIFFERENCE_THRESHOLD = 1e-12


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


def _pi(head_dim, base, scale, original_length, length, params) -> ScaledRope:
    """Position Interpolation (Chen et al. 2023): positions p -> p / s, so p * theta_i ->
    p * (theta_i / s) and no angle leaves the trained range [0, L theta_i). Applied to the
    frequencies, as transformers' ``linear`` does: theta_i' = theta_i / s. Factor 1."""
    return ScaledRope(tuple(theta / scale for theta in rope_inv_freq(head_dim, base)))


def ntk_scaled_base(base: float, scale: float, head_dim: int) -> float:
    """The NTK-aware base for an effective scale: base * scale^(d / (d - 2)), the one formula
    behind NTK-aware scaling, its dynamic form and the extrapolation section's NTK models."""
    return base * scale ** (head_dim / (head_dim - 2))


def _ntk(head_dim, base, scale, original_length, length, params) -> ScaledRope:
    """NTK-aware scaling (bloc97 2023; Peng et al. 2023 §3.1, eqs. 15-16):
    base' = base * s^(d / (d - 2)), theta_i' = base'^(-2i/d). The exponent makes the lowest
    frequency, pair d/2 - 1, exactly theta / s while pair 0 keeps theta = 1. Factor 1."""
    return ScaledRope(rope_inv_freq(head_dim, ntk_scaled_base(base, scale, head_dim)))


def _dynamic(head_dim, base, scale, original_length, length, params) -> ScaledRope:
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


def _yarn(head_dim, base, scale, original_length, length, params) -> ScaledRope:
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


def _llama3(head_dim, base, scale, original_length, length, params) -> ScaledRope:
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
    if not _is_number(scale) or scale <= 0:
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


def _longrope(head_dim, base, scale, original_length, length, params) -> ScaledRope:
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


def _proportional(head_dim, base, scale, original_length, length, params) -> ScaledRope:
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


def _is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _check_head(head_dim, base, scale, original_length) -> None:
    """The arguments every method shares; a bad one raises a ValueError naming it."""
    if not isinstance(head_dim, int) or isinstance(head_dim, bool) or head_dim < 4 or head_dim % 2:
        raise ValueError(f"head_dim must be an even integer >= 4 (RoPE pairs), got {head_dim!r}")
    if not _is_number(base) or base <= 1:
        raise ValueError(f"base must be a finite number > 1, got {base!r}")
    if not _is_number(scale) or scale < 1:
        raise ValueError(f"scale must be a finite number >= 1 (L' / L), got {scale!r}")
    if not isinstance(original_length, int) or isinstance(original_length, bool):
        raise ValueError(f"original_length must be a positive integer, got {original_length!r}")
    if original_length < 1:
        raise ValueError(f"original_length must be a positive integer, got {original_length!r}")


def _check_betas(beta_fast, beta_slow) -> None:
    if not _is_number(beta_slow) or beta_slow <= 0:
        raise ValueError(f"beta_slow must be a finite number > 0 (rotations), got {beta_slow!r}")
    if not _is_number(beta_fast) or beta_fast <= beta_slow:
        raise ValueError(
            f"beta_fast must be a finite number > beta_slow ({beta_slow!r}), got {beta_fast!r}"
        )


def _check_attention_factor(factor) -> None:
    if factor is not None and (not _is_number(factor) or factor <= 0):
        raise ValueError(f"attention_factor must be a finite number > 0, got {factor!r}")


# Each method's own checks of its resolved params, beside its registry entry; a bad value
# raises a ValueError naming the parameter.


def _check_yarn(params, head_dim, scale, original_length) -> None:
    _check_betas(params["beta_fast"], params["beta_slow"])
    _check_attention_factor(params["attention_factor"])
    if not isinstance(params["truncate"], bool):
        raise ValueError(f"truncate must be True or False, got {params['truncate']!r}")


def _check_llama3(params, head_dim, scale, original_length) -> None:
    low, high = params["low_freq_factor"], params["high_freq_factor"]
    if not _is_number(low) or low <= 0:
        raise ValueError(f"low_freq_factor must be a finite number > 0, got {low!r}")
    if not _is_number(high) or high < low:
        raise ValueError(
            f"high_freq_factor must be a finite number >= low_freq_factor ({low!r}), got {high!r}"
        )


def _check_longrope(params, head_dim, scale, original_length) -> None:
    pairs = head_dim // 2
    for name in ("short_factor", "long_factor"):
        factors = params[name]
        if factors is None:
            raise ValueError(
                f"params['{name}'] is required by 'longrope': a list of head_dim / 2 = {pairs} "
                "per-pair rescale factors"
            )
        if not isinstance(factors, list | tuple):
            raise ValueError(f"{name} must be a list of {pairs} numbers, got {factors!r}")
        if len(factors) != pairs:
            raise ValueError(
                f"{name} must have head_dim / 2 = {pairs} entries (one per rotated pair), "
                f"got {len(factors)}"
            )
        bad = [i for i, factor in enumerate(factors) if not _is_number(factor) or factor <= 0]
        if bad:
            raise ValueError(
                f"{name}[{bad[0]}] must be a finite number > 0, got {factors[bad[0]]!r}"
            )
    _check_attention_factor(params["attention_factor"])
    if params["attention_factor"] is None:
        longrope_attention_factor(scale, original_length)  # raises at L = 1 and s > 1 (ln L = 0)


def _check_proportional(params, head_dim, scale, original_length) -> None:
    proportion = params["partial_rotary_factor"]
    if not _is_number(proportion) or not 0 < proportion <= 1:
        raise ValueError(
            "partial_rotary_factor must be a number in (0, 1] (p-RoPE's share of pairs kept), "
            f"got {proportion!r}"
        )


@dataclass(frozen=True)
class _Method:
    compute: Callable[..., ScaledRope]
    params: tuple[str, ...] = ()  # the rope_parameters it reads (besides the two below)
    check: Callable[..., None] | None = None  # (resolved params, head_dim, scale, L) -> None


# The one registry: a method is one entry here. Every method also takes ``factor`` and
# ``original_max_position_embeddings``, which must repeat ``scale`` and ``original_length``.
_REGISTRY = {
    "pi": _Method(_pi),
    "ntk": _Method(_ntk),
    "dynamic": _Method(_dynamic),
    "yarn": _Method(_yarn, ("beta_fast", "beta_slow", "attention_factor", "truncate"), _check_yarn),
    "llama3": _Method(_llama3, ("low_freq_factor", "high_freq_factor"), _check_llama3),
    "longrope": _Method(
        _longrope, ("short_factor", "long_factor", "attention_factor"), _check_longrope
    ),
    "proportional": _Method(_proportional, ("partial_rotary_factor",), _check_proportional),
}
# ("pi", "ntk", "dynamic", "yarn", "llama3", "longrope", "proportional")
METHODS = tuple(_REGISTRY)

# transformers' defaults (None: absent; the YaRN and LongRoPE attention factors then follow
# their formulas; LongRoPE's two factor lists are required).
_DEFAULTS = {
    "beta_fast": 32.0,
    "beta_slow": 1.0,
    "attention_factor": None,
    "truncate": True,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "short_factor": None,
    "long_factor": None,
    "partial_rotary_factor": 1.0,
}


def _resolve_params(method: str, head_dim, scale, original_length, params: dict | None) -> dict:
    """``params`` checked against the method's names and completed with the defaults."""
    params = dict(params or {})
    known = ("factor", "original_max_position_embeddings", *_REGISTRY[method].params)
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise ValueError(
            f"params: {', '.join(map(repr, unknown))} not read by {method!r}; "
            f"it reads {', '.join(known)}"
        )
    for name, must_equal, argument in (
        ("factor", scale, "scale"),
        ("original_max_position_embeddings", original_length, "original_length"),
    ):
        value = params.pop(name, None)
        if value is not None and value != must_equal:
            raise ValueError(
                f"params['{name}'] = {value!r} differs from {argument} = {must_equal!r}"
            )
    resolved = {name: _DEFAULTS[name] for name in _REGISTRY[method].params}
    resolved.update({name: value for name, value in params.items() if value is not None})
    if _REGISTRY[method].check is not None:
        _REGISTRY[method].check(resolved, head_dim, scale, original_length)
    return resolved


def scaled_rope(
    method: str,
    head_dim: int,
    base: float,
    scale: float,
    original_length: int,
    params: dict | None = None,
    length: int | None = None,
) -> ScaledRope:
    """RoPE's frequencies for a context ``scale`` = L' / L times the trained ``original_length``
    L, by ``method`` (one of :data:`METHODS`; formulas and citations in each method's docstring).

    ``params`` uses transformers' ``rope_parameters`` names: ``factor`` and
    ``original_max_position_embeddings`` may repeat ``scale`` and ``original_length`` (a
    different value raises); yarn reads ``beta_fast`` (32), ``beta_slow`` (1),
    ``attention_factor`` (0.1 ln s + 1) and ``truncate`` (True); llama3 reads
    ``low_freq_factor`` (1) and ``high_freq_factor`` (4); longrope reads ``short_factor`` and
    ``long_factor`` (required: d/2 numbers each) and ``attention_factor``
    (sqrt(1 + ln s / ln L)); proportional reads ``partial_rotary_factor`` (p, 1). A value None
    is the default; a name the method does not read raises. ``length`` is the current sequence
    length, read by ``dynamic`` and ``longrope`` only (None: ``original_length``).

    At scale 1 every method is plain RoPE (yarn and llama3 to the last bit or two), except
    ``dynamic`` at a length beyond L (its base grows with the length whatever the scale),
    ``longrope`` unless its factors are all 1, and ``proportional`` at p < 1 (its slow pairs
    stop turning whatever the scale). Bad input raises a ValueError that names the argument.
    """
    if method not in _REGISTRY:
        raise ValueError(f"method {method!r} is unknown; known: {', '.join(METHODS)}")
    _check_head(head_dim, base, scale, original_length)
    resolved = _resolve_params(method, head_dim, scale, original_length, params)
    if length is None:
        length = original_length
    elif not isinstance(length, int) or isinstance(length, bool) or length < 1:
        raise ValueError(f"length must be a positive integer or None, got {length!r}")
    return _REGISTRY[method].compute(
        head_dim, float(base), float(scale), original_length, length, resolved
    )


def yarn_inv_freq_continuous(
    head_dim: int,
    base: float,
    scale: float,
    original_length: int,
    beta_fast: float = 32.0,
    beta_slow: float = 1.0,
) -> tuple[float, ...]:
    """NTK-by-parts as the YaRN paper writes it (Peng et al. 2023 §3.2, eqs. 17-20), with no
    rounding of the ramp to whole pairs:

        r_i = L / lambda_i = L theta_i / (2 pi)                                (eq. 17)
        gamma(r) = 0 if r < alpha, 1 if r > beta, (r - alpha) / (beta - alpha) otherwise (18)
        theta_i' = (1 - gamma(r_i)) theta_i / s + gamma(r_i) theta_i             (eq. 20)

    with alpha = beta_slow and beta = beta_fast. Eq. 17 prints the base as b'; NTK-by-parts
    changes no base, so this is b. Shape (d/2,).
    """
    _check_head(head_dim, base, scale, original_length)
    _check_betas(beta_fast, beta_slow)
    alpha, beta = beta_slow, beta_fast
    inv_freq = []
    for theta in rope_inv_freq(head_dim, float(base)):
        rotations = original_length * theta / (2 * math.pi)
        if rotations < alpha:
            gamma = 0.0
        elif rotations > beta:
            gamma = 1.0
        else:
            gamma = (rotations - alpha) / (beta - alpha)
        inv_freq.append((1 - gamma) * theta / scale + gamma * theta)
    return tuple(inv_freq)


def yarn_rounding_gap(
    head_dim: int,
    base: float,
    scale: float,
    original_length: int,
    beta_fast: float = 32.0,
    beta_slow: float = 1.0,
) -> dict:
    """How far YaRN as implemented (:func:`scaled_rope` ``"yarn"``, the ramp rounded to whole
    pairs and linear in the pair index) is from the paper's continuous ramp
    (:func:`yarn_inv_freq_continuous`), relative to the latter:

    ``max_relative_difference`` (max over pairs of |code - paper| / paper), ``pair`` (where),
    ``pairs_differing`` (pairs beyond :data:`DIFFERENCE_THRESHOLD`) and ``pairs`` (d/2).

    The gap has two sources: the rounding of (low, high) outward to whole pairs, and the ramp's
    shape, linear in ln r in the code but in r in the paper (the two agree only where gamma is 0
    or 1). It vanishes, to rounding, at s = 1, when every pair lies outside the ramp, and when
    no whole pair index falls in [i(beta_fast), i(beta_slow)].
    """
    params = {"beta_fast": beta_fast, "beta_slow": beta_slow}
    code = scaled_rope("yarn", head_dim, base, scale, original_length, params).inv_freq
    paper = yarn_inv_freq_continuous(head_dim, base, scale, original_length, beta_fast, beta_slow)
    relative = [abs(c - p) / p for c, p in zip(code, paper)]
    pair = max(range(len(relative)), key=relative.__getitem__)
    return {
        "max_relative_difference": relative[pair],
        "pair": pair,
        "pairs_differing": sum(r > DIFFERENCE_THRESHOLD for r in relative),
        "pairs": len(relative),
    }
