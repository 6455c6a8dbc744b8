"""Query temperature: a multiplier of each query, hence of its logits, that grows with the
number of keys it sees, applied at evaluation (``posenc.model.query_temperature``).

log-n scaling (Chiang & Cholak 2022; Qwen's ``use_logn_attn``): q * log_{L_train}(n) for
n > L_train, where n = position + 1 is the number of keys a query sees under causal attention;
1 up to L_train, so the model is unchanged where it was trained.

It is a function of the positions only, so it applies to any encoding, NoPE and ALiBi
included.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor


def logn(train_len: int) -> Callable[[Tensor], Tensor]:
    """log-n scaling for a model trained at ``train_len``: positions -> multipliers."""
    log_train = math.log(train_len)

    def scale(positions: Tensor) -> Tensor:
        n = positions.to(torch.float64) + 1
        return torch.clamp(n.log() / log_train, min=1.0)

    return scale
