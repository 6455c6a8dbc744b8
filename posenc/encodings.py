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

import dataclasses
import functools
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
    xpos_scale_base: float = 512.0  # xPos's gamma: scores scale by zeta_i^((n - m) / gamma)
    rope_partial_fraction: float = 0.25  # share of each head partial RoPE rotates (rotary_pct)
    t5_num_buckets: int = 32
    t5_max_distance: int = 128
    fire_threshold: float = 512.0  # FIRE's L at initialisation (Li et al.'s code: 512)
    fire_mlp_width: int = 32  # FIRE's hidden width (Li et al.: 32)
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


# ----------------------------------------------------------------------------- modules


class PositionalEncoding(nn.Module):
    """Base: acts nowhere. Subclasses override the one hook where they act.

    ``positions`` are 1-D tensors of (possibly non-integer) positions. Float positions let the
    extrapolation analysis apply Position Interpolation without touching the model.

    Besides the hooks, each place of action says what the analyses need of it, so that no
    analysis branches on a name or on ``acts_on``: :meth:`kernel` (the positional similarity
    K(p, q) that the similarity analysis plots) and :meth:`workload` (the work the complexity
    analysis times). A subclass acting in a new way overrides them too.
    """

    acts_on: ActsOn = "none"
    # Whether its own work grows as L² (a materialised (Lq, Lk) score bias) rather than L: the
    # complexity analysis times such encodings only up to its ``bias_max_len``.
    quadratic_cost: bool = False

    def __init__(self, params: EncodingParams):
        super().__init__()
        self.params = params

    def input_encoding(self, positions: Tensor) -> Tensor | None:  # (L, d_model)
        return None

    def rotate(self, q: Tensor, k: Tensor, q_pos: Tensor, k_pos: Tensor) -> tuple[Tensor, Tensor]:
        return q, k

    def score_bias(self, q_pos: Tensor, k_pos: Tensor, causal: bool) -> Tensor | None:
        return None  # else (H, Lq, Lk)

    def kernel(self, positions: Tensor) -> Tensor:
        """K(p, q) over ``positions``: how alike the encoding makes two positions. Shape (N, N).

        Nowhere: every pair alike (ones)."""
        n = positions.shape[0]
        return torch.ones(n, n, dtype=torch.float64, device=positions.device)

    def frequencies(self) -> Tensor | None:
        """The angular frequencies omega_i of the waves this encoding writes a position p into
        (angles p * omega_i), float64, shape (pairs,); None for an encoding without waves."""
        return None

    def pair_decay(self, distance: Tensor) -> Tensor | None:
        """The factor each wave's term of a score carries at relative distance r = n - m of a
        causal query n after its key m, beside its rotation (float64, shape (R, pairs) for
        ``distance`` (R,)); None where the waves are not scaled (a pure rotation)."""
        return None

    def angle_table(self, positions: Tensor, dtype: torch.dtype) -> Tensor | None:
        """The table of sines and cosines of those angles for ``positions``, with positions and
        angles computed in ``dtype`` (a model uses float32 or wider; the aliasing analysis asks
        for low precision on purpose): the rows an input encoding adds, or the cos/sin a
        rotation turns by. Shape (L, 2 * pairs); None for an encoding without waves."""
        return None

    def workload(self, positions: Tensor, batch: int, causal: bool) -> Callable[[], object] | None:
        """A zero-argument call doing this encoding's own work for ``positions``; None when
        there is none (NoPE)."""
        return None


class InputEncoding(PositionalEncoding):
    """Adds a vector per position to the token embedding (:meth:`input_encoding`)."""

    acts_on = "input"

    def kernel(self, positions: Tensor) -> Tensor:
        """Cosine similarity of the position vectors."""
        table = self.input_encoding(positions).double()  # (N, D)
        unit = table / table.norm(dim=-1, keepdim=True)
        return unit @ unit.T

    def workload(self, positions, batch, causal):
        return lambda: self.input_encoding(positions)


class QKEncoding(PositionalEncoding):
    """Transforms queries and keys in every attention layer (:meth:`rotate`)."""

    acts_on = "qk"

    def kernel(self, positions: Tensor) -> Tensor:
        """K(p, q) = tr(R_p^T R_q) / Dh: every basis vector e_j transformed at p and at q, as
        the score of a query at p and a key at q averaged over the basis."""
        dh, n = self.params.head_dim, positions.shape[0]
        basis = torch.eye(dh, dtype=torch.float64, device=positions.device)[:, None, None, :]
        basis = basis.expand(dh, 1, n, dh)  # (Dh, 1, N, Dh): e_j at every position
        q, k = self.rotate(basis, basis, positions, positions)
        return torch.einsum("jpd,jqd->pq", q[:, 0], k[:, 0]) / dh

    def workload(self, positions, batch, causal):
        p, length = self.params, positions.shape[0]
        q, k = _random_qk((batch, p.n_heads, length, p.head_dim), positions.device)
        return lambda: self.rotate(q, k, positions, positions)


