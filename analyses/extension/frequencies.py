"""The methods' frequencies, from ``posenc.rope_scaling``: the rows published for anyone to
check, and YaRN's ramp as its authors' code rounds it."""

from typing import Any

from posenc.rope_scaling import rope_inv_freq, scaled_rope, yarn_rounding_gap


def _relative_gap(scaled, width: int, base: float) -> float:
    plain = rope_inv_freq(width, base)
    gaps = [abs(f / p - 1.0) for f, p in zip(scaled.inv_freq, plain, strict=True)]
    return max([*gaps, abs(scaled.attention_factor - 1.0)])


def frequency_rows(model: dict, methods: list[str], scales: list[int], params: dict) -> list:
    """The contract rows: each method at each scale, {method, scale, head_dim, base,
    original_length, params, inv_freq, attention_factor, length}; a fixed method's at any
    length, dynamic NTK's for windows of scale x the original length."""
    width, base, train_len = model["rotated_width"], model["base"], model["train_len"]
    rows = []
    for method in methods:
        for scale in scales:
            p = dict(params.get(method, {}))
            s = scaled_rope(method, width, base, scale, train_len, p, length=scale * train_len)
            rows.append(
                {
                    "method": method,
                    "scale": scale,
                    "head_dim": width,
                    "base": base,
                    "original_length": train_len,
                    "params": {
                        "factor": scale,
                        "original_max_position_embeddings": train_len,
                        **p,
                    },
                    "inv_freq": list(s.inv_freq),
                    "attention_factor": s.attention_factor,
                    "length": scale * train_len,
                }
            )
    return rows


def _plain(row: dict) -> list[float]:
    return list(rope_inv_freq(row["head_dim"], row["base"]))


def yarn_ramp_gaps(model: dict, scale: int, params: dict) -> dict[str, Any]:
    """YaRN as its authors' code computes it against the paper's continuous ramp
    (:func:`posenc.rope_scaling.yarn_rounding_gap`: the ramp's shape and its rounding to whole
    pairs together), and the rounding alone: the code's ramp with and without ``truncate``."""
    width, base, train_len = model["rotated_width"], model["base"], model["train_len"]
    betas = {k: params[k] for k in ("beta_fast", "beta_slow") if k in params}
    rounded = scaled_rope("yarn", width, base, scale, train_len, {**betas, "truncate": True})
    exact = scaled_rope("yarn", width, base, scale, train_len, {**betas, "truncate": False})
    rounding = max(abs(a - b) / b for a, b in zip(rounded.inv_freq, exact.inv_freq, strict=True))
    return {
        "scale": scale,
        **yarn_rounding_gap(width, base, scale, train_len, **betas),
        "rounding_only": rounding,
    }
