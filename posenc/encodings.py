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
        g = torch.Generator(device=positions.device).manual_seed(0)
        shape = (batch, p.n_heads, length, p.head_dim)  # (B, H, L, Dh)
        q = torch.randn(shape, generator=g, device=positions.device)
        k = torch.randn(shape, generator=g, device=positions.device)
        return lambda: self.rotate(q, k, positions, positions)


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

    def frequencies(self) -> Tensor:
        return inverse_frequencies(self.params.head_dim, self.base)

    def angle_table(self, positions: Tensor, dtype: torch.dtype) -> Tensor:
        """(cos p*theta_0, ..., cos p*theta_{Dh/2-1}, sin p*theta_0, ...): the cos/sin table."""
        return torch.cat(rope_cos_sin(positions, self.params.head_dim, self.base, dtype), -1)

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


def rope_reference(
    module: PositionalEncoding, q: Tensor, k: Tensor, q_pos: Tensor, k_pos: Tensor
) -> tuple[Tensor, Tensor]:
    """Su et al. 2021, eq. (34), pair by pair: the pair (a, b) of a vector at position p turns
    by t = p * base^(-2i/Dh) to (a cos t - b sin t, a sin t + b cos t). Pair i is
    (x[2i], x[2i+1]) interleaved, (x[i], x[i + Dh/2]) half split (``params.rope_interleaved``);
    base is ``module.base``, which NTK-aware scaling rescales. q (..., Lq, Dh), k (..., Lk, Dh)."""
    interleaved, base = module.params.rope_interleaved, module.base

    def turn(x: Tensor, positions: Tensor) -> Tensor:
        d = x.shape[-1]
        pairs = [(2 * i, 2 * i + 1) if interleaved else (i, i + d // 2) for i in range(d // 2)]
        rows = x.detach().double().reshape(-1, x.shape[-2], d).tolist()  # (N, L, Dh)
        for matrix in rows:
            for vector, p in zip(matrix, positions.tolist(), strict=True):
                for i, (ia, ib) in enumerate(pairs):
                    t = p * base ** (-2 * i / d)
                    a, b = vector[ia], vector[ib]
                    vector[ia] = a * math.cos(t) - b * math.sin(t)
                    vector[ib] = a * math.sin(t) + b * math.cos(t)
        return torch.tensor(rows, dtype=torch.float64).reshape(x.shape)

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


def _t5_bucket_by_hand(relative: int, bidirectional: bool, num_buckets: int, max_distance: int):
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
            bucket = _t5_bucket_by_hand(
                round(j) - round(i), not causal, p.t5_num_buckets, p.t5_max_distance
            )
            for h in range(n_heads):
                bias[h][a][b] = weight[bucket, h].item()
    return torch.tensor(bias, dtype=torch.float64).reshape(n_heads, len(q_pos), len(k_pos))


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
        }


REGISTRY: dict[str, EncodingSpec] = {}


def register(spec: EncodingSpec) -> EncodingSpec:
    """Add ``spec`` to the registry: the one path for built-in encodings, the tests' toy ones
    and users' plugins. A name may be registered once; the module must act where it says."""
    if not isinstance(spec, EncodingSpec):
        raise TypeError(f"register() takes an EncodingSpec, got {type(spec).__name__}")
    if not spec.name.isidentifier():
        raise ValueError(f"encoding name {spec.name!r} must be an identifier (a-z, 0-9, _)")
    if spec.name in REGISTRY:
        raise ValueError(f"encoding {spec.name!r} is registered already")
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
