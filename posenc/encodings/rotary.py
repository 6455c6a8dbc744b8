"""Rotary encodings: RoPE (Su et al. 2021), xPos (Sun et al. 2022) and GPT-NeoX's partial
RoPE, each a rotation of query/key pairs by position, registered beside its class. They share
RoPE's frequencies and the scaling hook through which a context extension stretches them."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from posenc.encodings import naive
from posenc.encodings.functional import (
    apply_rope,
    check_even,
    inverse_frequencies,
    rope_cos_sin,
    xpos_scales,
    xpos_zeta,
)
from posenc.encodings.places import EncodingParams, QKEncoding
from posenc.encodings.registry import EncodingSpec, register, setting


@dataclass(frozen=True)
class RotaryParams:
    base: float = setting(
        10000.0,
        "theta_i = base^(-2i/d): Su et al.'s 10000 (NTK-aware scaling rescales it)",
        exclusiveMinimum=1,
    )
    interleaved: bool = setting(
        True, "pairs (x[2i], x[2i+1]) as Su et al.; false: GPT-NeoX's half split (x[i], x[i+d/2])"
    )


@dataclass(frozen=True)
class XPosParams(RotaryParams):
    scale_base: float = setting(
        512.0,
        "gamma: scores scale by zeta_i^((n - m) / gamma), Sun et al.'s 512",
        exclusiveMinimum=0,
    )


@dataclass(frozen=True)
class PartialRotaryParams(RotaryParams):
    fraction: float = setting(
        0.25,
        "share of each head rotated (GPT-NeoX's rotary_pct, 0.25); int(fraction x head width) "
        "must be even and positive",
        exclusiveMinimum=0,
        maximum=1,
    )


class Rotary(QKEncoding):
    """Su et al. 2021 (RoPE): pair i of every query and key at position p turned by
    p * base^(-2i/Dh) (:func:`apply_rope`). Its scaling hook (``base``, ``scaling``,
    ``rotated_width``) is what context extensions rescale: the spec declares it
    ``rescalable``."""

    def __init__(self, params: EncodingParams):
        super().__init__(params)
        check_even(params.head_dim, "rope head dimension")
        self.base = params.hyper.base  # the extrapolation analysis rescales it (NTK-aware)
        # A context extension (posenc.rope_scaling) while set: (inverse frequencies of the
        # rotated pairs, float64; attention factor on cos and sin) in place of base^(-2i/w).
        self.scaling: tuple[Tensor, float] | None = None

    def frequencies(self, group: int = 0) -> Tensor:
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

    def angle_table(self, positions: Tensor, dtype: torch.dtype, group: int = 0) -> Tensor:
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
        interleaved = self.params.hyper.interleaved
        return apply_rope(q, cos_q, sin_q, interleaved), apply_rope(k, cos_k, sin_k, interleaved)


class XPos(Rotary):
    """Sun et al. 2022 (xPos): RoPE's rotation R(p) with an exponential scale per frequency,

        q_n -> zeta_i^(n/gamma) R(n) q_n,    k_m -> zeta_i^(-m/gamma) R(m) k_m,

    pair by pair, zeta_i = (2i/d + 0.4) / 1.4 and scale base gamma (``scale_base``, 512
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
        return zeta[None, :] ** (r / self.params.hyper.scale_base)

    def rotate(self, q, k, q_pos, k_pos):
        p, own = self.params, self.params.hyper
        (cos_q, sin_q), (cos_k, sin_k) = self.cos_sin(q_pos, k_pos)
        up, down = xpos_scales(
            q_pos, k_pos, p.head_dim, own.scale_base, p.angle_dtype, storage=q.dtype
        )  # (Lq, Dh/2), (Lk, Dh/2)
        return (
            apply_rope(q, cos_q * up, sin_q * up, own.interleaved),
            apply_rope(k, cos_k * down, sin_k * down, own.interleaved),
        )


def rope_partial_width(head_dim: int, fraction: float) -> int:
    """GPT-NeoX's rotary_ndims = int(head_dim * rotary_pct): how many leading dimensions of a
    head partial RoPE rotates. A width that is odd or zero (no whole pair to turn) is a
    ValueError naming the config key."""
    width = int(head_dim * fraction)
    if width <= 0 or width % 2 or width > head_dim:
        raise ValueError(
            f"encoding.rope_partial.fraction = {fraction:g}: rotates int({fraction:g} x "
            f"{head_dim}) = {width} of a head's {head_dim} dimensions, which must be a "
            "positive even number (RoPE turns pairs)"
        )
    return width


def rope_partial_check(params: EncodingParams) -> list[str]:
    """The config check of :class:`PartialRotary` (``EncodingSpec.checks``): its rotated width
    at ``params``' head width."""
    try:
        rope_partial_width(params.head_dim, params.hyper.fraction)
    except ValueError as error:
        return [f"config key {error}"]
    return []


class PartialRotary(Rotary):
    """Partial RoPE (GPT-NeoX, Black et al. 2022: ``rotary_pct``): RoPE on the first
    r = int(f * Dh) dimensions of every head, f = ``fraction`` (0.25 in GPT-NeoX),
    with the frequencies of an r-wide head, omega_i = base^(-2i/r), i < r/2; the other Dh - r
    dimensions pass unchanged, without position. Scores are RoPE's on the rotated part plus a
    position-free dot product on the rest: relative. r must be even and positive
    (:func:`rope_partial_width`).

    Barbero et al. 2024 find that trained RoPE models use the fastest frequencies for
    positional heads and the slowest as semantic channels that rotation makes unreliable over
    long distances, and that rotating only part of each head helps; their p-RoPE keeps the
    fastest share of the full head's frequencies, whereas GPT-NeoX's rotary_pct (this one)
    spreads base^(-2i/r) over the rotated width. Pairs within the rotated part follow
    ``interleaved`` as RoPE's do (GPT-NeoX: half split).
    """

    def __init__(self, params: EncodingParams):
        super().__init__(params)
        self.width = rope_partial_width(params.head_dim, params.hyper.fraction)

    def frequencies(self, group: int = 0) -> Tensor:
        return inverse_frequencies(self.width, self.base)

    @property
    def rotated_width(self) -> int:
        return self.width

    def angle_table(self, positions: Tensor, dtype: torch.dtype, group: int = 0) -> Tensor:
        """The rotated part's cos/sin table, (cos p*omega_0, ..., sin p*omega_0, ...)."""
        return torch.cat(rope_cos_sin(positions, self.width, self.base, dtype), -1)

    def rotate(self, q, k, q_pos, k_pos):
        r, interleaved = self.width, self.params.hyper.interleaved
        (cos_q, sin_q), (cos_k, sin_k) = self.cos_sin(q_pos, k_pos, r)

        def turn(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:  # (..., L, Dh)
            rotated = apply_rope(x[..., :r], cos, sin, interleaved)
            return torch.cat((rotated, x[..., r:]), dim=-1)

        return turn(q, cos_q, sin_q), turn(k, cos_k, sin_k)


register(
    EncodingSpec(
        "rope",
        "qk",
        Rotary,
        relative=True,
        learned=False,
        citation="su2021",
        summary="Queries and keys rotated by position-dependent angles.",
        params=RotaryParams,
        waves=True,
        planar_rotation=True,
        rescalable=True,
        extensions=("pi", "ntk"),
        color="tab:green",
        marker="^",
        reference=naive.rope_reference,
    )
)
register(
    EncodingSpec(
        "xpos",
        "qk",
        XPos,
        relative=True,
        learned=False,
        citation="sun2022",
        summary="RoPE with a per-frequency exponential scale: scores decay with distance.",
        params=XPosParams,
        waves=True,
        planar_rotation=True,  # each pair turned, and scaled
        rescalable=True,
        # No extensions: Sun et al. extrapolate xPos as it is (PI and NTK are RoPE's remedies).
        color="darkgreen",
        marker="<",
        reference=naive.xpos_reference,
    )
)
register(
    EncodingSpec(
        "rope_partial",
        "qk",
        PartialRotary,
        relative=True,
        learned=False,
        citation="black2022; barbero2024",
        summary="RoPE on a fraction of each head (GPT-NeoX's rotary_pct), the rest position-free.",
        params=PartialRotaryParams,
        waves=True,
        planar_rotation=True,  # the position-free dimensions are pairs of one, never turned
        rescalable=True,
        color="navy",
        marker=">",
        reference=naive.rope_partial_reference,
        checks=(rope_partial_check,),
    )
)
