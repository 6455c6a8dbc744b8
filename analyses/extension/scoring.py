"""The extension analysis' evaluations: bits/char of the validation text, scored as the
extrapolation section scores it (``posenc.evaluate.bits_per_char``), with the segment windows
ending at the same places in every evaluation, so every comparison is paired by window.

* :func:`zero_shot`: the trained model, plain and with each method at s = L / L_train;
* :func:`evaluate_finetuned`: a fine-tune's snapshots, with its method at its scale (the
  continued-training control's: plain RoPE at s = 1).

Apart from the fine-tuning in ``stages.py``: the fine-tunes do not import the evaluation code,
so a change to it re-evaluates and never fine-tunes again.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from posenc.evaluate import bits_per_char, segment_window_ends

from .stages import PLAIN, corpus_of, method_rope, rescaled


def segment_ends(corpus, train_len: int, settings: dict[str, Any]):
    """Where mode b's windows end: the same places at every length up to the longest, for
    every evaluation of the section (zero-shot, fine-tunes, stretches)."""
    return segment_window_ends(
        len(corpus.val),
        settings["longest"] * train_len,
        settings["segment"],
        settings["segment_windows"],
    )


def score(model, corpus, length, mode, ends, settings, device) -> dict[str, Any]:
    """Bits/char of the validation text at ``length`` in ``mode``, as every evaluation of the
    section scores it."""
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
    ends = segment_ends(corpus, train_len, settings)
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
                result = score(model, corpus, length, mode, ends, settings, device)
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
    every snapshot, with the fine-tune's method at its scale s, at s x L_train, where it was
    fine-tuned, and at every length of the fine-tuning evaluation beyond (mode b). The
    continued-training control (plain, s = 1) is so scored at L_train too."""
    corpus, train_len = corpus_of(meta), meta["train_len"]
    ends = segment_ends(corpus, train_len, settings)
    method, scale = finetune["method"], finetune["scale"]
    base = {k: v.clone() for k, v in model.state_dict().items()}
    multipliers = sorted({scale, *(m for m in settings["finetune_multipliers"] if m >= scale)})
    rows = []
    for step, weights in [(0, base), *sorted(snapshots.items())]:
        model.load_state_dict(weights)
        model.eval()
        for m in multipliers:
            length = m * train_len
            scaled = method_rope(model, method, scale, train_len, finetune["params"], length)
            with rescaled(model, scaled):
                result = score(model, corpus, length, "segment", ends, settings, device)
            rows.append({"step": step, "multiplier": m, "length": length, **result})
    return rows
