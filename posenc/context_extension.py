"""Evaluation-time context extension of a trained RoPE model, without fine-tuning, as pure
functions of the evaluation length L and the training length L_train:

* Position Interpolation (Chen et al. 2023): positions p -> p * L_train / L, so every angle stays
  within the trained range.
* NTK-aware scaling (bloc97 2023; Peng et al. 2023 §3.1): base -> base * s^(d / (d - 2)) with
  s = L / L_train and d the head dimension, which stretches the low frequencies like
  interpolation while leaving the highest frequency almost untouched.

The extensions a model is evaluated with are those the registry declares for its encoding
(``EncodingSpec.extensions``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import Tensor, nn

from posenc.encodings import PositionalEncoding
from posenc.rope_scaling import ntk_scaled_base

EXTENSIONS = ("pi", "ntk")  # context-extension methods for RoPE, besides the plain model


def pi_positions(length: int, train_len: int) -> Tensor:
    """Position Interpolation: p * L_train / L for p = 0..L-1 (float32); plain 0..L-1 when
    L <= L_train. Shape (L,)."""
    positions = torch.arange(length, dtype=torch.float32)
    if length <= train_len:
        return positions
    return positions * (train_len / length)


def ntk_base(base: float, scale: float, head_dim: int) -> float:
    """NTK-aware RoPE base for a context ``scale`` = L / L_train times the trained one:
    base * scale^(d / (d - 2)). A scale <= 1 keeps the base.

    Why that exponent: the lowest frequency base^(-(d-2)/d) is then divided by exactly ``scale``
    (interpolated), while the highest, base^0 = 1, is not changed at all (extrapolated).
    """
    if head_dim <= 2:
        raise ValueError(f"NTK scaling needs a head dimension > 2, got {head_dim}")
    if scale <= 1.0:
        return float(base)
    return ntk_scaled_base(float(base), scale, head_dim)


def rotary_of(model: nn.Module) -> PositionalEncoding | None:
    """The model's encoding (shared by every layer) where its spec declares its frequencies
    rescalable (``EncodingSpec.rescalable``: RoPE's base and scaling hook), else None."""
    encoding = model.stack.encoding
    return encoding if encoding.spec is not None and encoding.spec.rescalable else None


def extensions_of(model: nn.Module) -> tuple[str, ...]:
    """The context extensions the registry declares for the model's encoding
    (``EncodingSpec.extensions``; none for a module not built from the registry)."""
    spec = model.stack.encoding.spec
    return spec.extensions if spec is not None else ()


@contextmanager
def rope_base(model: nn.Module, base: float) -> Iterator[None]:
    """Temporarily evaluate ``model``'s RoPE with ``base``; restored afterwards, even on error."""
    rotary = rotary_of(model)
    if rotary is None:
        raise ValueError("rope_base needs a model whose encoding declares rescalable frequencies")
    previous = rotary.base
    rotary.base = base
    try:
        yield
    finally:
        rotary.base = previous


def extension_setup(
    method: str | None, length: int, train_len: int, head_dim: int, base: float
) -> tuple[Tensor | None, float]:
    """(positions or None for the default 0..L-1, RoPE base) for ``method`` in
    (None, "pi", "ntk") at evaluation length ``length``."""
    if method is None:
        return None, base
    if method == "pi":
        return pi_positions(length, train_len), base
    if method == "ntk":
        return None, ntk_base(base, length / train_len, head_dim)
    raise ValueError(f"unknown context extension {method!r}; known: {', '.join(EXTENSIONS)}")


def head_dim(model: nn.Module) -> int:
    return model.stack.cfg.d_model // model.stack.cfg.n_heads
