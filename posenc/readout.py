"""Reading a trained LM's attention out in evaluation: what changes in it as the loss rises
past L_train?

Two standard accounts, each with a quantity measured per window and attention layer:

- **unseen relative positions**: the share of attention a query gives to keys farther from it
  than any query-key distance training showed (distance >= L_train), over the queries that
  have such keys (none at L <= L_train);
- **attention dilution**: the entropy of each query's attention over the n keys it sees under
  causal attention, in nats, over the queries with n >= 2. Raw, not divided by ln n: dilution
  is attention spreading over more keys, and uniform attention (dilution at its extreme) has
  entropy ln n, which grows with the length while its normalised entropy stays 1. So each
  readout also carries that uniform reference, the mean of ln n over the same queries, and the
  normalised entropy (divided by ln n) beside the raw one, as a secondary measure.

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


def uniform_entropy(length: int) -> float:
    """The mean entropy (nats) of uniform causal attention over the queries of a window of
    ``length`` that see n >= 2 keys: the mean of ln n for n = 2..length, ln(length!) /
    (length - 1), computed as a log-gamma."""
    if length < 2:
        raise ValueError(f"a window of {length} has no query with two keys")
    return math.lgamma(length + 1) / (length - 1)


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
        self.normalised: dict[int, Tensor] = {}
        self.mass: dict[int, Tensor] = {}

    def __call__(self, layer: int, probs: Tensor) -> None:
        p = probs.float()  # (B, H, L, L), rows sum to 1 over the keys at or before the query
        entropy = torch.special.entr(p).sum(-1)[..., 1:]  # (B, H, L - 1), nats
        self.entropy[layer] = entropy.mean(dim=(1, 2))
        self.normalised[layer] = (entropy / self.log_keys).mean(dim=(1, 2))
        if self.far is not None:
            mass = (p * self.far).sum(-1)[..., self.train_len :]  # queries that have far keys
            self.mass[layer] = mass.mean(dim=(1, 2))


def _by_window(per_layer: dict[int, Tensor]) -> list[list[float]]:
    """{layer: (B,)} as B lists of one value per layer, in layer order."""
    return torch.stack([per_layer[i] for i in sorted(per_layer)], 1).cpu().tolist()


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
    """Per window of mode ``all`` at ``length``: its bits/char, and per attention layer the
    entropy of its attention in nats (``entropy_nats``), the same divided by ln n
    (``entropy_normalised``), and its mass at distances >= ``train_len`` (None per layer at
    ``length <= train_len``, where no such key exists). Lists in window order; beside them
    ``uniform_entropy``, what uniform attention's entropy would be over the same queries."""
    starts = all_token_windows(len(tokens), length, tokens_scored)
    offsets = torch.arange(length + 1)
    bits, entropy, normalised, mass = [], [], [], []
    for chunk in starts.split(max(1, batch_tokens // length)):
        window = tokens[chunk[:, None] + offsets].to(device)  # (B, L+1)
        stats = _Stats(length, train_len, device)
        with observing(model, stats):
            logits = model(window[:, :-1])  # (B, L, V)
        nll = F.cross_entropy(logits.float().transpose(1, 2), window[:, 1:], reduction="none")
        bits += (nll.double().mean(-1) / math.log(2)).cpu().tolist()
        entropy += _by_window(stats.entropy)
        normalised += _by_window(stats.normalised)
        if stats.far is not None:
            mass += _by_window(stats.mass)
        else:
            mass += [[None] * len(stats.entropy)] * len(chunk)
    return {
        "length": length,
        "window_bits": bits,
        "entropy_nats": entropy,
        "entropy_normalised": normalised,
        "uniform_entropy": uniform_entropy(length),
        "far_mass": mass,
    }


def readout_multipliers(multipliers: list[int]) -> list[int]:
    """The lengths read out, of the evaluation's: 1x (the reference of every rise) and the
    longest, where the loss has risen most. The lengths between cost as much again (a window's
    attention costs its length per token) and decide nothing: the claims and the figure read
    the longest."""
    return sorted({1, max(multipliers)})


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
    """:func:`attention_readout` at 1x and the longest of ``multipliers``
    (:func:`readout_multipliers`) plainly, and at the longest under log-n query scaling
    (``posenc.temperature.logn``; the same model as plain up to L_train): the ``readout`` of
    an evaluation record. A length the model has no encoding for (a learned table past its
    rows) is left out."""
    read = readout_multipliers(multipliers)
    runs = [("plain", m) for m in read] + [("logn", m) for m in read if m > 1][-1:]
    arms: dict[str, list[dict[str, Any]]] = {"plain": [], "logn": []}
    for arm, m in runs:
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
