"""Evaluation of trained models at and beyond their training length.

Language models are scored in bits per character in two modes (both reported):

* ``all``: every token of non-overlapping windows of length L. The usual number, but a longer
  window scores different text, and its early tokens get more context, so lengths are not
  strictly comparable (Press et al. 2022, Appendix B).
* ``segment``: only the last ``S`` tokens of windows that *end at the same positions* at every L.
  The scored tokens are identical at every length; only the context before them grows. The
  comparison across lengths is then paired, and free of the ~±0.08 bits/char that scoring
  different text adds here.

Evaluation-time context extension of a trained RoPE model, without fine-tuning, as pure
functions of the evaluation length L and the training length L_train:

* Position Interpolation (Chen et al. 2023): positions p -> p * L_train / L, so every angle stays
  within the trained range.
* NTK-aware scaling (bloc97 2023; Peng et al. 2023 §3.1): base -> base * s^(d / (d - 2)) with
  s = L / L_train and d the head dimension, which stretches the low frequencies like
  interpolation while leaving the highest frequency almost untouched.

A learned table has no rows past L_max: such lengths are reported as undefined, explicitly.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from posenc.data import PasskeyTask
from posenc.encodings import REGISTRY, PositionOutOfRange, Rotary

EXTENSIONS = ("pi", "ntk")  # context-extension methods for RoPE, besides the plain model
CPU = torch.device("cpu")


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
    return float(base) * scale ** (head_dim / (head_dim - 2))


def rotary_of(model: nn.Module) -> Rotary | None:
    """The model's RoPE module (shared by every layer), or None for other encodings."""
    encoding = model.stack.encoding
    return encoding if isinstance(encoding, Rotary) else None


def extensions_of(model: nn.Module) -> tuple[str, ...]:
    """The context extensions the registry declares for the model's encoding
    (``EncodingSpec.extensions``; none for a module the registry does not know)."""
    encoding = model.stack.encoding
    return next((s.extensions for s in REGISTRY.values() if type(encoding) is s.module), ())


@contextmanager
def rope_base(model: nn.Module, base: float) -> Iterator[None]:
    """Temporarily evaluate ``model``'s RoPE with ``base``; restored afterwards, even on error."""
    rotary = rotary_of(model)
    if rotary is None:
        raise ValueError("rope_base needs a model with the rope encoding")
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


def all_token_windows(n_tokens: int, length: int, max_windows: int) -> Tensor:
    """Starts of non-overlapping windows for mode ``all``: window s reads tokens[s : s+L] and
    predicts tokens[s+1 : s+L+1]. At most ``max_windows``, spread evenly over the text."""
    available = (n_tokens - 1) // length
    if available < 1:
        raise ValueError(f"{n_tokens} tokens hold no window of length {length}")
    count = min(available, max_windows)
    picks = torch.linspace(0, available - 1, count).round().long().unique()
    return picks * length


def segment_window_ends(n_tokens: int, max_length: int, segment: int, n_windows: int) -> Tensor:
    """Last input index + 1 of each window for mode ``segment``, the same at every length.

    Window of length L ending at e reads tokens[e-L : e] and predicts tokens[e-L+1 : e+1]; its
    last ``segment`` predictions are scored. The ends start at ``max_length`` (so the longest
    window fits) and are spread over the rest of the text, at least ``segment`` apart so no
    token is scored twice.
    """
    room = n_tokens - 1 - max_length  # ends may range over [max_length, n_tokens - 1]
    if n_windows < 1 or room < (n_windows - 1) * segment:
        raise ValueError(
            f"{n_tokens} tokens cannot hold {n_windows} scored segments of {segment} tokens "
            f"after a context of {max_length}: lower extrapolation.lm.eval.segment_windows, "
            "segment or the largest multiplier"
        )
    stride = room // max(n_windows - 1, 1)
    return max_length + stride * torch.arange(n_windows)


@torch.no_grad()
def window_nll(
    model: nn.Module,
    tokens: Tensor,
    starts: Tensor,
    length: int,
    scored_from: int,
    positions: Tensor | None,
    batch_windows: int,
    device: torch.device,
) -> tuple[float, int]:
    """Summed negative log-likelihood (nats) and count of the targets at window indices
    ``[scored_from, length)`` of the windows starting at ``starts``."""
    offsets = torch.arange(length + 1)
    total, count = 0.0, 0
    if positions is not None:
        positions = positions.to(device)
    for chunk in starts.split(batch_windows):
        window = tokens[chunk[:, None] + offsets].to(device)  # (B, L+1)
        logits = model(window[:, :-1], positions)  # (B, L, V)
        nll = F.cross_entropy(
            logits[:, scored_from:].float().flatten(0, 1),
            window[:, 1 + scored_from :].flatten(),
            reduction="sum",
        )
        total += float(nll)
        count += chunk.numel() * (length - scored_from)
    return total, count


