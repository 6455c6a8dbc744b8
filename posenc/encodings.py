"""The one registry of positional encodings.

Each encoding is defined once, here: a pure function for its math (formula and citation in the
docstring) and a small module that holds its parameters or caches. Every encoding declares where
it acts on a transformer:

* ``none``  -- nowhere (NoPE);
* ``input`` -- a vector added to the token embedding before the first block;
* ``qk``    -- a transform of queries and keys inside every attention layer;
* ``bias``  -- an additive bias on the attention scores of every layer.

The config schema, the Snakemake wildcards, the analyses, the report and the tests all read the
encoding names from :data:`REGISTRY`; adding an encoding is one new :class:`EncodingSpec`.

Positions and angles are computed in float32 or wider whatever the model dtype
(``angle_dtype``), except where the aliasing analysis asks for low precision on purpose.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import torch
from torch import Tensor, nn

ActsOn = Literal["none", "input", "qk", "bias"]


class PositionOutOfRange(ValueError):
    """A position has no encoding (a learned table asked past its last row)."""


@dataclass(frozen=True)
class EncodingParams:
    """Everything an encoding may need; each encoding reads only its own fields."""

    d_model: int
    n_heads: int = 1
    max_len: int = 2048  # rows of the learned table (L_max)
    base: float = 10000.0  # sinusoidal base
    rope_base: float = 10000.0
    rope_interleaved: bool = True  # Su et al.: pairs (2i, 2i+1); False: GPT-NeoX half split
    t5_num_buckets: int = 32
    t5_max_distance: int = 128
    angle_dtype: torch.dtype = torch.float32

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads


# ----------------------------------------------------------------------------- pure functions


def _check_even(d: int, what: str) -> None:
    if d <= 0 or d % 2:
        raise ValueError(f"{what} must be a positive even number (sin/cos pairs), got {d}")


def inverse_frequencies(d: int, base: float, dtype: torch.dtype = torch.float64) -> Tensor:
    """omega_i = base^(-2i/d) for i = 0 .. d/2-1. Shape (d/2,)."""
    _check_even(d, "dimension")
    return base ** (-torch.arange(0, d, 2, dtype=dtype) / d)


def angles(positions: Tensor, d: int, base: float, dtype: torch.dtype = torch.float32) -> Tensor:
    """theta[p, i] = p * omega_i, computed in ``dtype`` (float32 or wider in models).

    Shape (L, d/2). The frequencies are computed in float64 and then cast, so the only rounding
    that depends on ``dtype`` is the one of the product; the aliasing analysis passes a low
    precision ``dtype`` on purpose to show what the naive computation does.
    """
    omega = inverse_frequencies(d, base).to(device=positions.device, dtype=dtype)
    return positions.to(dtype)[:, None] * omega[None, :]


def sinusoidal_table(
    positions: Tensor, d: int, base: float = 10000.0, dtype: torch.dtype = torch.float32
) -> Tensor:
    """Vaswani et al. 2017: PE(p, 2i) = sin(p / base^(2i/d)), PE(p, 2i+1) = cos(p / base^(2i/d)).

    Interleaved as written (sin in even columns, cos in odd). Shape (L, d).
    """
    theta = angles(positions, d, base, dtype)  # (L, d/2)
    return torch.stack((theta.sin(), theta.cos()), dim=-1).flatten(-2)


def rope_cos_sin(
    positions: Tensor, head_dim: int, base: float = 10000.0, dtype: torch.dtype = torch.float32
) -> tuple[Tensor, Tensor]:
    """Su et al. 2021 (RoFormer): angles p * theta_i with theta_i = base^(-2i/d). Each (L, d/2)."""
    theta = angles(positions, head_dim, base, dtype)
    return theta.cos(), theta.sin()


def apply_rope(x: Tensor, cos: Tensor, sin: Tensor, interleaved: bool = True) -> Tensor:
    """Rotate each pair of ``x`` (..., L, d) by the angles behind ``cos``/``sin`` (L, d/2).

    Interleaved (Su et al.): the pairs are (x[2i], x[2i+1]). Half split (GPT-NeoX, Llama code):
    the pairs are (x[i], x[i + d/2]); it is the interleaved rotation after permuting the
    dimensions, so scores agree once queries and keys are permuted the same way.
    The rotation runs in x's dtype; the angles were computed in float32 or wider.
    """
    cos, sin = cos.to(x.dtype), sin.to(x.dtype)
    if interleaved and x.dtype in (torch.float32, torch.float64):
        # The same rotation in Su et al.'s complex form, (x[2i] + i x[2i+1]) * (cos + i sin):
        # one complex multiply (the same products and sums) instead of strided slices, four
        # multiplies, two adds and a stack -- several times faster forward and backward on the
        # CPU. No complex type for bfloat16, so half precisions take the real form below.
        pairs = x.unflatten(-1, (-1, 2))  # (..., L, d/2, 2)
        *outer, inner = pairs.stride()
        if inner != 1 or pairs.storage_offset() % 2 or any(s % 2 for s in outer):
            pairs = pairs.contiguous()  # view_as_complex needs whole complex numbers in memory
        rotated = torch.view_as_complex(pairs) * torch.complex(cos, sin)  # (..., L, d/2)
        return torch.view_as_real(rotated).flatten(-2)
    if interleaved:
        x1, x2 = x[..., 0::2], x[..., 1::2]
        return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)


def alibi_slopes(n_heads: int) -> Tensor:
    """Press et al. 2022 head slopes: geometric, starting at 2^(-8/H) with ratio 2^(-8/H).

    For H not a power of two the paper takes the slopes of the closest power of two 2^k below
    H, then every other slope of 2^(k+1) heads until H slopes are found. Shape (H,).
    """
    if n_heads <= 0:
        raise ValueError(f"n_heads must be positive, got {n_heads}")

    def power_of_two(n: int) -> list[float]:
        start = 2.0 ** (-8.0 / n)
        return [start ** (i + 1) for i in range(n)]

    if math.log2(n_heads).is_integer():
        return torch.tensor(power_of_two(n_heads), dtype=torch.float64)
    closest = 2 ** math.floor(math.log2(n_heads))
    extra = alibi_slopes(2 * closest)[0::2][: n_heads - closest]
    return torch.cat((torch.tensor(power_of_two(closest), dtype=torch.float64), extra))


def alibi_bias(
    q_pos: Tensor, k_pos: Tensor, n_heads: int, causal: bool = True, dtype=torch.float32
) -> Tensor:
    """-m_h * (i - j) for query i, key j. Shape (H, Lq, Lk).

    The paper is causal (j <= i, so i - j >= 0); for bidirectional attention we use the
    symmetric -m_h * |i - j|, the usual encoder variant.
    """
    rel = q_pos.to(torch.float64)[:, None] - k_pos.to(torch.float64)[None, :]  # (Lq, Lk)
    if not causal:
        rel = rel.abs()
    slopes = alibi_slopes(n_heads).to(rel.device)  # (H,)
    return (-slopes[:, None, None] * rel).to(dtype)


def t5_relative_bucket(
    relative_position: Tensor, bidirectional: bool, num_buckets: int = 32, max_distance: int = 128
) -> Tensor:
    """Raffel et al. 2020 (T5) bucket of ``relative_position = key - query``.

    Half the buckets are exact offsets 0..max_exact-1, the rest log-spaced up to
    ``max_distance``; anything farther shares the last bucket. Bidirectional attention spends
    half the buckets on keys after the query; causal attention sees only keys at or before it.
    """
    rel = relative_position.long()
    bucket = torch.zeros_like(rel)
    if bidirectional:
        num_buckets //= 2
        bucket = bucket + (rel > 0).long() * num_buckets
        n = rel.abs()
    else:
        n = (-rel).clamp(min=0)
    max_exact = num_buckets // 2
    is_small = n < max_exact
    # Log-spaced buckets: computed in float32 as in the reference implementation.
    large = max_exact + (
        torch.log(n.float().clamp(min=1) / max_exact)
        / math.log(max_distance / max_exact)
        * (num_buckets - max_exact)
    ).long()
    large = large.clamp(max=num_buckets - 1)
    return bucket + torch.where(is_small, n, large)


# ----------------------------------------------------------------------------- modules


class PositionalEncoding(nn.Module):
    """Base: acts nowhere. Subclasses override the one hook where they act.

    ``positions`` are 1-D tensors of (possibly non-integer) positions. Float positions let the
    extrapolation analysis apply Position Interpolation without touching the model.
    """

    acts_on: ActsOn = "none"

    def __init__(self, params: EncodingParams):
        super().__init__()
        self.params = params

    def input_encoding(self, positions: Tensor) -> Tensor | None:  # (L, d_model)
        return None

    def rotate(self, q: Tensor, k: Tensor, q_pos: Tensor, k_pos: Tensor) -> tuple[Tensor, Tensor]:
        return q, k

    def score_bias(self, q_pos: Tensor, k_pos: Tensor, causal: bool) -> Tensor | None:
        return None  # else (H, Lq, Lk)


class NoPE(PositionalEncoding):
    acts_on = "none"


class Sinusoidal(PositionalEncoding):
    acts_on = "input"

    def __init__(self, params: EncodingParams):
        super().__init__(params)
        _check_even(params.d_model, "sinusoidal d_model")

    def input_encoding(self, positions: Tensor) -> Tensor:
        return sinusoidal_table(positions, self.params.d_model, self.params.base, self.params.angle_dtype)


class Learned(PositionalEncoding):
    acts_on = "input"

    def __init__(self, params: EncodingParams):
        super().__init__(params)
        self.table = nn.Embedding(params.max_len, params.d_model)
        # GPT-2 initialisation: small, so the table starts as a perturbation of the tokens.
        nn.init.normal_(self.table.weight, std=0.02)

    def input_encoding(self, positions: Tensor) -> Tensor:
        if positions.numel() and int(positions.max()) >= self.params.max_len:
            raise PositionOutOfRange(
                f"learned positional table has {self.params.max_len} rows (L_max); position "
                f"{int(positions.max())} has no encoding (a learned table cannot extrapolate)"
            )
        if torch.is_floating_point(positions) and not torch.equal(positions, positions.round()):
            raise PositionOutOfRange("learned positional table needs integer positions")
        return self.table(positions.long())


class Rotary(PositionalEncoding):
    acts_on = "qk"

    def __init__(self, params: EncodingParams):
        super().__init__(params)
        _check_even(params.head_dim, "rope head dimension")
        self.base = params.rope_base  # the extrapolation analysis rescales it (NTK-aware)

    def rotate(self, q, k, q_pos, k_pos):
        p = self.params
        cos_q, sin_q = rope_cos_sin(q_pos, p.head_dim, self.base, p.angle_dtype)
        if k_pos is q_pos:  # self-attention: the same angles, computed once
            cos_k, sin_k = cos_q, sin_q
        else:
            cos_k, sin_k = rope_cos_sin(k_pos, p.head_dim, self.base, p.angle_dtype)
        return (
            apply_rope(q, cos_q, sin_q, p.rope_interleaved),
            apply_rope(k, cos_k, sin_k, p.rope_interleaved),
        )


class ALiBi(PositionalEncoding):
    acts_on = "bias"

    def score_bias(self, q_pos, k_pos, causal):
        return alibi_bias(q_pos, k_pos, self.params.n_heads, causal)


class T5Bias(PositionalEncoding):
    acts_on = "bias"

    def __init__(self, params: EncodingParams):
        super().__init__(params)
        self.bias = nn.Embedding(params.t5_num_buckets, params.n_heads)
        nn.init.zeros_(self.bias.weight)  # starts as NoPE, learns its bias
        # The last bucket grid, (rounded q_pos, rounded k_pos, causal, buckets): the same
        # positions come back in every layer and every step, and t5_relative_bucket (a log over
        # Lq·Lk offsets) is worth skipping. Not state: no parameter, not in the state dict.
        self._bucket_cache: tuple[Tensor, Tensor, bool, Tensor] | None = None

    def buckets(self, q_pos: Tensor, k_pos: Tensor, causal: bool) -> Tensor:
        """The bucket of every (query, key) pair. Shape (Lq, Lk), int64, on the positions' device.

        Buckets depend on the positions only through their rounded values, so those are the
        cache key, compared by value: new positions (another length, Position Interpolation's
        float positions, another device) recompute; equal ones reuse the grid.
        """
        q_key, k_key = q_pos.round().long(), k_pos.round().long()
        cached = self._bucket_cache
        if (
            cached is not None
            and cached[2] == causal
            and all(
                c.device == x.device and c.shape == x.shape and torch.equal(c, x)
                for c, x in ((cached[0], q_key), (cached[1], k_key))
            )
        ):
            return cached[3]
        rel = k_key[None, :] - q_key[:, None]  # (Lq, Lk)
        buckets = t5_relative_bucket(
            rel, not causal, self.params.t5_num_buckets, self.params.t5_max_distance
        )
        self._bucket_cache = (q_key, k_key, causal, buckets)
        return buckets

    def score_bias(self, q_pos, k_pos, causal):
        buckets = self.buckets(q_pos, k_pos, causal)  # (Lq, Lk)
        # The same lookup as self.bias(buckets).permute(2, 0, 1), but gathered straight into
        # (H, Lq·Lk) along the table's bucket axis: contiguous, and its backward (an index_add
        # over buckets) is several times faster on the CPU than nn.Embedding's.
        table = self.bias.weight.T  # (H, num_buckets)
        return table.index_select(1, buckets.flatten()).view(-1, *buckets.shape)  # (H, Lq, Lk)


# ----------------------------------------------------------------------------- the registry


@dataclass(frozen=True)
class EncodingSpec:
    name: str
    acts_on: ActsOn
    module: Callable[[EncodingParams], PositionalEncoding]
    relative: bool  # attention scores depend on positions only through p - q
    learned: bool  # has trainable parameters
    citation: str
    summary: str
    tags: tuple[str, ...] = field(default_factory=tuple)


REGISTRY: dict[str, EncodingSpec] = {
    spec.name: spec
    for spec in (
        EncodingSpec("none", "none", NoPE, relative=True, learned=False,
                     citation="Haviv et al. 2022; Kazemnejad et al. 2023",
                     summary="No positional information (NoPE)."),
        EncodingSpec("sinusoidal", "input", Sinusoidal, relative=False, learned=False,
                     citation="Vaswani et al. 2017",
                     summary="Fixed sin/cos waves of geometric wavelengths added to the input."),
        EncodingSpec("learned", "input", Learned, relative=False, learned=True,
                     citation="Devlin et al. 2019; Radford et al. 2019",
                     summary="A trainable table of L_max absolute position vectors."),
        EncodingSpec("rope", "qk", Rotary, relative=True, learned=False,
                     citation="Su et al. 2021",
                     summary="Queries and keys rotated by position-dependent angles."),
        EncodingSpec("alibi", "bias", ALiBi, relative=True, learned=False,
                     citation="Press et al. 2022",
                     summary="A per-head linear distance penalty on attention scores."),
        EncodingSpec("t5_bias", "bias", T5Bias, relative=True, learned=True,
                     citation="Raffel et al. 2020",
                     summary="A learned per-head bias over log-spaced relative-distance buckets."),
    )
}

ENCODINGS: tuple[str, ...] = tuple(REGISTRY)


def build(name: str, params: EncodingParams) -> PositionalEncoding:
    """The module for encoding ``name``; an unknown name lists the known ones."""
    try:
        spec = REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown encoding {name!r}; known: {', '.join(ENCODINGS)}") from None
    return spec.module(params)
