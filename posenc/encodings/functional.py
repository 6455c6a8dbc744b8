"""The encodings' math as pure tensor functions: each formula once, with its citation and
the shapes it takes and gives. The modules (one file per family) hold parameters and caches and
call these; the analyses and the conformance checks call them directly.

Positions and angles are computed in float32 or wider whatever the model dtype, except where a
caller asks for low precision on purpose (the aliasing analysis).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor


class PositionOutOfRange(ValueError):
    """A position has no encoding (a learned table asked past its last row, xPos's scales past
    what a float holds)."""


def check_even(d: int, what: str) -> None:
    if d <= 0 or d % 2:
        raise ValueError(f"{what} must be a positive even number (sin/cos pairs), got {d}")


def inverse_frequencies(d: int, base: float, dtype: torch.dtype = torch.float64) -> Tensor:
    """omega_i = base^(-2i/d) for i = 0 .. d/2-1. Shape (d/2,)."""
    check_even(d, "dimension")
    return base ** (-torch.arange(0, d, 2, dtype=dtype) / d)


def base_of(omega: Tensor | None) -> float | None:
    """b of omega_i = b^(-2i/d), read back from the first two frequencies (omega_0 / omega_1 =
    b^(2/d), d/2 of them), to 12 digits: the round trip costs a few ulps. None without two."""
    if omega is None or omega.numel() < 2:
        return None
    return float(f"{(omega[0] / omega[1]).item() ** omega.numel():.12g}")


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
    large = (
        max_exact
        + (
            torch.log(n.float().clamp(min=1) / max_exact)
            / math.log(max_distance / max_exact)
            * (num_buckets - max_exact)
        ).long()
    )
    large = large.clamp(max=num_buckets - 1)
    return bucket + torch.where(is_small, n, large)


# xPos (Sun et al. 2022): gamma' of zeta_i = (2i/d + gamma') / (1 + gamma'), the authors' 0.4;
# zeta runs from 0.4/1.4 ~ 0.29 on the fastest pair (whose waves decay fastest) towards 1.
XPOS_GAMMA_PRIME = 0.4


def xpos_zeta(head_dim: int) -> Tensor:
    """Sun et al. 2022: zeta_i = (2i/d + gamma') / (1 + gamma'), i = 0 .. d/2-1, gamma' = 0.4.
    Shape (d/2,), float64."""
    check_even(head_dim, "xpos head dimension")
    i = torch.arange(0, head_dim, 2, dtype=torch.float64)
    return (i / head_dim + XPOS_GAMMA_PRIME) / (1 + XPOS_GAMMA_PRIME)


def xpos_max_span(head_dim: int, scale_base: float, dtype: torch.dtype) -> float:
    """The widest span of positions, hi - lo, whose xPos scales ``dtype`` holds.

    Centred on the midpoint c of the span, the scales zeta_i^(±(p - c)/gamma) reach
    zeta_0^(∓span/2gamma) on the fastest pair. Keeping each within [max^-1/2, max^1/2] of
    ``dtype`` keeps every product of a query scale and a key scale, the factor
    zeta_i^((n - m)/gamma) a score gets, finite too: span <= gamma log(max) / -log(zeta_0).
    About 36 000 positions in float32 and bfloat16, 4 500 in float16, 290 000 in float64
    (gamma = 512); no float holds all of zeta_0^(±2^19/512) = e^(±1283).
    """
    zeta_0 = xpos_zeta(head_dim)[0].item()
    return scale_base * math.log(torch.finfo(dtype).max) / -math.log(zeta_0)


def xpos_scales(
    q_pos: Tensor,
    k_pos: Tensor,
    head_dim: int,
    scale_base: float,
    dtype: torch.dtype = torch.float32,
    storage: torch.dtype | None = None,
) -> tuple[Tensor, Tensor]:
    """xPos's scales: zeta_i^((n - c)/gamma) for query position n and zeta_i^(-(m - c)/gamma)
    for key position m, with c = (lo + hi)/2 the midpoint of every query and key position.
    Shapes (Lq, d/2) and (Lk, d/2), computed in ``dtype`` (float32 or wider in models).

    Why centred: only n - m reaches a score (zeta^((n-c)/gamma) zeta^(-(m-c)/gamma) =
    zeta^((n-m)/gamma)), so any common c gives the same scores, and the midpoint keeps the
    exponents smallest. From position 0 (the paper's formula as written) zeta_0^(n/gamma) is
    below float32's smallest normal from n = 36 000 on; the authors' code centres likewise, on
    the sequence. c moves with a shift of every position, so p - c, and with it the scales,
    is unchanged by one (exactly, while the positions are integers ``dtype`` holds exactly).

    A span wider than :func:`xpos_max_span` in ``dtype`` or ``storage`` (the dtype the scaled
    queries and keys are stored in), whichever holds less, raises PositionOutOfRange: its
    scales, or the vectors they multiply, would overflow to inf or flush to 0.
    """
    q = q_pos.to(dtype)
    k = q if k_pos is q_pos else k_pos.to(dtype)
    lo, hi = torch.minimum(q.min(), k.min()), torch.maximum(q.max(), k.max())
    narrow = min((dtype, storage or dtype), key=lambda t: torch.finfo(t).max)
    limit = xpos_max_span(head_dim, scale_base, narrow)
    span = (hi - lo).item()
    if span > limit:
        raise PositionOutOfRange(
            f"xPos cannot scale positions {lo.item():g} .. {hi.item():g} in {narrow}: their "
            f"span {span:g} is past {limit:.0f} (encoding.xpos.scale_base = {scale_base:g}), "
            "where zeta^(±span/2gamma) leaves its range"
        )
    centre = (lo + hi) / 2
    rate = (xpos_zeta(head_dim).log() / scale_base).to(device=q.device, dtype=dtype)  # (d/2,)
    exponent_q = (q - centre)[:, None] * rate[None, :]  # (Lq, d/2)
    exponent_k = exponent_q if k is q else (k - centre)[:, None] * rate[None, :]
    return exponent_q.exp(), (-exponent_k).exp()


def kerple_log_bias(q_pos: Tensor, k_pos: Tensor, r1: Tensor, r2: Tensor) -> Tensor:
    """Chi et al. 2022 (KERPLE), the logarithmic kernel: bias(h, i, j) = -r1_h log(1 + r2_h
    |i - j|) for query i, key j, with r1, r2 > 0 of shape (H,). Shape (H, Lq, Lk), in r1's
    dtype.

    The paper is causal (i >= j); its kernel is a function of |i - j|, so bidirectional
    attention takes the same formula, symmetric like ALiBi's encoder variant."""
    dist = (q_pos.to(r1.dtype)[:, None] - k_pos.to(r1.dtype)[None, :]).abs()  # (Lq, Lk)
    return -r1[:, None, None] * torch.log1p(r2[:, None, None] * dist)


# Li et al.'s code: c starts at 0.1; L is a learned multiplier (starting at 1) of a fixed
# initial threshold; eps keeps the normaliser away from 0.
FIRE_INIT_C = 0.1
FIRE_EPS = 1e-6


def fire_bias(
    q_pos: Tensor,
    k_pos: Tensor,
    c: Tensor,
    threshold: Tensor,
    w1: Tensor,
    b1: Tensor,
    w2: Tensor,
    b2: Tensor,
    eps: float = FIRE_EPS,
) -> Tensor:
    """Li et al. 2024 (FIRE): bias(h, i, j) = f_θ(ψ(i - j) / ψ(max(L, i)))_h for query i, key j,
    with ψ(x) = log(c x + 1) and f_θ(x) = w2 relu(w1 x + b1) + b2 an MLP from one input to H
    outputs (w1 (W, 1), b1 (W,), w2 (H, W), b2 (H,)); c and L (0-d) are learned. As in the
    authors' code, ψ takes |c x| (so any learned c is valid) and the normaliser gets + eps.

    Dividing by ψ of the query's position maps every distance into [0, 1] however long the
    sequence (progressive interpolation); L floors the normaliser for short sequences. So the
    bias depends on i beyond i - j once i > L: FIRE is not shift invariant there. The paper is
    causal (i >= j); |c (i - j)| makes a key after the query at the same distance get the same
    bias, the bidirectional variant used here. Shape (H, Lq, Lk), in w1's dtype."""
    q, k = q_pos.to(w1.dtype), k_pos.to(w1.dtype)
    dist = (q[:, None] - k[None, :]).abs()  # (Lq, Lk)
    normaliser = torch.log1p((c * torch.maximum(q, threshold)).abs())  # (Lq,)
    x = torch.log1p((c * dist).abs()) / (normaliser[:, None] + eps)  # (Lq, Lk)
    # Both layers as one matmul each over the Lq·Lk pairs, straight into (H, Lq·Lk).
    # In place: addmm's backward does not need its output, and (W, Lq·Lk) is the largest tensor.
    hidden = torch.addmm(b1[:, None], w1, x.reshape(1, -1)).relu_()  # (W, Lq·Lk)
    return torch.addmm(b2[:, None], w2, hidden).view(-1, *x.shape)  # (H, Lq, Lk)