@functools.lru_cache(maxsize=1)
def _random_qk(shape: tuple[int, ...], device: torch.device) -> tuple[Tensor, Tensor]:
    """Seeded uniform queries and keys of ``shape`` (B, H, L, Dh) for :meth:`workload`. Kept
    for the next call: every rotary encoding timed at one width and length rotates the same
    ones, and drawing a GiB of them took longer than rotating it (the rotation's cost does not
    depend on the values)."""
    g = torch.Generator(device=device).manual_seed(0)
    q = torch.empty(shape, device=device).uniform_(-1.0, 1.0, generator=g)
    return q, torch.empty(shape, device=device).uniform_(-1.0, 1.0, generator=g)


class BiasEncoding(PositionalEncoding):
    """Adds a bias to the attention scores of every layer (:meth:`score_bias`)."""

    acts_on = "bias"
    quadratic_cost = True  # the (H, Lq, Lk) bias is materialised

    def kernel(self, positions: Tensor) -> Tensor:
        """exp(bias(p, q)) averaged over heads: the factor the bias puts on attention weights
        (bidirectional, so both orders of a pair count)."""
        return self.score_bias(positions, positions, causal=False).double().exp().mean(dim=0)

    def workload(self, positions, batch, causal):
        return lambda: self.score_bias(positions, positions, causal)


class NoPE(PositionalEncoding):
    acts_on = "none"


class Sinusoidal(InputEncoding):
    def __init__(self, params: EncodingParams):
        super().__init__(params)
        _check_even(params.d_model, "sinusoidal d_model")

    def input_encoding(self, positions: Tensor) -> Tensor:
        return sinusoidal_table(
            positions, self.params.d_model, self.params.base, self.params.angle_dtype
        )

    def frequencies(self) -> Tensor:
        return inverse_frequencies(self.params.d_model, self.params.base)

    def angle_table(self, positions: Tensor, dtype: torch.dtype) -> Tensor:
        return sinusoidal_table(positions, self.params.d_model, self.params.base, dtype)


# The naive references (EncodingSpec.reference): one Python float at a time, from the papers'
# formulas, sharing no code with the vectorised hooks above; the tests hold each hook to its own.


