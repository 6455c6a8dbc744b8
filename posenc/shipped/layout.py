"""What is not one RoPE: NoPE layers, per-type bases, M-RoPE sections, Llama 4's query
temperature, ALiBi slopes, T5 buckets; and the jumps a shipped config carries."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from posenc.shipped import formula
from posenc.shipped.frequencies import LayerType, ulps


def layout(config, entry: dict, lts: list[LayerType], context: int, t5_max: int) -> dict:
    """What is not one RoPE: NoPE layers, per-type bases, M-RoPE sections, Llama 4's query
    temperature, ALiBi slopes, T5 buckets."""
    text = config.get_text_config()
    n_layers = getattr(text, "num_hidden_layers", None)
    out: dict[str, Any] = {"layers": n_layers}
    no_rope = getattr(text, "no_rope_layers", None)
    if no_rope:  # transformers: 1 = this layer rotates, 0 = NoPE
        out["nope_layers"] = [i for i, r in enumerate(no_rope) if not r]
    kinds = getattr(text, "layer_types", None)
    if kinds:
        out["layer_types"] = {k: kinds.count(k) for k in dict.fromkeys(kinds)}
    out["bases"] = {lt.name: {"base": lt.base, "rope_type": lt.rope_type} for lt in lts}
    rope = getattr(text, "rope_parameters", None) or {}
    section = rope.get("mrope_section") if isinstance(rope, dict) else None
    if section and lts:
        # Qwen2-VL: one spectrum over the head; pair chunks take t, h, w positions in turn.
        bounds = np.cumsum([0, *section])
        w = lts[0].formula
        out["mrope"] = [
            {
                "stream": stream,
                "pairs": f"{bounds[i]}–{bounds[i + 1] - 1}",
                "fastest": float(w[bounds[i]]),
                "slowest": float(w[bounds[i + 1] - 1]),
            }
            for i, stream in enumerate(("t", "h", "w"))
        ]
    if getattr(text, "attn_temperature_tuning", False):
        floor, a = float(text.floor_scale), float(text.attn_scale)

        def temperature(p):  # Llama 4, NoPE layers: q·(1 + a·ln(⌊(p + 1)/floor⌋ + 1))
            return 1 + a * math.log(math.floor((p + 1) / floor) + 1)

        out["temperature"] = {
            "floor_scale": floor,
            "attn_scale": a,
            "first_step": int(floor) - 1,
            "at_context": temperature(context - 1),
            "steps_within_context": math.floor(context / floor),
        }
    if entry["model_type"] == "bloom":
        from transformers.models.bloom.modeling_bloom import build_alibi_tensor

        from posenc.encodings import alibi_slopes

        heads = text.n_head
        ours = alibi_slopes(heads).numpy()
        theirs = (
            build_alibi_tensor(torch.ones(1, 2), heads, torch.float32)[:, 0, 1].double().numpy()
        )
        out["alibi"] = {
            "heads": heads,
            "slopes": ours.tolist(),
            "transformers_ulps": ulps(theirs, ours),
        }
    if entry["model_type"] == "t5":
        from transformers.models.t5.modeling_t5 import T5Attention

        from posenc.encodings import t5_relative_bucket

        nb, md = text.relative_attention_num_buckets, text.relative_attention_max_distance
        rel = torch.arange(-t5_max, t5_max + 1)
        ours = t5_relative_bucket(rel, True, nb, md)
        theirs = T5Attention._relative_position_bucket(rel, True, nb, md)
        firsts = {}
        for r, b in zip(rel.tolist(), ours.tolist()):
            if r >= 0:
                firsts.setdefault(b, r)
        out["t5"] = {
            "num_buckets": nb,
            "max_distance": md,
            "bucket_starts": list(firsts.values()),
            "transformers_mismatches": int((ours != theirs).sum()),
            "checked_within": t5_max,
        }
    return out


def discontinuities(config, lts: list[LayerType], context: int) -> list[dict]:
    """The jumps a shipped config carries: LongRoPE's factor switch at L (each frequency's jump,
    and the angle error of keys cached before it), llama3's empty band, and YaRN's truncate."""
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    out = []
    for lt in lts:
        if lt.rope_type == "longrope":
            long_omega, _ = formula.inv_freq(
                "longrope", lt.width, lt.base, lt.params, lt.original + 1
            )
            long_omega = np.array(long_omega)
            jump = long_omega / lt.formula
            cached = float(((lt.original - 1) * np.abs(long_omega - lt.formula)).max())
            text = config.get_text_config()
            tf_long = ROPE_INIT_FUNCTIONS["longrope"](text, None, seq_len=lt.original + 1)[0]
            out.append(
                {
                    "layer_type": lt.name,
                    "kind": "longrope switch at L",
                    "at": lt.original,
                    "largest_jump": float(jump.min()),
                    "smallest_jump": float(jump.max()),
                    "cached_key_error": cached,
                    "transformers_long_ulps": ulps(tf_long.double().numpy(), long_omega),
                    "note": "keys cached up to L with the short factors, read at L + 1 with the "
                    "long ones; transformers recomputes the cache, llama.cpp picks by n_ctx",
                }
            )
        if lt.rope_type == "llama3" and lt.params.get("low_freq_factor") == lt.params.get(
            "high_freq_factor"
        ):
            finite = lt.transformers is not None and bool(np.isfinite(lt.transformers).all())
            out.append(
                {
                    "layer_type": lt.name,
                    "kind": "llama3 with low_freq_factor = high_freq_factor",
                    "at": lt.original,
                    "transformers_finite": finite,
                    "transformers_vs_step_ulps": None
                    if lt.transformers is None
                    else ulps(lt.transformers, lt.formula),
                    "note": "empty band: a step at wavelength L; Meta's code asserts low != high, "
                    "transformers discards the 0/0 with torch.where",
                }
            )
        if lt.rope_type == "yarn":
            flip = dict(lt.params, truncate=not (lt.params.get("truncate", True) is not False))
            other, _ = formula.inv_freq("yarn", lt.width, lt.base, flip)
            other = np.array(other)
            args = (
                lt.width,
                lt.base,
                lt.original,
                lt.params.get("beta_fast") or 32.0,
                lt.params.get("beta_slow") or 1.0,
            )
            out.append(
                {
                    "layer_type": lt.name,
                    "kind": "yarn truncate true vs false",
                    "shipped_truncate": lt.params.get("truncate", True) is not False,
                    "bounds_truncated": list(formula.yarn_bounds(*args, True)),
                    "bounds_untruncated": [round(b, 4) for b in formula.yarn_bounds(*args, False)],
                    "max_relative_difference": float(
                        (np.abs(other - lt.formula) / lt.formula).max()
                    ),
                    "angle_difference_at_context": float(
                        ((context - 1) * np.abs(other - lt.formula)).max()
                    ),
                }
            )
        if lt.rope_type == "dynamic":
            out.append(
                {
                    "layer_type": lt.name,
                    "kind": "dynamic NTK ratchet",
                    "note": "transformers keeps the longest length's base until a call below L",
                }
            )
    return out
