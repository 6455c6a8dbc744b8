"""Reading a trained LM's attention out in evaluation: why does its loss rise past L_train?

Two standard explanations, each with a quantity measured per window and attention layer:

- **unseen relative positions**: the share of attention a query gives to keys farther from it
  than any query-key distance training showed (distance >= L_train), over the queries that
  have such keys (none at L <= L_train);
- **attention dilution**: the entropy of each query's attention over the n keys it sees under
  causal attention, divided by ln n (1: uniform over them), over the queries with n >= 2.

The attention is formed explicitly (``posenc.model.observing``), so a readout costs more than
scoring; the same forward's own loss is returned beside it, so the attention and the loss it
is compared with come from one computation.
"""

from __future__ import annotations

import math
from contextlib import nullcontext
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from posenc.encodings import PositionOutOfRange
from posenc.eval_windows import all_token_windows
from posenc.model import observing, query_temperature
from posenc.temperature import logn

CPU = torch.device("cpu")


class _Stats:
    """Per-window sums over one batch of windows, per attention layer."""

    def __init__(self, length: int, train_len: int, device: torch.device):
        n = torch.arange(1, length + 1, device=device, dtype=torch.float32)
        self.log_keys = n[1:].log()  # ln n for the queries with n >= 2 keys
        self.far = None
        if length > train_len:  # keys at distance >= L_train from their query
            self.far = torch.ones(length, length, dtype=torch.bool, device=device).tril(-train_len)
        self.train_len = train_len
        self.entropy: dict[int, Tensor] = {}
        self.mass: dict[int, Tensor] = {}

    def __call__(self, layer: int, probs: Tensor) -> None:
        p = probs.float()  # (B, H, L, L), rows sum to 1 over the keys at or before the query
        entropy = torch.special.entr(p).sum(-1)[..., 1:] / self.log_keys  # (B, H, L - 1)
        self.entropy[layer] = entropy.mean(dim=(1, 2))
        if self.far is not None:
            mass = (p * self.far).sum(-1)[..., self.train_len :]  # queries that have far keys
            self.mass[layer] = mass.mean(dim=(1, 2))


@torch.no_grad()
def attention_readout(
    model: nn.Module,
    tokens: Tensor,
    length: int,
    train_len: int,
    *,
    tokens_scored: int,
    batch_tokens: int = 8192,
    device: torch.device = CPU,
) -> dict[str, Any]:
    """Per window of mode ``all`` at ``length``: its bits/char, and per attention layer its
    normalised entropy and its mass at distances >= ``train_len`` (None per layer at
    ``length <= train_len``, where no such key exists). Lists in window order."""
    starts = all_token_windows(len(tokens), length, tokens_scored)
    offsets = torch.arange(length + 1)
    bits, entropy, mass = [], [], []
    for chunk in starts.split(max(1, batch_tokens // length)):
        window = tokens[chunk[:, None] + offsets].to(device)  # (B, L+1)
        stats = _Stats(length, train_len, device)
        with observing(model, stats):
            logits = model(window[:, :-1])  # (B, L, V)
        nll = F.cross_entropy(logits.float().transpose(1, 2), window[:, 1:], reduction="none")
        bits += (nll.double().mean(-1) / math.log(2)).cpu().tolist()
        layers = sorted(stats.entropy)
        entropy += torch.stack([stats.entropy[i] for i in layers], 1).cpu().tolist()
        if stats.far is not None:
            mass += torch.stack([stats.mass[i] for i in layers], 1).cpu().tolist()
        else:
            mass += [[None] * len(layers)] * len(chunk)
    return {"length": length, "window_bits": bits, "entropy": entropy, "far_mass": mass}


def readouts(
    model: nn.Module,
    tokens: Tensor,
    train_len: int,
    multipliers: list[int],
    *,
    tokens_scored: int,
    batch_tokens: int = 8192,
    device: torch.device = CPU,
) -> dict[str, list[dict[str, Any]]]:
    """:func:`attention_readout` at every multiplier, plainly and under log-n query scaling
    (``posenc.temperature.logn``; the same model as plain up to L_train, so from 2x on): the
    ``readout`` of an evaluation record. A length the model has no encoding for (a learned
    table past its rows) is left out."""
    arms: dict[str, list[dict[str, Any]]] = {"plain": [], "logn": []}
    for arm in arms:
        for m in multipliers:
            if arm == "logn" and m == 1:
                continue
            length = m * train_len
            # log-n scaling as evaluation-time query temperature; the plain arm without it.
            scaled = query_temperature(model, logn(train_len)) if arm == "logn" else nullcontext()
            try:
                with scaled:
                    out = attention_readout(
                        model,
                        tokens,
                        length,
                        train_len,
                        tokens_scored=tokens_scored,
                        batch_tokens=batch_tokens,
                        device=device,
                    )
            except PositionOutOfRange:
                continue
            arms[arm].append({"multiplier": m, **out})
    return arms
