"""Zero-shot stretches of every trained LM they apply to, not only RoPE's: query temperature
(log-n scaling, Llama 4's schedule; ``posenc.temperature``) for any encoding, and LongRoPE
(Ding et al. 2024; factors placed from a published profile, ``longrope.py``) for the encodings
whose spec declares rescalable frequencies.

Each arm is scored in mode b at every zero-shot length, on the windows every extension
evaluation scores (``scoring.py``), so every arm is paired with the plain model and with the
RoPE methods of the zero-shot evaluation by window. A temperature is scaled to the model:
log-n's and Llama 4's L0 are its L_train; LongRoPE extends s = L / L_train at each length, as
the other methods do.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

import torch
from torch import nn

from posenc.model import query_temperature
from posenc.rope_scaling import scaled_rope
from posenc.temperature import temperature

from .longrope import longrope_params
from .scoring import score, segment_ends
from .stages import PLAIN, corpus_of, rescaled, rotary

LONGROPE = "longrope"


def arms_of(model: nn.Module, settings: dict[str, Any]) -> list[str]:
    """The plain model, each temperature, and LongRoPE where the encoding is rescalable."""
    spec = model.stack.encoding.spec
    rescalable = spec is not None and spec.rescalable
    return [PLAIN, *settings["temperatures"], *([LONGROPE] if rescalable else [])]


def _arm(model, arm: str, settings: dict[str, Any], train_len: int, m: int):
    """The context that applies ``arm`` at m x L_train."""
    if arm == PLAIN:
        return nullcontext()
    if arm == LONGROPE:
        enc = rotary(model)
        params = longrope_params(settings["longrope"], enc.rotated_width, enc.base, m)
        scaled = scaled_rope(
            LONGROPE, enc.rotated_width, enc.base, m, train_len, params, length=m * train_len
        )
        return rescaled(model, scaled)
    schedule = temperature(arm, train_len, {"beta": settings["llama4_beta"]})
    return query_temperature(model, schedule)


@torch.no_grad()
def stretch(
    model: nn.Module, meta: dict[str, Any], settings: dict[str, Any], device: torch.device
) -> list[dict[str, Any]]:
    """Rows (method, scale, mode, multiplier, length, bits ...) of every arm at every
    zero-shot length, mode b; ``scale`` is the LongRoPE extension (L / L_train) and 1 for the
    others, whose schedules need none."""
    model.eval()
    corpus, train_len = corpus_of(meta), meta["train_len"]
    ends = segment_ends(corpus, train_len, settings)
    rows = []
    for arm in arms_of(model, settings):
        for m in settings["zero_shot_multipliers"]:
            length = m * train_len
            with _arm(model, arm, settings, train_len, m):
                result = score(model, corpus, length, "segment", ends, settings, device)
            rows.append(
                {
                    "method": arm,
                    "scale": m if arm == LONGROPE else 1,
                    "mode": "segment",
                    "multiplier": m,
                    "length": length,
                    **result,
                }
            )
    return rows