def sinusoidal_reference(module: PositionalEncoding, positions: Tensor) -> Tensor:
    """Vaswani et al. 2017, entry by entry: PE(p, 2i) = sin(p / base^(2i/d)) and
    PE(p, 2i+1) = cos(p / base^(2i/d)), with d and base from ``module.params``. (L, d)."""
    d, base = module.params.d_model, module.params.base
    rows = []
    for p in positions.tolist():
        row = []
        for i in range(d // 2):
            angle = p / base ** (2 * i / d)
            row += [math.sin(angle), math.cos(angle)]
        rows.append(row)
    return torch.tensor(rows, dtype=torch.float64).reshape(len(rows), d)


class Learned(InputEncoding):
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


def learned_reference(module: PositionalEncoding, positions: Tensor) -> Tensor:
    """Devlin et al. 2019 / Radford et al. 2019: position p's vector is row p of the trained
    table, read here entry by entry; only integer positions 0 <= p < L_max have a row. (L, d)."""
    weight = module.table.weight.detach()
    rows = []
    for p in positions.tolist():
        if p != int(p) or not 0 <= p < weight.shape[0]:
            raise PositionOutOfRange(f"position {p} has no row in a table of {weight.shape[0]}")
        rows.append([weight[int(p), j].item() for j in range(weight.shape[1])])
    return torch.tensor(rows, dtype=torch.float64).reshape(len(rows), weight.shape[1])


class Rotary(QKEncoding):
    def __init__(self, params: EncodingParams):
        super().__init__(params)
        _check_even(params.head_dim, "rope head dimension")
        self.base = params.rope_base  # the extrapolation analysis rescales it (NTK-aware)
        # A context extension (posenc.rope_scaling) while set: (inverse frequencies of the
        # rotated pairs, float64; attention factor on cos and sin) in place of base^(-2i/w).
        self.scaling: tuple[Tensor, float] | None = None

    def frequencies(self) -> Tensor:
        return inverse_frequencies(self.params.head_dim, self.base)

    @property
    def rotated_width(self) -> int:
        """The dimensions of each head that turn (a context extension rescales their pairs)."""
        return self.params.head_dim

    def _cos_sin(self, positions: Tensor, width: int, dtype: torch.dtype):
        if self.scaling is None:
            return rope_cos_sin(positions, width, self.base, dtype)
        inv_freq, factor = self.scaling
        if inv_freq.shape != (width // 2,):
            raise ValueError(
                f"a context extension of {tuple(inv_freq.shape)} frequencies for a rotated "
                f"width of {width} ({width // 2} pairs)"
            )
        # As angles(): frequencies in float64, cast once, one rounding of the product.
        theta = positions.to(dtype)[:, None] * inv_freq.to(device=positions.device, dtype=dtype)
        return theta.cos() * factor, theta.sin() * factor

    def angle_table(self, positions: Tensor, dtype: torch.dtype) -> Tensor:
        """(cos p*theta_0, ..., cos p*theta_{Dh/2-1}, sin p*theta_0, ...): the cos/sin table."""
        return torch.cat(rope_cos_sin(positions, self.params.head_dim, self.base, dtype), -1)

    def cos_sin(self, q_pos: Tensor, k_pos: Tensor, width: int | None = None):
        """((cos, sin) of the queries, (cos, sin) of the keys) over ``width`` rotated dimensions
        (the head width by default), in the params' angle dtype; self-attention's shared
        positions computed once. Each (L, width/2)."""
        p = self.params
        width = width or p.head_dim
        at_q = self._cos_sin(q_pos, width, p.angle_dtype)
        at_k = at_q if k_pos is q_pos else self._cos_sin(k_pos, width, p.angle_dtype)
        return at_q, at_k

    def rotate(self, q, k, q_pos, k_pos):
        (cos_q, sin_q), (cos_k, sin_k) = self.cos_sin(q_pos, k_pos)
        interleaved = self.params.rope_interleaved
        return apply_rope(q, cos_q, sin_q, interleaved), apply_rope(k, cos_k, sin_k, interleaved)


def _turn_pairs_by_hand(
    x: Tensor, positions: Tensor, width: int, interleaved: bool, base: float, scale=None
) -> Tensor:
    """The naive loop behind the rotary references: in each vector of ``x`` (..., L, Dh) at
    position p, pair i of the first ``width`` dimensions, (x[2i], x[2i+1]) interleaved or
    (x[i], x[i + width/2]) half split, turns by t = p * base^(-2i/width) to
    (a cos t - b sin t, a sin t + b cos t), times ``scale(i, p)`` if given; the other
    dimensions stay. float64, x's shape."""
    pairs = [(2 * i, 2 * i + 1) if interleaved else (i, i + width // 2) for i in range(width // 2)]
    d = x.shape[-1]
    rows = x.detach().double().reshape(-1, x.shape[-2], d).tolist()  # (N, L, Dh)
    for matrix in rows:
        for vector, p in zip(matrix, positions.tolist(), strict=True):
            for i, (ia, ib) in enumerate(pairs):
                t = p * base ** (-2 * i / width)
                factor = 1.0 if scale is None else scale(i, p)
                a, b = vector[ia], vector[ib]
                vector[ia] = factor * (a * math.cos(t) - b * math.sin(t))
                vector[ib] = factor * (a * math.sin(t) + b * math.cos(t))
    return torch.tensor(rows, dtype=torch.float64).reshape(x.shape)


def rope_reference(
    module: PositionalEncoding, q: Tensor, k: Tensor, q_pos: Tensor, k_pos: Tensor
) -> tuple[Tensor, Tensor]:
    """Su et al. 2021, eq. (34), pair by pair: the pair (a, b) of a vector at position p turns
    by t = p * base^(-2i/Dh) to (a cos t - b sin t, a sin t + b cos t). Pair i is
    (x[2i], x[2i+1]) interleaved, (x[i], x[i + Dh/2]) half split (``params.rope_interleaved``);
    base is ``module.base``, which NTK-aware scaling rescales. q (..., Lq, Dh), k (..., Lk, Dh)."""
    interleaved, base = module.params.rope_interleaved, module.base
    return (
        _turn_pairs_by_hand(q, q_pos, q.shape[-1], interleaved, base),
        _turn_pairs_by_hand(k, k_pos, k.shape[-1], interleaved, base),
    )


# xPos (Sun et al. 2022): gamma' of zeta_i = (2i/d + gamma') / (1 + gamma'), the authors' 0.4;
# zeta runs from 0.4/1.4 ~ 0.29 on the fastest pair (whose waves decay fastest) towards 1.
XPOS_GAMMA_PRIME = 0.4


def xpos_zeta(head_dim: int) -> Tensor:
    """Sun et al. 2022: zeta_i = (2i/d + gamma') / (1 + gamma'), i = 0 .. d/2-1, gamma' = 0.4.
    Shape (d/2,), float64."""
    _check_even(head_dim, "xpos head dimension")
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
            f"span {span:g} is past {limit:.0f} (encoding.xpos_scale_base = {scale_base:g}), "
            "where zeta^(±span/2gamma) leaves its range"
        )
    centre = (lo + hi) / 2
    rate = (xpos_zeta(head_dim).log() / scale_base).to(device=q.device, dtype=dtype)  # (d/2,)
    exponent_q = (q - centre)[:, None] * rate[None, :]  # (Lq, d/2)
    exponent_k = exponent_q if k is q else (k - centre)[:, None] * rate[None, :]
    return exponent_q.exp(), (-exponent_k).exp()


class XPos(Rotary):
    """Sun et al. 2022 (xPos): RoPE's rotation R(p) with an exponential scale per frequency,

        q_n -> zeta_i^(n/gamma) R(n) q_n,    k_m -> zeta_i^(-m/gamma) R(m) k_m,

    pair by pair, zeta_i = (2i/d + 0.4) / 1.4 and scale base gamma (``xpos_scale_base``, 512
    in the paper). A score then carries zeta_i^((n - m)/gamma) on pair i: it depends on n - m
    only, and on a causal query (n >= m) decays with distance, fastest on the fastest waves.
    The scales are computed from positions centred on their midpoint (:func:`xpos_scales`),
    which leaves every score as it is and keeps them finite over spans up to
    :func:`xpos_max_span`; a wider span raises PositionOutOfRange (xPos is bounded there: no
    float holds its scales). Keys after the query (bidirectional attention) get a factor that
    grows with distance instead, as the formula says; the paper's models are causal.

    Rotation angles, frequencies and the cos/sin table are RoPE's (inherited): the aliasing
    analysis reads the waves, which xPos leaves as RoPE has them. Each scale multiplies the
    cos and sin it goes with before the rotation, so a scaled pair is rounded as RoPE's is.
    """

    def pair_decay(self, distance: Tensor) -> Tensor:
        """zeta_i^(r / gamma) on pair i: the scale a score of a query r positions after its key
        carries there (below 1, and falling with r, on every pair)."""
        zeta = xpos_zeta(self.params.head_dim).to(device=distance.device, dtype=torch.float64)
        r = distance.to(torch.float64)[:, None]
        return zeta[None, :] ** (r / self.params.xpos_scale_base)

    def rotate(self, q, k, q_pos, k_pos):
        p = self.params
        (cos_q, sin_q), (cos_k, sin_k) = self.cos_sin(q_pos, k_pos)
        up, down = xpos_scales(
            q_pos, k_pos, p.head_dim, p.xpos_scale_base, p.angle_dtype, storage=q.dtype
        )  # (Lq, Dh/2), (Lk, Dh/2)
        return (
            apply_rope(q, cos_q * up, sin_q * up, p.rope_interleaved),
            apply_rope(k, cos_k * down, sin_k * down, p.rope_interleaved),
        )


def xpos_reference(
    module: PositionalEncoding, q: Tensor, k: Tensor, q_pos: Tensor, k_pos: Tensor
) -> tuple[Tensor, Tensor]:
    """Sun et al. 2022, pair by pair: pair i of a vector at position p turns by
    t = p * base^(-2i/Dh) as in RoPE, then is multiplied by zeta_i^(s (p - c)/gamma), s = +1
    for a query and -1 for a key, zeta_i = (2i/Dh + 0.4)/1.4, c = (lowest + highest position
    of queries and keys)/2. Pairs, base and gamma from the module. q (..., Lq, Dh), k (..., Lk,
    Dh)."""
    interleaved, base = module.params.rope_interleaved, module.base
    gamma = module.params.xpos_scale_base
    every = q_pos.tolist() + k_pos.tolist()
    centre = (min(every) + max(every)) / 2

    def turn(x: Tensor, positions: Tensor, sign: int) -> Tensor:
        d = x.shape[-1]

        def scale(i: int, p: float) -> float:
            return ((2 * i / d + 0.4) / 1.4) ** (sign * (p - centre) / gamma)

        return _turn_pairs_by_hand(x, positions, d, interleaved, base, scale)

    return turn(q, q_pos, 1), turn(k, k_pos, -1)


def rope_partial_width(head_dim: int, fraction: float) -> int:
    """GPT-NeoX's rotary_ndims = int(head_dim * rotary_pct): how many leading dimensions of a
    head partial RoPE rotates. A width that is odd or zero (no whole pair to turn) is a
    ValueError naming the config key."""
    width = int(head_dim * fraction)
    if width <= 0 or width % 2 or width > head_dim:
        raise ValueError(
            f"encoding.rope_partial_fraction = {fraction:g}: rotates int({fraction:g} x "
            f"{head_dim}) = {width} of a head's {head_dim} dimensions, which must be a "
            "positive even number (RoPE turns pairs)"
        )
    return width


def rope_partial_check(params: EncodingParams) -> list[str]:
    """The config check of :class:`PartialRotary` (``EncodingSpec.checks``): its rotated width
    at ``params``' head width."""
    try:
        rope_partial_width(params.head_dim, params.rope_partial_fraction)
    except ValueError as error:
        return [f"config key {error}"]
    return []


class PartialRotary(Rotary):
    """Partial RoPE (GPT-NeoX, Black et al. 2022: ``rotary_pct``): RoPE on the first
    r = int(f * Dh) dimensions of every head, f = ``rope_partial_fraction`` (0.25 in GPT-NeoX),
    with the frequencies of an r-wide head, omega_i = base^(-2i/r), i < r/2; the other Dh - r
    dimensions pass unchanged, without position. Scores are RoPE's on the rotated part plus a
    position-free dot product on the rest: relative. r must be even and positive
    (:func:`rope_partial_width`).

    Barbero et al. 2024 find that trained RoPE models use the fastest frequencies for
    positional heads and the slowest as semantic channels that rotation makes unreliable over
    long distances, and that rotating only part of each head helps; their p-RoPE keeps the
    fastest share of the full head's frequencies, whereas GPT-NeoX's rotary_pct (this one)
    spreads base^(-2i/r) over the rotated width. Pairs within the rotated part follow
    ``rope_interleaved`` as RoPE's do (GPT-NeoX: half split).
    """

    def __init__(self, params: EncodingParams):
        super().__init__(params)
        self.width = rope_partial_width(params.head_dim, params.rope_partial_fraction)

    def frequencies(self) -> Tensor:
        return inverse_frequencies(self.width, self.base)

    @property
    def rotated_width(self) -> int:
        return self.width

    def angle_table(self, positions: Tensor, dtype: torch.dtype) -> Tensor:
        """The rotated part's cos/sin table, (cos p*omega_0, ..., sin p*omega_0, ...)."""
        return torch.cat(rope_cos_sin(positions, self.width, self.base, dtype), -1)

    def rotate(self, q, k, q_pos, k_pos):
        p, r = self.params, self.width
        (cos_q, sin_q), (cos_k, sin_k) = self.cos_sin(q_pos, k_pos, r)

        def turn(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:  # (..., L, Dh)
            rotated = apply_rope(x[..., :r], cos, sin, p.rope_interleaved)
            return torch.cat((rotated, x[..., r:]), dim=-1)

        return turn(q, cos_q, sin_q), turn(k, cos_k, sin_k)


def rope_partial_reference(
    module: PositionalEncoding, q: Tensor, k: Tensor, q_pos: Tensor, k_pos: Tensor
) -> tuple[Tensor, Tensor]:
    """GPT-NeoX's partial rotary, pair by pair: with r = int(f * Dh) (f from the module's
    params), pair i < r/2 of the first r dimensions, (x[2i], x[2i+1]) interleaved or
    (x[i], x[i + r/2]) half split, turns by t = p * base^(-2i/r); dimensions r .. Dh-1 stay as
    they are. q (..., Lq, Dh), k (..., Lk, Dh)."""
    interleaved, base = module.params.rope_interleaved, module.base

    def turn(x: Tensor, positions: Tensor) -> Tensor:
        r = int(x.shape[-1] * module.params.rope_partial_fraction)
        return _turn_pairs_by_hand(x, positions, r, interleaved, base)

    return turn(q, q_pos), turn(k, k_pos)


class ALiBi(BiasEncoding):
    def score_bias(self, q_pos, k_pos, causal):
        return alibi_bias(q_pos, k_pos, self.params.n_heads, causal)


def _alibi_slopes_by_hand(n: int) -> list[float]:
    """Press et al. 2022, section 3: for n a power of two, m_h = 2^(-8h/n), h = 1 .. n; else
    the slopes of the largest power of two below n, then every other slope of twice as many
    heads, until there are n (the paper's reference code)."""
    if n & (n - 1) == 0:
        return [2.0 ** (-8.0 * h / n) for h in range(1, n + 1)]
    below = 1
    while 2 * below < n:
        below *= 2
    return _alibi_slopes_by_hand(below) + _alibi_slopes_by_hand(2 * below)[0::2][: n - below]


def alibi_reference(
    module: PositionalEncoding, q_pos: Tensor, k_pos: Tensor, causal: bool
) -> Tensor:
    """Press et al. 2022, pair by pair: bias(h, i, j) = -m_h (i - j) for query i and key j, or
    -m_h |i - j| bidirectionally. (H, Lq, Lk)."""
    slopes = _alibi_slopes_by_hand(module.params.n_heads)
    bias = [
        [[-m * ((i - j) if causal else abs(i - j)) for j in k_pos.tolist()] for i in q_pos.tolist()]
        for m in slopes
    ]
    return torch.tensor(bias, dtype=torch.float64).reshape(len(slopes), len(q_pos), len(k_pos))


class T5Bias(BiasEncoding):
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


def t5_bucket_by_hand(relative: int, bidirectional: bool, num_buckets: int, max_distance: int):
    """Raffel et al. 2020 (mesh-tensorflow's _relative_position_bucket), one offset
    ``relative = key - query`` at a time: with n = query - key, offsets 0 .. max_exact-1 get a
    bucket each, farther ones max_exact + floor(log(n / max_exact) / log(max_distance /
    max_exact) * (num_buckets - max_exact)), capped at the last bucket; bidirectional
    attention gives keys after the query the upper half of the buckets."""
    bucket, n = 0, -relative
    if bidirectional:
        num_buckets //= 2
        if n < 0:
            bucket += num_buckets
        n = abs(n)
    else:
        n = max(n, 0)
    max_exact = num_buckets // 2
    if n < max_exact:
        return bucket + n
    far = max_exact + int(
        math.log(n / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
    )
    return bucket + min(far, num_buckets - 1)


def t5_reference(module: PositionalEncoding, q_pos: Tensor, k_pos: Tensor, causal: bool) -> Tensor:
    """Raffel et al. 2020, pair by pair: bias(h, i, j) is the learned scalar of head h for the
    bucket of the offset round(j) - round(i). (H, Lq, Lk)."""
    p, weight = module.params, module.bias.weight.detach()  # (num_buckets, H)
    n_heads = weight.shape[1]
    bias = [[[0.0] * len(k_pos) for _ in q_pos.tolist()] for _ in range(n_heads)]
    for a, i in enumerate(q_pos.tolist()):
        for b, j in enumerate(k_pos.tolist()):
            bucket = t5_bucket_by_hand(
                round(j) - round(i), not causal, p.t5_num_buckets, p.t5_max_distance
            )
            for h in range(n_heads):
                bias[h][a][b] = weight[bucket, h].item()
    return torch.tensor(bias, dtype=torch.float64).reshape(n_heads, len(q_pos), len(k_pos))


def kerple_log_bias(q_pos: Tensor, k_pos: Tensor, r1: Tensor, r2: Tensor) -> Tensor:
    """Chi et al. 2022 (KERPLE), the logarithmic kernel: bias(h, i, j) = -r1_h log(1 + r2_h
    |i - j|) for query i, key j, with r1, r2 > 0 of shape (H,). Shape (H, Lq, Lk), in r1's
    dtype.

    The paper is causal (i >= j); its kernel is a function of |i - j|, so bidirectional
    attention takes the same formula, symmetric like ALiBi's encoder variant."""
    dist = (q_pos.to(r1.dtype)[:, None] - k_pos.to(r1.dtype)[None, :]).abs()  # (Lq, Lk)
    return -r1[:, None, None] * torch.log1p(r2[:, None, None] * dist)


# Chi et al.'s code clamps r1 and r2 at 1e-2 and draws them per head as r1 ~ U(0, 2),
# r2 ~ U(0, 1).
KERPLE_MIN = 1e-2


def _softplus_inverse(y: Tensor) -> Tensor:
    """x with log(1 + e^x) = y > 0."""
    return y + torch.log(-torch.expm1(-y))


class KerpleLog(BiasEncoding):
    """r1 and r2 are stored through a softplus, r = log(1 + e^raw), so they stay positive
    under any optimiser step or redraw; Chi et al.'s code keeps them positive by clamping the
    parameters in place at every forward instead. Initialised as that code: r1 ~ U(0, 2) and
    r2 ~ U(0, 1) per head, at least 1e-2."""

    def __init__(self, params: EncodingParams):
        super().__init__(params)
        r1 = (2 * torch.rand(params.n_heads)).clamp(min=KERPLE_MIN)
        r2 = torch.rand(params.n_heads).clamp(min=KERPLE_MIN)
        self.r1_raw = nn.Parameter(_softplus_inverse(r1))  # (H,)
        self.r2_raw = nn.Parameter(_softplus_inverse(r2))  # (H,)

    def score_bias(self, q_pos, k_pos, causal):
        # float32 or wider: distances are exact integers there up to 2^24, not in bfloat16.
        dtype = torch.promote_types(self.r1_raw.dtype, torch.float32)
        softplus = nn.functional.softplus
        r1, r2 = softplus(self.r1_raw.to(dtype)), softplus(self.r2_raw.to(dtype))
        return kerple_log_bias(q_pos, k_pos, r1, r2)


def kerple_reference(
    module: PositionalEncoding, q_pos: Tensor, k_pos: Tensor, causal: bool
) -> Tensor:
    """Chi et al. 2022, the logarithmic kernel pair by pair: bias(h, i, j) =
    -r1_h log(1 + r2_h |i - j|), with r = log(1 + e^raw) from the module's raw parameters,
    causal or not. (H, Lq, Lk)."""
    r1 = [math.log(1 + math.exp(raw)) for raw in module.r1_raw.tolist()]
    r2 = [math.log(1 + math.exp(raw)) for raw in module.r2_raw.tolist()]
    bias = [
        [[-a * math.log(1 + b * abs(i - j)) for j in k_pos.tolist()] for i in q_pos.tolist()]
        for a, b in zip(r1, r2, strict=True)
    ]
    return torch.tensor(bias, dtype=torch.float64).reshape(len(r1), len(q_pos), len(k_pos))


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


class FIRE(BiasEncoding):
    """Li et al.'s 2-layer MLP of width ``fire_mlp_width`` (32 in the paper), shared by the
    heads with one output each; c = 0.1 and L = ``fire_threshold`` at initialisation, L as
    |s| times that value with s learned (1 at first), as in the authors' code.

    Its MLP runs over every (query, key) pair, but once per forward: the stack computes a score
    bias once for all of its layers (:class:`posenc.model.TransformerStack`)."""

    def __init__(self, params: EncodingParams):
        super().__init__(params)
        if params.fire_mlp_width <= 0 or params.fire_threshold <= 0:
            raise ValueError(
                f"FIRE needs a positive MLP width and threshold, got {params.fire_mlp_width} "
                f"and {params.fire_threshold}"
            )
        self.hidden = nn.Linear(1, params.fire_mlp_width)
        self.out = nn.Linear(params.fire_mlp_width, params.n_heads)
        self.c = nn.Parameter(torch.tensor(FIRE_INIT_C))
        self.threshold_scale = nn.Parameter(torch.tensor(1.0))

    def threshold(self) -> Tensor:
        """L = |s| · fire_threshold (0-d)."""
        return (self.threshold_scale * self.params.fire_threshold).abs()

    def score_bias(self, q_pos, k_pos, causal):
        # float32 or wider, autocast or not: the MLP's input tells distances near 1 apart by
        # about 1/L, finer than bfloat16's 2^-8 at lengths we evaluate.
        dtype = torch.promote_types(self.hidden.weight.dtype, torch.float32)
        weights = (self.hidden.weight, self.hidden.bias, self.out.weight, self.out.bias)
        with torch.autocast(q_pos.device.type, enabled=False):
            return fire_bias(
                q_pos,
                k_pos,
                self.c.to(dtype),
                self.threshold().to(dtype),
                *(w.to(dtype) for w in weights),
            )


def fire_reference(
    module: PositionalEncoding, q_pos: Tensor, k_pos: Tensor, causal: bool
) -> Tensor:
    """Li et al. 2024, pair by pair: x = log(|c (i - j)| + 1) / (log(|c max(L, i)| + 1) + eps)
    with L = |s| fire_threshold, then head h's output of the MLP, sum_w w2[h, w] max(0,
    w1[w] x + b1[w]) + b2[h], causal or not. (H, Lq, Lk)."""
    c, s = module.c.item(), module.threshold_scale.item()
    threshold = abs(s * module.params.fire_threshold)
    w1 = module.hidden.weight.detach()[:, 0].tolist()
    b1 = module.hidden.bias.tolist()
    w2, b2 = module.out.weight.tolist(), module.out.bias.tolist()
    bias = [[[0.0] * len(k_pos) for _ in q_pos.tolist()] for _ in b2]
    for a, i in enumerate(q_pos.tolist()):
        normaliser = math.log(abs(c * max(threshold, i)) + 1) + FIRE_EPS
        for b, j in enumerate(k_pos.tolist()):
            x = math.log(abs(c * (i - j)) + 1) / normaliser
            hidden = [max(0.0, w * x + v) for w, v in zip(w1, b1, strict=True)]
            for h, (row, bh) in enumerate(zip(w2, b2, strict=True)):
                bias[h][a][b] = sum(w * z for w, z in zip(row, hidden, strict=True)) + bh
    return torch.tensor(bias, dtype=torch.float64).reshape(len(b2), len(q_pos), len(k_pos))


# ----------------------------------------------------------------------------- the registry


@dataclass(frozen=True)
class EncodingSpec:
    """Everything the study knows about one encoding; :func:`register` adds it.

    ``module`` builds it from :class:`EncodingParams`; ``acts_on`` must agree with the
    module's own (its base class). ``citation`` is a key, or ``; ``-separated keys, of
    ``posenc/references.yaml``, or free text for an encoding from outside. ``color`` and
    ``marker`` fix its style in every figure; left out, one is assigned by registry order.
    ``extensions`` names the context-extension methods it supports (``pi``, ``ntk``), which
    the extrapolation analysis evaluates with every model of the encoding.

    ``reference`` is a deliberately naive per-element Python loop that computes the encoding's
    hook output from its formula, sharing no code with the module: the tests hold every
    registered encoding's hook to it (``tests/test_encodings.py``). It takes the built module
    (to read its parameters: ``module.params``, a trained table) and returns float64, with one
    calling convention per place of action, mirroring the hook it checks:

    * ``input``: ``reference(module, positions) -> (L, d_model)``, as ``input_encoding``;
    * ``qk``:    ``reference(module, q, k, q_pos, k_pos) -> (q, k)``, as ``rotate``, with q of
      shape (..., Lq, Dh) and k of shape (..., Lk, Dh);
    * ``bias``:  ``reference(module, q_pos, k_pos, causal) -> (H, Lq, Lk)``, as ``score_bias``;
    * ``none``:  None; the tests check that every hook is then neutral.

    ``checks`` are what the module cannot be built with, said before any job: each takes the
    :class:`EncodingParams` of one model an analysis builds (the config's ``encoding:`` block
    at one width, ``AnalysisSpec.encoding_shapes``) and returns problems naming the config
    key, as ``AnalysisSpec.checks`` do. The workflow runs them at parse time for every
    configured encoding (:func:`posenc.registry.encoding_problems`).
    """

    name: str
    acts_on: ActsOn
    module: Callable[[EncodingParams], PositionalEncoding]
    relative: bool  # attention scores depend on positions only through p - q
    learned: bool  # has trainable parameters
    citation: str
    summary: str
    tags: tuple[str, ...] = field(default_factory=tuple)
    color: str | None = None
    marker: str | None = None
    extensions: tuple[str, ...] = ()
    reference: Callable | None = None  # the naive loop the tests compare the hook with
    checks: tuple[Callable[[EncodingParams], list[str]], ...] = ()

    @property
    def positional(self) -> bool:
        """Whether it gives the model any position at all (NoPE does not)."""
        return self.acts_on != "none"

    def metadata(self) -> dict:
        """The JSON-serialisable part: what the workflow reads at parse time, without torch
        (:mod:`posenc.registry`)."""
        return {
            "acts_on": self.acts_on,
            "relative": self.relative,
            "learned": self.learned,
            "citation": self.citation,
            "summary": self.summary,
            "tags": list(self.tags),
            "color": self.color,
            "marker": self.marker,
            "extensions": list(self.extensions),
            "checks": len(self.checks),  # the workflow asks the registry only if there are any
            # RoPE-family: the module turns query/key pairs by frequencies a context extension
            # can rescale (Rotary's scaling hook).
            "rotary": isinstance(self.module, type) and issubclass(self.module, Rotary),
        }


REGISTRY: dict[str, EncodingSpec] = {}
# Each place of action's class: what the analyses ask of an encoding acting there.
PLACES: dict[str, type[PositionalEncoding]] = {
    "none": NoPE,
    "input": InputEncoding,
    "qk": QKEncoding,
    "bias": BiasEncoding,
}


def _placed(spec: EncodingSpec) -> EncodingSpec:
    """A module written on the bare :class:`PositionalEncoding` (a plugin's, overriding one
    hook) gets the rest of its place of action from that place's class: what the analyses ask
    of it (its similarity kernel, its timed workload, its cost) then follows its ``acts_on``,
    exactly as for a built-in. A module that already names its place is left as it is."""
    module = spec.module
    if (
        isinstance(module, type)
        and issubclass(module, PositionalEncoding)
        and module.acts_on == PositionalEncoding.acts_on
        and spec.acts_on != PositionalEncoding.acts_on
        and not issubclass(module, PLACES[spec.acts_on])
    ):
        placed = type(module.__name__, (module, PLACES[spec.acts_on]), {})
        placed.__module__, placed.__qualname__ = module.__module__, module.__qualname__
        placed.__doc__ = module.__doc__
        return dataclasses.replace(spec, module=placed)
    return spec


def register(spec: EncodingSpec) -> EncodingSpec:
    """Add ``spec`` to the registry: the one path for built-in encodings, the tests' toy ones
    and users' plugins. A name may be registered once; the module must act where it says."""
    if not isinstance(spec, EncodingSpec):
        raise TypeError(f"register() takes an EncodingSpec, got {type(spec).__name__}")
    if not spec.name.isidentifier():
        raise ValueError(f"encoding name {spec.name!r} must be an identifier (a-z, 0-9, _)")
    if spec.name in REGISTRY:
        raise ValueError(f"encoding {spec.name!r} is registered already")
    if spec.acts_on not in PLACES:
        raise ValueError(
            f"encoding {spec.name!r}: acts_on={spec.acts_on!r} is not one of {', '.join(PLACES)}"
        )
    spec = _placed(spec)
    declared = getattr(spec.module, "acts_on", None)
    if declared is not None and declared != spec.acts_on:
        raise ValueError(
            f"encoding {spec.name!r}: EncodingSpec says acts_on={spec.acts_on!r}, its module "
            f"{spec.module.__name__} acts on {declared!r}"
        )
    REGISTRY[spec.name] = spec
    return spec


for _spec in (
    EncodingSpec(
        "none",
        "none",
        NoPE,
        relative=True,
        learned=False,
        citation="haviv2022; kazemnejad2023",
        summary="No positional information (NoPE).",
        color="tab:gray",
        marker="o",
    ),
    EncodingSpec(
        "sinusoidal",
        "input",
        Sinusoidal,
        relative=False,
        learned=False,
        citation="vaswani2017",
        summary="Fixed sin/cos waves of geometric wavelengths added to the input.",
        color="tab:blue",
        marker="s",
        reference=sinusoidal_reference,
    ),
    EncodingSpec(
        "learned",
        "input",
        Learned,
        relative=False,
        learned=True,
        citation="devlin2019; radford2019",
        summary="A trainable table of L_max absolute position vectors.",
        color="tab:orange",
        marker="D",
        reference=learned_reference,
    ),
    EncodingSpec(
        "rope",
        "qk",
        Rotary,
        relative=True,
        learned=False,
        citation="su2021",
        summary="Queries and keys rotated by position-dependent angles.",
        color="tab:green",
        marker="^",
        extensions=("pi", "ntk"),
        reference=rope_reference,
    ),
    EncodingSpec(
        "xpos",
        "qk",
        XPos,
        relative=True,
        learned=False,
        citation="sun2022",
        summary="RoPE with a per-frequency exponential scale: scores decay with distance.",
        color="darkgreen",
        marker="<",
        # No extensions: Sun et al. extrapolate xPos as it is (PI and NTK are RoPE's remedies).
        reference=xpos_reference,
    ),
    EncodingSpec(
        "rope_partial",
        "qk",
        PartialRotary,
        relative=True,
        learned=False,
        citation="black2022; barbero2024",
        summary="RoPE on a fraction of each head (GPT-NeoX's rotary_pct), the rest position-free.",
        color="navy",
        marker=">",
        reference=rope_partial_reference,
        checks=(rope_partial_check,),
    ),
    EncodingSpec(
        "alibi",
        "bias",
        ALiBi,
        relative=True,
        learned=False,
        citation="press2022",
        summary="A per-head linear distance penalty on attention scores.",
        color="tab:red",
        marker="v",
        reference=alibi_reference,
    ),
    EncodingSpec(
        "t5_bias",
        "bias",
        T5Bias,
        relative=True,
        learned=True,
        citation="raffel2020",
        summary="A learned per-head bias over log-spaced relative-distance buckets.",
        color="tab:purple",
        marker="P",
        reference=t5_reference,
    ),
    EncodingSpec(
        "kerple",
        "bias",
        KerpleLog,
        relative=True,
        learned=True,
        citation="chi2022",
        summary="A learned per-head logarithmic distance penalty, -r1 log(1 + r2 |i - j|).",
        color="tab:brown",
        marker="X",
        reference=kerple_reference,
    ),
    EncodingSpec(
        "fire",
        "bias",
        FIRE,
        relative=False,  # past the threshold L the bias depends on the query's position too
        learned=True,
        citation="li2024",
        summary="A learned MLP bias of the log distance over the log query position (FIRE).",
        color="tab:pink",
        marker="*",
        reference=fire_reference,
    ),
):
    register(_spec)


def encodings() -> tuple[str, ...]:
    """Every registered name, in registration order (built-ins first, then plugins)."""
    return tuple(REGISTRY)


def __getattr__(name: str):
    # ENCODINGS follows the registry as plugins add to it, rather than freezing its first state.
    if name == "ENCODINGS":
        return encodings()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def build(name: str, params: EncodingParams) -> PositionalEncoding:
    """The module for encoding ``name``; an unknown name lists the known ones."""
    try:
        spec = REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown encoding {name!r}; known: {', '.join(REGISTRY)}") from None
    return spec.module(params)
