"""The extension analysis' stages before the aggregate, pure and importable (the rule scripts
``finetune.py`` and ``evaluate.py`` only unpack Snakemake). Fine-tuning is here; scoring is in
``scoring.py``, so that a change to the evaluation code (``posenc.evaluate``) re-evaluates
without fine-tuning again:

* :func:`finetune`: a trained RoPE-family LM, its RoPE rescaled by one method at scale s, trained
  on for a few hundred steps on windows of s x L_train, keeping its weights at the configured
  steps. Resumable as training is (``posenc.train``): a killed fine-tune continues from its
  last checkpoint and ends with the same weights and snapshots.
* :func:`zero_shot` and :func:`evaluate_finetuned`: bits/char of the validation text, scored as
  the extrapolation section scores it (``posenc.evaluate.bits_per_char``), with the segment
  windows ending at the same places in every evaluation, so every comparison is paired by
  window.

A method at scale s applies to a window of length L as ``posenc.rope_scaling.scaled_rope``
says: fixed methods (pi, ntk, yarn, llama3) by s alone, dynamic NTK by s and L (transformers'
"dynamic": plain up to the original length).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn

from posenc.data import lm_batches, trained_corpus
from posenc.encodings import PositionalEncoding
from posenc.rope_scaling import ScaledRope, scaled_rope
from posenc.train import TrainConfig, train

PLAIN = "plain"


def rotary(model: nn.Module) -> PositionalEncoding:
    """The model's encoding, whose spec declares its frequencies rescalable (RoPE's scaling
    hook: ``base``, ``scaling``, ``rotated_width``)."""
    encoding = model.stack.encoding
    if encoding.spec is None or not encoding.spec.rescalable:
        name = encoding.spec.name if encoding.spec else type(encoding).__name__
        raise ValueError(f"{name} does not declare rescalable frequencies: nothing to rescale")
    if len(encoding.groups) > 1:
        # The methods rescale one spectrum (rotated_width, base); heads with their own would
        # each need their own rescaling, which no method here defines.
        raise ValueError(
            f"{encoding.spec.name}: its heads differ (heads() gives {len(encoding.groups)} "
            "groups), and a context extension rescales one spectrum"
        )
    return encoding


def method_rope(
    model: nn.Module, method: str, scale: float, train_len: int, params: dict, length: int
) -> ScaledRope | None:
    """``method`` at ``scale`` for a window of ``length`` on ``model``'s RoPE (None: plain)."""
    if method == PLAIN:
        return None
    enc = rotary(model)
    return scaled_rope(
        method, enc.rotated_width, enc.base, scale, train_len, dict(params), length=length
    )


@contextmanager
def rescaled(model: nn.Module, scaled: ScaledRope | None) -> Iterator[None]:
    """``model``'s RoPE with ``scaled``'s frequencies and attention factor (None: plain),
    restored afterwards, even on error."""
    enc = rotary(model)
    previous = enc.scaling
    if scaled is not None:
        enc.scaling = (torch.tensor(scaled.inv_freq, dtype=torch.float64), scaled.attention_factor)
    try:
        yield
    finally:
        enc.scaling = previous


def corpus_of(meta: dict[str, Any]):
    """The corpus the base model trained on, split as it was (``posenc.data.trained_corpus``)."""
    return trained_corpus(meta["data"])


class ScaledDuringTraining(nn.Module):
    """The model with its RoPE rescaled for every forward of the fine-tune: the method at scale
    s, for windows of the training length (dynamic NTK's length is the window's)."""

    def __init__(self, model: nn.Module, scaled: ScaledRope | None):
        super().__init__()
        self.model, self.scaled = model, scaled

    def forward(self, tokens, positions=None):
        with rescaled(self.model, self.scaled):
            return self.model(tokens, positions)


def finetune(
    model: nn.Module,
    meta: dict[str, Any],
    settings: dict[str, Any],
    *,
    seed: int,
    device: torch.device,
    label: str,
    resume_path: str | None = None,
    fingerprint: str = "",
    progress=None,
    log=print,
) -> tuple[dict[int, dict], dict[str, Any]]:
    """Fine-tune ``model`` (a trained LM, ``meta`` its checkpoint metadata) in place with
    ``settings`` = {"method", "scale", "params", "train", "snapshots"}; returns ({step:
    weights} at every snapshot step, the training log)."""
    train_len, scale = meta["train_len"], settings["scale"]
    length = scale * train_len
    corpus = corpus_of(meta)
    scaled = method_rope(model, settings["method"], scale, train_len, settings["params"], length)
    keys = set(TrainConfig.__dataclass_fields__)
    cfg = TrainConfig(**{k: v for k, v in settings["train"].items() if k in keys})
    run_log = train(
        ScaledDuringTraining(model, scaled),
        lm_batches(corpus.train, length),
        cfg,
        seed=seed,
        device=device,
        label=label,
        resume_path=resume_path,
        fingerprint=fingerprint,
        progress=progress,
        log=log,
        snapshot_steps=tuple(settings["snapshots"]),
    )
    # The wrapper's state dict prefixes every key with "model."; the snapshots are the LM's.
    snapshots = {
        step: {k.removeprefix("model."): v for k, v in weights.items()}
        for step, weights in run_log.pop("snapshots").items()
    }
    return snapshots, run_log
