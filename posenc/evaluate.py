"""Evaluation of trained models at and beyond their training length.

Language models are scored in bits per character in two modes, both reported: ``all`` (every
token of non-overlapping windows, the same number at every length) and ``segment`` (the same
last tokens at every length, only their context growing, so that lengths compare paired); the
windows of each are :mod:`posenc.eval_windows`.

Each result carries the bits/char of every window (equal token counts per window), so the
aggregate can bootstrap over windows as well as seeds.

A trained RoPE model is also evaluated with the context extensions its encoding declares,
without fine-tuning (Position Interpolation, NTK-aware scaling: :mod:`posenc.context_extension`).

A learned table has no rows past L_max: such lengths are reported as undefined, explicitly.

A model trained with randomized positions (Ruoss et al. 2023) is evaluated the same way: each
batch of windows or sequences gets a sorted random subset of [0, L_rand), drawn from a
generator seeded per length, so every such model sees the same draws.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from posenc.batches import IGNORE, RandomizedPositions
from posenc.context_extension import extension_setup, extensions_of, head_dim, rope_base, rotary_of
from posenc.encodings import PositionOutOfRange
from posenc.eval_windows import all_token_windows, segment_window_ends, window_fragments
from posenc.passkey import PasskeyTask

# What other modules read from here, the windows' public names included.
__all__ = [
    "CPU",
    "POSITION_SEED",
    "Positions",
    "all_token_windows",
    "bits_per_char",
    "evaluate_lm",
    "evaluate_passkey",
    "gap_rows",
    "passkey_accuracy",
    "segment_window_ends",
    "window_fragments",
    "window_nll",
]

CPU = torch.device("cpu")
# Positions for a forward: fixed ones (or None for 0..L-1), or a function of the length that
# draws fresh ones for each batch (randomized positions).
Positions = Tensor | Callable[[int], Tensor] | None
# Seeds of randomized positions at evaluation, apart from the test sequences' own seeds.
POSITION_SEED = 1 << 20


@torch.no_grad()
def window_nll(
    model: nn.Module,
    tokens: Tensor,
    starts: Tensor,
    length: int,
    scored_from: int,
    positions: Positions,
    batch_windows: int,
    device: torch.device,
) -> Tensor:
    """Summed negative log-likelihood (nats) of the targets at window indices
    ``[scored_from, length)`` of each window starting at ``starts``. Shape (windows,), float64.
    ``positions``: see :data:`Positions`; a function is called once per batch of windows."""
    offsets = torch.arange(length + 1)
    sums = []
    for chunk in starts.split(batch_windows):
        window = tokens[chunk[:, None] + offsets].to(device)  # (B, L+1)
        logits = model(window[:, :-1], _positions(positions, length, device))  # (B, L, V)
        nll = F.cross_entropy(
            logits[:, scored_from:].float().transpose(1, 2),  # (B, V, scored)
            window[:, 1 + scored_from :],
            reduction="none",
        )  # (B, scored)
        sums.append(nll.double().sum(-1).cpu())
    return torch.cat(sums)


def _positions(positions: Positions, length: int, device: torch.device) -> Tensor | None:
    drawn = positions(length) if callable(positions) else positions
    return None if drawn is None else drawn.to(device)


def bits_per_char(
    model: nn.Module,
    tokens: Tensor,
    length: int,
    mode: str,
    *,
    tokens_scored: int,
    segment: int,
    segment_ends: Tensor | None,
    positions: Positions = None,
    batch_tokens: int = 8192,
    device: torch.device = CPU,
) -> dict[str, Any]:
    """Bits per character of ``model`` on ``tokens`` at window length ``length``.

    Returns {"bits_per_char", "window_bits" (each window's, in window order), "tokens_scored",
    "windows", "defined": True}, or, when the model has no encoding for some position (a
    learned table past L_max), {"bits_per_char": None, "defined": False, "reason": ...}:
    undefined, not a crash. ``tokens_scored``: mode ``all``'s tokens at every length.
    """
    if mode == "all":
        starts, scored_from = all_token_windows(len(tokens), length, tokens_scored), 0
    elif mode == "segment":
        starts, scored_from = segment_ends - length, length - segment
    else:
        raise ValueError(f"unknown scoring mode {mode!r} (all, segment)")
    try:
        nll = window_nll(
            model,
            tokens,
            starts,
            length,
            scored_from,
            positions,
            max(1, batch_tokens // length),
            device,
        )
    except PositionOutOfRange as err:
        return {
            "bits_per_char": None,
            "window_bits": [],
            "tokens_scored": 0,
            "windows": 0,
            "defined": False,
            "reason": str(err),
        }
    per_window = (nll / (length - scored_from) / math.log(2)).tolist()
    return {
        "bits_per_char": sum(per_window) / len(per_window),  # equal tokens in every window
        "window_bits": per_window,
        "tokens_scored": len(per_window) * (length - scored_from),
        "windows": len(per_window),
        "defined": True,
    }


def evaluate_lm(
    model: nn.Module,
    val_tokens: Tensor,
    train_tokens: Tensor,
    *,
    train_len: int,
    multipliers: list[int],
    tokens: int,
    segment: int,
    segment_windows: int,
    batch_tokens: int,
    device: torch.device,
    extensions: tuple[str, ...] | None = None,
    randomized: RandomizedPositions | None = None,
) -> list[dict[str, Any]]:
    """Rows (method, mode, split, multiplier, length, bits_per_char, ...) for one model.

    Validation text at every length in both modes; also with each context extension its
    encoding declares in the registry (``extensions``; None: looked up from the model's
    module); and the training text at L_train (mode ``all``) for the train/validation gap.
    A model trained with ``randomized`` positions is scored with them (fresh draws per batch,
    seeded by length and mode) and without context extensions, which rescale plain positions.
    """
    if randomized is not None:
        extensions = ()
    model.eval()
    lengths = [m * train_len for m in multipliers]
    ends = segment_window_ends(len(val_tokens), max(lengths), segment, segment_windows)
    rotary = rotary_of(model)
    extensions = extensions_of(model) if extensions is None else tuple(extensions)
    if extensions and rotary is None:
        raise ValueError(
            f"context extensions {', '.join(extensions)} rescale RoPE's positions or base; "
            "this model's encoding has no RoPE module"
        )
    methods: list[str | None] = [None, *extensions]
    common = _scoring(tokens, segment, batch_tokens, device)
    rows = []
    for method in methods:
        for m, length in zip(multipliers, lengths):
            positions, context = None, nullcontext()
            if rotary is not None:
                positions, base = extension_setup(
                    method, length, train_len, head_dim(model), rotary.base
                )
                context = rope_base(model, base)
            with context:
                for i, mode in enumerate(("all", "segment")):
                    if randomized is not None:
                        positions = randomized.sampler(POSITION_SEED + 2 * length + i)
                    result = bits_per_char(
                        model,
                        val_tokens,
                        length,
                        mode,
                        segment_ends=ends,
                        positions=positions,
                        **common,
                    )
                    rows.append(
                        {
                            "method": method or "plain",
                            "mode": mode,
                            "split": "val",
                            "multiplier": m,
                            "length": length,
                            **result,
                        }
                    )
    # The training text at L_train, scored as much as the validation text, for the gap.
    rows.append(_split_row(model, train_tokens, "train", "plain", train_len, randomized, common))
    return rows


def gap_rows(
    model: nn.Module,
    val_tokens: Tensor,
    train_tokens: Tensor,
    *,
    method: str,
    train_len: int,
    tokens: int,
    segment: int,
    batch_tokens: int,
    device: torch.device,
    randomized: RandomizedPositions | None = None,
) -> list[dict[str, Any]]:
    """Validation and training text at L_train (mode ``all``), scored exactly as
    :func:`evaluate_lm` scores the plain model there (the same windows), as rows under
    ``method``: the train/validation gap of another state of the model (an earlier snapshot),
    paired window by window with the final model's."""
    model.eval()
    common = _scoring(tokens, segment, batch_tokens, device)
    return [
        _split_row(model, text, split, method, train_len, randomized, common)
        for split, text in (("val", val_tokens), ("train", train_tokens))
    ]


def _scoring(tokens: int, segment: int, batch_tokens: int, device: torch.device) -> dict[str, Any]:
    """The arguments of :func:`bits_per_char` that every row of one model shares, so that
    :func:`gap_rows` scores exactly as :func:`evaluate_lm` does."""
    return {
        "tokens_scored": tokens,
        "segment": segment,
        "batch_tokens": batch_tokens,
        "device": device,
    }


def _split_row(model, text, split, method, train_len, randomized, common) -> dict[str, Any]:
    # Validation text: the positions the plain model's mode-all row at 1x draws; training text:
    # their own fixed draw.
    seed = POSITION_SEED + 2 * train_len if split == "val" else POSITION_SEED
    positions = randomized.sampler(seed) if randomized is not None else None
    result = bits_per_char(
        model, text, train_len, "all", segment_ends=None, positions=positions, **common
    )
    return {
        "method": method,
        "mode": "all",
        "split": split,
        "multiplier": 1,
        "length": train_len,
        **result,
    }


@torch.no_grad()
def passkey_accuracy(
    model: nn.Module,
    task: PasskeyTask,
    length: int,
    sequences: int,
    seed: int,
    batch_size: int,
    device: torch.device,
    positions: Positions = None,
) -> dict[str, Any]:
    """Exact match and per-token accuracy on ``sequences`` fresh passkey sequences of
    ``length`` tokens (the same sequences for every model: the generator is seeded), at
    ``positions`` (:data:`Positions`; a function is called once per batch).

    A sequence is right when the argmax at every scored position (the key tokens, each given
    the true prefix) is the target, which is greedy decoding of the whole key being right.
    Returns the accuracies with the outcome of every sequence, in order (``correct``: 1 or 0;
    ``tokens_correct``: how many of its key tokens were right), so that intervals can resample
    sequences. Undefined, not a crash, when the model has no encoding for some position.
    """
    # Drawn at once, then batched: the test sequences do not depend on the batch size.
    every_input, every_target = task.sample(torch.Generator().manual_seed(seed), sequences, length)
    correct: list[int] = []
    tokens_correct: list[int] = []
    try:
        for inputs, targets in zip(every_input.split(batch_size), every_target.split(batch_size)):
            scored = targets != IGNORE  # (B, L)
            at = _positions(positions, length, device)
            predicted = model(inputs.to(device), at).argmax(-1).cpu()  # (B, L)
            right = (predicted == targets) & scored
            tokens_correct += right.sum(-1).tolist()
            correct += (right == scored).all(-1).int().tolist()
    except PositionOutOfRange as err:
        return {
            "accuracy": None,
            "token_accuracy": None,
            "sequences": 0,
            "correct": [],
            "tokens_correct": [],
            "defined": False,
            "reason": str(err),
        }
    return {
        "accuracy": sum(correct) / sequences,
        "token_accuracy": sum(tokens_correct) / (sequences * task.key_len),
        "sequences": sequences,
        "correct": correct,
        "tokens_correct": tokens_correct,
        "defined": True,
    }


def evaluate_passkey(
    model: nn.Module,
    task: PasskeyTask,
    *,
    train_len: int,
    multipliers: list[int],
    sequences: int,
    seed: int,
    batch_size: int,
    device: torch.device,
    randomized: RandomizedPositions | None = None,
) -> list[dict[str, Any]]:
    """Accuracy at ``multipliers`` × the longest training length N, with each length's chance
    (a uniform guess of the key) and the bound on any predictor blind to order. A model
    trained with ``randomized`` positions is tested with them (drawn per batch, seeded by
    length)."""
    model.eval()
    rows = []
    for m in multipliers:
        length = m * train_len
        positions = None
        if randomized is not None:
            positions = randomized.sampler(POSITION_SEED + seed + m)
        result = passkey_accuracy(
            model, task, length, sequences, seed + m, batch_size, device, positions
        )
        rows.append(
            {
                "multiplier": m,
                "length": length,
                "key_len": task.key_len,
                "chance": task.chance,
                "position_blind_bound": task.position_blind_bound(length),
                **result,
            }
        )
    return rows
