"""The float64 references the conformance analysis holds every library to, written from the
papers' formulas, and what every comparison shares: the layouts (interleaved pairs, half
split), the float32 epsilons of the bounds, the reason a missing library's rows are n/a."""

from __future__ import annotations

import math

import torch
from torch import Tensor

from posenc.analyses.conformance.libraries import HALF

EPS32 = torch.finfo(torch.float32).eps
EPS64 = torch.finfo(torch.float64).eps


def missing(error: ImportError) -> str:
    """The reason a library's rows are n/a."""
    return f"not installed ({type(error).__name__}: {error})"


def inverse_frequencies(d: int, base: float) -> Tensor:
    """ω_c = base^(−2c/d), c = 0 .. d/2 − 1, in float64 (Su et al. 2021; Vaswani et al.)."""
    return torch.tensor([base ** (-2 * c / d) for c in range(d // 2)], dtype=torch.float64)


def reference_angles(length: int, d: int, base: float) -> Tensor:
    """θ[p, c] = p·ω_c for p = 0 .. length − 1, in float64. Shape (L, d/2)."""
    return torch.arange(length, dtype=torch.float64)[:, None] * inverse_frequencies(d, base)


def reference_rotation(x: Tensor, theta: Tensor) -> Tensor:
    """Su et al.'s rotation of each interleaved pair (x_2c, x_2c+1) by θ[p, c], in float64:
    (x cos θ − y sin θ, x sin θ + y cos θ). x (..., L, d), θ (L, d/2)."""
    x = x.double()
    a, b = x[..., 0::2], x[..., 1::2]
    cos, sin = theta.cos(), theta.sin()
    return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)


def reference_table(length: int, d: int, base: float) -> Tensor:
    """Vaswani et al.'s PE(p, 2c) = sin p·ω_c, PE(p, 2c+1) = cos p·ω_c, float64. (L, d)."""
    theta = reference_angles(length, d, base)
    return torch.stack((theta.sin(), theta.cos()), dim=-1).flatten(-2)


def to_half(d: int) -> Tensor:
    """Indices that put interleaved pair c (2c, 2c+1) at (c, c + d/2): x_half = x[..., idx]."""
    return torch.cat((torch.arange(0, d, 2), torch.arange(1, d, 2)))


def to_layout(x: Tensor, layout: str) -> Tensor:
    """``x`` in the interleaved layout, moved to ``layout``."""
    return x[..., to_half(x.shape[-1])] if layout == HALF else x


def from_layout(x: Tensor, layout: str) -> Tensor:
    """``x`` in ``layout``, moved to the interleaved layout."""
    return x[..., torch.argsort(to_half(x.shape[-1]))] if layout == HALF else x


def wrap(angle: Tensor) -> Tensor:
    """``angle`` wrapped to (−π, π]."""
    wrapped = torch.remainder(angle + math.pi, 2 * math.pi) - math.pi
    return torch.where(wrapped == -math.pi, math.pi, wrapped)


def pair_norms(x: Tensor) -> Tensor:
    """‖(x_2c, x_2c+1)‖ per interleaved pair, (..., d) -> (..., d/2), float64."""
    x = x.double()
    return (x[..., 0::2] ** 2 + x[..., 1::2] ** 2).sqrt()
