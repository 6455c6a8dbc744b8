"""Query temperature: a multiplier of each query's logits that grows with the number of keys
it sees, applied at evaluation (``posenc.model.query_temperature``). Both are functions of the
positions only, so they apply to any encoding, NoPE and ALiBi included.

* log-n scaling (Chiang & Cholak 2022; Qwen's ``use_logn_attn``): x log_{L_train}(n) for
  n > L_train, where n = position + 1 is the number of keys a query sees under causal
  attention; 1 up to L_train, so the model is unchanged where it was trained.
* Llama 4's schedule (Meta's llama-models ``models/llama4/model.py``; transformers'
  ``modeling_llama4.py`` writes it with ``log1p``): x (1 + beta * ln(floor((p + 1) / L0) + 1)),
  a step function of the position p, 1 below p + 1 = L0. Llama 4 ships beta = 0.1 and
  L0 = 8192 (``attn_scale``, ``floor_scale``) on its NoPE layers only, 8192 being the chunk
  its RoPE layers attend within. The caller decides the layers and L0: Llama 4's way on a
  hybrid with windowed RoPE layers (its NoPE layers, L0 = the window), or Llama-4-shaped on
  any other model (every layer, L0 = L_train).

Both are softmax temperatures: Chiang & Cholak's argument, and Su's (2021) entropy-invariance
argument for log-n scaling, are about the spread of softmax(t x logits). A query multiplier is
that temperature only where the logit is q.k; where it is q.k + b (an additive score bias),
the temperature multiplies the bias too (``scope="logits"`` of ``query_temperature``).
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
    ``beta``, and its ``floor_scale`` L0 where it is not ``train_len``)."""
    params = params or {}
    if name == "logn":
        return logn(train_len)
    if name == "llama4":
        return llama4(int(params.get("floor_scale", train_len)), float(params["beta"]))
    raise ValueError(f"unknown query temperature {name!r}; known: {', '.join(TEMPERATURES)}")
