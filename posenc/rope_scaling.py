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

:func:`scaled_rope` is the one entry point; the formulas are in :mod:`posenc.rope_methods`, the
checks in :mod:`posenc.rope_checks`, and the registry here pairs each method with its own.
``params`` take transformers' ``rope_parameters`` names and defaults, and every formula follows
transformers' ``modeling_rope_utils.py`` (v5.24.0) where it implements the method, which itself
follows the authors' reference code. The values are those formulas in float64; transformers
evaluates them in float32.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from posenc import rope_checks, rope_methods
from posenc.rope_methods import (
    ScaledRope,
    longrope_attention_factor,
    ntk_scaled_base,
    proportional_rotated_pairs,
    rope_inv_freq,
    yarn_correction_range,
)

# What other modules read from here, the formulas' public names included.
__all__ = [
    "METHODS",
    "ScaledRope",
    "longrope_attention_factor",
    "ntk_scaled_base",
    "proportional_rotated_pairs",
    "rope_inv_freq",
    "scaled_rope",
    "yarn_correction_range",
    "yarn_inv_freq_continuous",
    "yarn_rounding_gap",
]

# Pairs whose inverse frequencies differ by more than this, relatively, count as differing in
# yarn_rounding_gap: float64 rounding alone stays below 1e-15.
DIFFERENCE_THRESHOLD = 1e-12


@dataclass(frozen=True)
class _Method:
    compute: Callable[..., ScaledRope]
    params: tuple[str, ...] = ()  # the rope_parameters it reads (besides the two below)
    check: Callable[..., None] | None = None  # (resolved params, head_dim, scale, L) -> None


# The one registry: a method is one entry here. Every method also takes ``factor`` and
# ``original_max_position_embeddings``, which must repeat ``scale`` and ``original_length``.
_REGISTRY = {
    "pi": _Method(rope_methods.pi),
    "ntk": _Method(rope_methods.ntk),
    "dynamic": _Method(rope_methods.dynamic),
    "yarn": _Method(
        rope_methods.yarn,
        ("beta_fast", "beta_slow", "attention_factor", "truncate"),
        rope_checks.yarn,
    ),
    "llama3": _Method(
        rope_methods.llama3, ("low_freq_factor", "high_freq_factor"), rope_checks.llama3
    ),
    "longrope": _Method(
        rope_methods.longrope,
        ("short_factor", "long_factor", "attention_factor"),
        rope_checks.longrope,
    ),
    "proportional": _Method(
        rope_methods.proportional, ("partial_rotary_factor",), rope_checks.proportional
    ),
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
    rope_checks.head(head_dim, base, scale, original_length)
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
    rope_checks.head(head_dim, base, scale, original_length)
    rope_checks.betas(beta_fast, beta_slow)
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
