"""Query temperature: a multiplier of each query, hence of its logits, that grows with the
number of keys it sees, applied at evaluation (``posenc.model.query_temperature``). Both are
functions of the positions only, so they apply to any encoding, NoPE and ALiBi included.

* log-n scaling (Chiang & Cholak 2022; Qwen's ``use_logn_attn``): q * log_{L_train}(n) for
  n > L_train, where n = position + 1 is the number of keys a query sees under causal
  attention; 1 up to L_train, so the model is unchanged where it was trained.
* Llama 4's schedule (Meta's llama-models ``models/llama4/model.py``; transformers'
  ``modeling_llama4.py`` writes it with ``log1p``): q * (1 + beta * ln(floor((p + 1) / L0) + 1)),
  a step function of the position p, 1 below p + 1 = L0. Llama 4 ships beta = 0.1 and
  L0 = 8192 (``attn_scale``, ``floor_scale``), on its NoPE layers only; here L0 is the
  model's training length (8192 is Llama 4's attention chunk), and the caller decides the
  layers.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

TEMPERATURES = ("logn", "llama4")


def logn(train_len: int) -> Callable[[Tensor], Tensor]:
    """log-n scaling for a model trained at ``train_len``: positions -> multipliers."""
    log_train = math.log(train_len)

    def scale(positions: Tensor) -> Tensor:
        n = positions.to(torch.float64) + 1
        return torch.clamp(n.log() / log_train, min=1.0)

    return scale


def llama4(floor_scale: int, beta: float) -> Callable[[Tensor], Tensor]:
    """Llama 4's query temperature with ``floor_scale`` L0 and ``attn_scale`` beta: positions
    -> 1 + beta * ln(floor((p + 1) / L0) + 1)."""
    if floor_scale < 1:
        raise ValueError(f"floor_scale must be a positive integer, got {floor_scale!r}")

    def scale(positions: Tensor) -> Tensor:
        steps = torch.floor((positions.to(torch.float64) + 1) / floor_scale)
        return 1 + beta * torch.log1p(steps)

    return scale


def temperature(name: str, train_len: int, params: dict | None = None):
    """The named schedule for a model trained at ``train_len`` (``params``: Llama 4's
    ``beta``)."""
    if name == "logn":
        return logn(train_len)
    if name == "llama4":
        return llama4(train_len, float((params or {})["beta"]))
    raise ValueError(f"unknown query temperature {name!r}; known: {', '.join(TEMPERATURES)}")
