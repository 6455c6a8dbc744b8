"""The RoPE context-extension methods' checks: the arguments every method shares (:func:`head`),
and each method's own checks of its resolved params (the registry in :mod:`posenc.rope_scaling`
puts each beside its method). A bad value raises a ValueError naming the parameter.
"""

from __future__ import annotations

from posenc.rope_methods import is_number, longrope_attention_factor


def head(head_dim, base, scale, original_length) -> None:
    """The arguments every method shares; a bad one raises a ValueError naming it."""
    if not isinstance(head_dim, int) or isinstance(head_dim, bool) or head_dim < 4 or head_dim % 2:
        raise ValueError(f"head_dim must be an even integer >= 4 (RoPE pairs), got {head_dim!r}")
    if not is_number(base) or base <= 1:
        raise ValueError(f"base must be a finite number > 1, got {base!r}")
    if not is_number(scale) or scale < 1:
        raise ValueError(f"scale must be a finite number >= 1 (L' / L), got {scale!r}")
    if not isinstance(original_length, int) or isinstance(original_length, bool):
        raise ValueError(f"original_length must be a positive integer, got {original_length!r}")
    if original_length < 1:
        raise ValueError(f"original_length must be a positive integer, got {original_length!r}")


def betas(beta_fast, beta_slow) -> None:
    if not is_number(beta_slow) or beta_slow <= 0:
        raise ValueError(f"beta_slow must be a finite number > 0 (rotations), got {beta_slow!r}")
    if not is_number(beta_fast) or beta_fast <= beta_slow:
        raise ValueError(
            f"beta_fast must be a finite number > beta_slow ({beta_slow!r}), got {beta_fast!r}"
        )


def attention_factor(factor) -> None:
    if factor is not None and (not is_number(factor) or factor <= 0):
        raise ValueError(f"attention_factor must be a finite number > 0, got {factor!r}")


def yarn(params, head_dim, scale, original_length) -> None:
    betas(params["beta_fast"], params["beta_slow"])
    attention_factor(params["attention_factor"])
    if not isinstance(params["truncate"], bool):
        raise ValueError(f"truncate must be True or False, got {params['truncate']!r}")


def llama3(params, head_dim, scale, original_length) -> None:
    low, high = params["low_freq_factor"], params["high_freq_factor"]
    if not is_number(low) or low <= 0:
        raise ValueError(f"low_freq_factor must be a finite number > 0, got {low!r}")
    if not is_number(high) or high < low:
        raise ValueError(
            f"high_freq_factor must be a finite number >= low_freq_factor ({low!r}), got {high!r}"
        )


def longrope(params, head_dim, scale, original_length) -> None:
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
        bad = [i for i, factor in enumerate(factors) if not is_number(factor) or factor <= 0]
        if bad:
            raise ValueError(
                f"{name}[{bad[0]}] must be a finite number > 0, got {factors[bad[0]]!r}"
            )
    attention_factor(params["attention_factor"])
    if params["attention_factor"] is None:
        longrope_attention_factor(scale, original_length)  # raises at L = 1 and s > 1 (ln L = 0)


def proportional(params, head_dim, scale, original_length) -> None:
    proportion = params["partial_rotary_factor"]
    if not is_number(proportion) or not 0 < proportion <= 1:
        raise ValueError(
            "partial_rotary_factor must be a number in (0, 1] (p-RoPE's share of pairs kept), "
            f"got {proportion!r}"
        )