def bits_per_char(
    model: nn.Module,
    tokens: Tensor,
    length: int,
    mode: str,
    *,
    max_windows: int,
    segment: int,
    segment_ends: Tensor | None,
    positions: Tensor | None = None,
    batch_tokens: int = 8192,
    device: torch.device = CPU,
) -> dict[str, Any]:
    """Bits per character of ``model`` on ``tokens`` at window length ``length``.

    Returns {"bits_per_char", "tokens_scored", "windows", "defined": True}, or, when the model
    has no encoding for some position (a learned table past L_max),
    {"bits_per_char": None, "defined": False, "reason": ...}: undefined, not a crash.
    """
    if mode == "all":
        starts, scored_from = all_token_windows(len(tokens), length, max_windows), 0
    elif mode == "segment":
        starts, scored_from = segment_ends - length, length - segment
    else:
        raise ValueError(f"unknown scoring mode {mode!r} (all, segment)")
    try:
        nll, count = window_nll(
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
            "tokens_scored": 0,
            "windows": 0,
            "defined": False,
            "reason": str(err),
        }
    return {
        "bits_per_char": nll / count / math.log(2),
        "tokens_scored": count,
        "windows": int(starts.numel()),
        "defined": True,
    }


def evaluate_lm(
    model: nn.Module,
    val_tokens: Tensor,
    train_tokens: Tensor,
    *,
    train_len: int,
    multipliers: list[int],
    max_windows: int,
    segment: int,
    segment_windows: int,
    batch_tokens: int,
    device: torch.device,
    extensions: tuple[str, ...] | None = None,
) -> list[dict[str, Any]]:
    """Rows (method, mode, split, multiplier, length, bits_per_char, ...) for one model.

    Validation text at every length in both modes; also with each context extension its
    encoding declares in the registry (``extensions``; None: looked up from the model's
    module); and the training text at L_train (mode ``all``) for the train/validation gap.
    """
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
    common = {
        "max_windows": max_windows,
        "segment": segment,
        "batch_tokens": batch_tokens,
        "device": device,
    }
    rows = []
    for method in methods:
        for m, length in zip(multipliers, lengths):
            positions, context = None, nullcontext()
            if rotary is not None:
                positions, base = extension_setup(
                    method, length, train_len, _head_dim(model), rotary.base
                )
                context = rope_base(model, base)
            with context:
                for mode in ("all", "segment"):
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
    train_result = bits_per_char(model, train_tokens, train_len, "all", segment_ends=None, **common)
    rows.append(
        {
            "method": "plain",
            "mode": "all",
            "split": "train",
            "multiplier": 1,
            "length": train_len,
            **train_result,
        }
    )
    return rows


@torch.no_grad()
def passkey_accuracy(
    model: nn.Module,
    task: PasskeyTask,
    length: int,
    sequences: int,
    seed: int,
    batch_size: int,
    device: torch.device,
) -> dict[str, Any]:
    """Exact-match accuracy on ``sequences`` fresh passkey sequences of ``length`` tokens (the
    same sequences for every model: the generator is seeded). Undefined, not a crash, when the
    model has no encoding for some position."""
    generator = torch.Generator().manual_seed(seed)
    correct = 0
    try:
        for start in range(0, sequences, batch_size):
            inputs, targets = task.sample(generator, min(batch_size, sequences - start), length)
            logits = model(inputs.to(device))[:, -1]  # (B, V): the answer after QUERY
            correct += int((logits.argmax(-1).cpu() == targets[:, -1]).sum())
    except PositionOutOfRange as err:
        return {"accuracy": None, "sequences": 0, "defined": False, "reason": str(err)}
    return {"accuracy": correct / sequences, "sequences": sequences, "defined": True}


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
) -> list[dict[str, Any]]:
    """Accuracy at ``multipliers`` × the longest training length N."""
    model.eval()
    rows = []
    for m in multipliers:
        length = m * train_len
        result = passkey_accuracy(model, task, length, sequences, seed + m, batch_size, device)
        rows.append({"multiplier": m, "length": length, **result})
    return rows


def _head_dim(model: nn.Module) -> int:
    return model.stack.cfg.d_model // model.stack.cfg.n_heads
