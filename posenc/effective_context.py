"""How much of its context a character LM uses: bits/char on a fixed set of target characters of
the validation text, each predicted from exactly k preceding characters, for several k.

A model that scores between the 4-gram and the 5-gram of its text may extrapolate because it
uses far context or because it reads five characters and ignores the rest; its loss with the
context cut to k tells them apart. Every k scores the same targets, so the differences between
lengths are paired target by target; and every model scores the same targets, so encodings
pair too. The model sees the k characters before a target at positions 0..k-1 (its training
range when k <= L_train) and predicts the target from its last position.

The targets are drawn once from a generator keyed by what they are for and the text's size
(:func:`posenc.seeding.keyed_generator`), uniformly over the validation text without
replacement, so the aggregate can recompute them and resample the fragments of text they fall
in (:meth:`posenc.data.CharCorpus.fragment_of`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor, nn

from posenc.evaluate import CPU, Positions, window_nll
from posenc.seeding import keyed_generator

# The seed of the targets' generator: one fixed draw for every model of every run, so that
# every model and every context length scores the same characters.
TARGET_SEED = 0
TARGET_KEY = "effective_context.targets"


def context_targets(n_tokens: int, longest: int, targets: int) -> Tensor:
    """The validation positions scored: ``targets`` distinct indices of a text of ``n_tokens``
    characters, each with at least ``longest`` characters before it, drawn uniformly without
    replacement from the keyed generator and sorted. (targets,) long."""
    room = n_tokens - longest
    if targets < 1 or targets > room:
        raise ValueError(
            f"a validation text of {n_tokens} characters holds {max(room, 0)} targets with "
            f"{longest} characters before each: extrapolation.lm.eval.context.targets = "
            f"{targets} must be between 1 and {max(room, 0)}"
        )
    generator = keyed_generator(TARGET_SEED, TARGET_KEY, n_tokens, longest)
    picks = torch.randperm(room, generator=generator)[:targets]
    return (picks + longest).sort().values


@torch.no_grad()
def target_bits(
    model: nn.Module,
    tokens: Tensor,
    targets: Tensor,
    k: int,
    *,
    positions: Positions = None,
    batch_tokens: int = 8192,
    device: torch.device = CPU,
) -> Tensor:
    """−log2 p(tokens[t] | tokens[t-k : t]) for each target index t, the model reading the k
    characters at positions 0..k-1 (or ``positions``, :data:`posenc.evaluate.Positions`).
    (targets,) float64, in the order of ``targets``."""
    if k < 1 or int(targets.min()) < k:
        raise ValueError(f"every target needs {k} characters before it (k >= 1)")
    # A window of k inputs ending just before the target; its last prediction is scored.
    nll = window_nll(
        model, tokens, targets - k, k, k - 1, positions, max(1, batch_tokens // k), device
    )
    return nll / math.log(2)


def context_bits(
    model: nn.Module,
    tokens: Tensor,
    *,
    lengths: Sequence[int],
    targets: int,
    batch_tokens: int,
    device: torch.device = CPU,
    positions_of: Any = None,
) -> dict[str, Any]:
    """The evaluation record's ``context`` field: for each context length k of ``lengths``,
    every target's bits and their mean, on the :func:`context_targets` of ``tokens`` (the
    validation text). ``positions_of``: None (positions 0..k-1), or a function of k giving the
    :data:`posenc.evaluate.Positions` to read at (a model trained with randomized positions).
    Batched by k, one length at a time."""
    lengths = sorted(set(int(k) for k in lengths))
    where = context_targets(len(tokens), max(lengths), targets)
    model.eval()
    bits = {}
    for k in lengths:
        positions = positions_of(k) if positions_of is not None else None
        bits[k] = target_bits(
            model, tokens, where, k, positions=positions, batch_tokens=batch_tokens, device=device
        ).tolist()
    return {
        "lengths": lengths,
        "targets": len(where),
        "bits_per_char": {str(k): sum(b) / len(b) for k, b in bits.items()},
        "target_bits": {str(k): b for k, b in bits.items()},
    }
