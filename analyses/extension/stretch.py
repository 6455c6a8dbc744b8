"""Zero-shot stretches of every trained LM they apply to, not only RoPE's: query temperature
(log-n scaling, Llama 4's schedule; ``posenc.temperature``) for any encoding, and LongRoPE
(Ding et al. 2024; factors placed from a published profile, ``longrope.py``) for the encodings
whose spec declares rescalable frequencies.

Each arm is scored in mode b at every zero-shot length, on the windows every extension
evaluation scores (``scoring.py``), so every arm is paired with the plain model and with the
RoPE methods of the zero-shot evaluation by window. A temperature is scaled to the model:
log-n's L0 is its L_train. Llama 4's schedule is applied as Llama 4 applies it where the model
has Llama 4's layout (layers without position beside positional layers that attend within one
window, its chunk: the RNoPE hybrid), on those NoPE layers only with L0 = the window (arm
``llama4``); on any other model it is Llama-4-shaped (arm ``llama4_shaped``): every layer,
L0 = L_train. LongRoPE extends s = L / L_train at each length, as the other methods do.

A temperature scales the whole logit, t (q.k + b): for an encoding with an additive score bias
(``EncodingSpec.additive_bias``) the bias with the content, since log-n scaling's argument is
about a softmax temperature. On those encodings alone, each temperature in
``query_only_temperatures`` also runs on the query alone, t q.k + b (arm ``<arm>_q_only``), as a
contrast: elsewhere the two are the same model.
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
from .stretched import LLAMA4_SHAPED, QUERY_ONLY

LONGROPE = "longrope"


def llama4_setting(model: nn.Module) -> tuple[list[int], int] | None:
    """(its NoPE layers, its chunk) where ``model`` has Llama 4's layout: layers without
    position beside positional layers that all attend within one window (Llama 4's chunked
    RoPE layers; the RNoPE hybrid's windowed ones), read from the stack's declared layout and
    windows; None for any other model."""
    stack = model.stack
    nope = [i for i, acts in enumerate(stack.layout) if not acts]
    chunks = {w for acts, w in zip(stack.layout, stack.windows, strict=True) if acts}
    if nope and len(chunks) == 1 and None not in chunks:
        return nope, chunks.pop()
    return None


def _temperature_arm(model: nn.Module, name: str) -> str:
    """The arm a configured temperature is for this model: Llama 4's own where it applies."""
    if name == "llama4" and llama4_setting(model) is None:
        return LLAMA4_SHAPED
    return name


def arms_of(model: nn.Module, settings: dict[str, Any]) -> list[str]:
    """The plain model, each temperature, the query-only contrasts where the encoding has an
    additive bias, and LongRoPE where it is rescalable."""
    spec = model.stack.encoding.spec
    rescalable = spec is not None and spec.rescalable
    biased = spec is not None and spec.additive_bias
    temperatures = [_temperature_arm(model, t) for t in settings["temperatures"]]
    contrasts = [
        _temperature_arm(model, t) + QUERY_ONLY for t in settings["query_only_temperatures"]
    ]
    return [
        PLAIN,
        *temperatures,
        *(contrasts if biased else []),
        *([LONGROPE] if rescalable else []),
    ]


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
    scope = "query" if arm.endswith(QUERY_ONLY) else "logits"
    name = arm.removesuffix(QUERY_ONLY)
    beta = settings["llama4_beta"]
    if name == "llama4":  # as Llama 4 applies it: its NoPE layers, L0 = its chunk
        nope, chunk = llama4_setting(model)
        schedule = temperature("llama4", train_len, {"beta": beta, "floor_scale": chunk})
        return query_temperature(model, schedule, layers=nope, scope=scope)
    if name == LLAMA4_SHAPED:
        name = "llama4"
    schedule = temperature(name, train_len, {"beta": beta})
    return query_temperature(model, schedule, scope=scope)


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
