"""The extension analysis' stages before the aggregate, pure and importable (the rule scripts
``finetune.py`` and ``evaluate.py`` only unpack Snakemake):

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
from posenc.encodings import Rotary
from posenc.evaluate import bits_per_char, segment_window_ends
from posenc.rope_scaling import ScaledRope, scaled_rope
from posenc.train import TrainConfig, train

PLAIN = "plain"


def rotary(model: nn.Module) -> Rotary:
    encoding = model.stack.encoding
    if not isinstance(encoding, Rotary):
        raise ValueError(f"{type(encoding).__name__} is not RoPE-family: nothing to rescale")
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


def _segment_ends(corpus, train_len: int, settings: dict[str, Any]):
    return segment_window_ends(
        len(corpus.val),
        settings["longest"] * train_len,
        settings["segment"],
        settings["segment_windows"],
    )


def _score(model, corpus, length, mode, ends, settings, device) -> dict[str, Any]:
    return bits_per_char(
        model,
        corpus.val,
        length,
        mode,
        tokens_scored=settings["tokens"],
        segment=settings["segment"],
        segment_ends=ends,
        batch_tokens=settings["batch_tokens"],
        device=device,
    )


@torch.no_grad()
def zero_shot(
    model: nn.Module, meta: dict[str, Any], settings: dict[str, Any], device: torch.device
) -> list[dict[str, Any]]:
    """Rows (method, scale, mode, multiplier, length, bits ...) of the trained model, plain and
    with each method at s = L / L_train at every zero-shot length, both modes; and dynamic NTK
    with each fine-tuning scale as its factor at L_train, where it must be plain."""
    model.eval()
    corpus, train_len = corpus_of(meta), meta["train_len"]
    ends = _segment_ends(corpus, train_len, settings)
    runs = [(PLAIN, 1, m) for m in settings["zero_shot_multipliers"]]
    runs += [(x, m, m) for x in settings["methods"] for m in settings["zero_shot_multipliers"]]
    if "dynamic" in settings["methods"]:
        runs += [("dynamic", s, 1) for s in settings["finetune_scales"] if s > 1]
    rows = []
    for method, scale, m in runs:
        length = m * train_len
        params = settings["params"].get(method, {})
        scaled = method_rope(model, method, scale, train_len, params, length)
        with rescaled(model, scaled):
            for mode in ("all", "segment"):
                result = _score(model, corpus, length, mode, ends, settings, device)
                rows.append(
                    {
                        "method": method,
                        "scale": scale,
                        "mode": mode,
                        "multiplier": m,
                        "length": length,
                        **result,
                    }
                )
    return rows


@torch.no_grad()
def evaluate_finetuned(
    model: nn.Module,
    meta: dict[str, Any],
    snapshots: dict[int, dict],
    finetune: dict[str, Any],
    settings: dict[str, Any],
    device: torch.device,
) -> list[dict[str, Any]]:
    """Rows (step, multiplier, length, bits ...) of a fine-tune: the base model (step 0) and
    every snapshot, with the fine-tune's method at its scale s, at every length of the
    fine-tuning evaluation from s x L_train on (mode b)."""
    corpus, train_len = corpus_of(meta), meta["train_len"]
    ends = _segment_ends(corpus, train_len, settings)
    method, scale = finetune["method"], finetune["scale"]
    base = {k: v.clone() for k, v in model.state_dict().items()}
    rows = []
    for step, weights in [(0, base), *sorted(snapshots.items())]:
        model.load_state_dict(weights)
        model.eval()
        for m in (m for m in settings["finetune_multipliers"] if m >= scale):
            length = m * train_len
            scaled = method_rope(model, method, scale, train_len, finetune["params"], length)
            with rescaled(model, scaled):
                result = _score(model, corpus, length, "segment", ends, settings, device)
            rows.append({"step": step, "multiplier": m, "length": length, **result})
    return rows
