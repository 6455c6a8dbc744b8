"""Query temperature: a multiplier of each query, hence of its logits, that grows with the
number of keys it sees, applied at evaluation (``posenc.model.query_temperature``).

* log-n scaling (Chiang & Cholak 2022; Qwen's ``use_logn_attn``): q * log_{L_train}(n) for
  n > L_train, where n = position + 1 is the number of keys a query sees under causal
  attention; 1 up to L_train, so the model is unchanged where it was trained;
* Llama 4's schedule (its NoPE layers' ``attn_temperature_tuning``): q * (1 + beta *
  ln(floor((p + 1) / L0) + 1)), beta = 0.1 as Llama 4 ships it and L0 its floor scale, taken
  here as L_train: 1 below L0, a step up at each multiple of it.

Both are functions of the positions only, so they apply to any encoding, NoPE and ALiBi
included.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

LLAMA4_BETA = 0.1  # Llama 4's attn_scale


def logn(train_len: int) -> Callable[[Tensor], Tensor]:
    """log-n scaling for a model trained at ``train_len``: positions -> multipliers."""
    log_train = math.log(train_len)

    def scale(positions: Tensor) -> Tensor:
        n = positions.to(torch.float64) + 1
        return torch.clamp(n.log() / log_train, min=1.0)

    return scale


def llama4(train_len: int, beta: float = LLAMA4_BETA) -> Callable[[Tensor], Tensor]:
    """Llama 4's schedule with floor scale ``train_len``: positions -> multipliers."""

    def scale(positions: Tensor) -> Tensor:
        steps = torch.floor((positions.to(torch.float64) + 1) / train_len)
        return 1 + beta * torch.log(steps + 1)

    return scale


SCHEDULES = {"logn": logn, "llama4": llama4}
