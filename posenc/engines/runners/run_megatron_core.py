"""Megatron-Core's rotary frequencies and angles for a config.json (see _protocol.py).

Megatron-Core reads no config.json: GPTModel takes rotary_base, rotary_percent,
seq_len_interpolation_factor, rope_scaling/rope_scaling_factor (Llama 3.x) or, for
position_embedding_type="yarn", the config's yarn_* fields, and builds one RotaryEmbedding or
YarnRotaryEmbedding for every layer (models/gpt/gpt_model.py). The HF mapping is Megatron-Bridge's
(its LlamaBridge passes only the llama3 ``factor``): linear -> seq_len_interpolation_factor,
llama3 -> rope_scaling=True with rope_scaling_factor, yarn -> YarnRotaryEmbedding.

Megatron's forward moves the frequencies to ``torch.cuda.current_device()`` on first use; on a
CPU the runner points that call at the CPU while the engine's code runs, and changes nothing else.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import warnings

import _protocol
import torch

with warnings.catch_warnings():  # "Transformer Engine and Apex are not installed": expected
    warnings.simplefilter("ignore")
    from megatron.core.models.common.embeddings import rope_utils
    from megatron.core.models.common.embeddings.rotary_pos_embedding import RotaryEmbedding
    from megatron.core.models.common.embeddings.yarn_rotary_pos_embedding import (
        YarnRotaryEmbedding,
    )

# What RotaryEmbedding._apply_scaling fixes: __init__ passes it only the factor.
LLAMA3_FIXED = {
    "low_freq_factor": 1,
    "high_freq_factor": 4,
    "original_max_position_embeddings": 8192,
}


@contextlib.contextmanager
def _cuda_is_cpu():
    saved = torch.cuda.current_device
    torch.cuda.current_device = lambda: "cpu"
    try:
        yield
    finally:
        torch.cuda.current_device = saved


def _rope(config: dict) -> dict:
    """The config's rope parameters, in either of HF's spellings (one set: Megatron-Core
    has one rotary embedding per model)."""
    params = config.get("rope_parameters") or {}
    if (
        "full_attention" in params
        or "sliding_attention" in params
        or "rope_local_base_freq" in config
    ):
        raise _protocol.CannotExpress(
            "a second RoPE base for sliding layers (GPTModel builds one rotary embedding for all "
            "layers; Gemma 3's local base exists in Megatron-Bridge, not in Megatron-Core)"
        )
    return {
        "rope_theta": config.get("rope_theta", 10000),
        **(config.get("rope_scaling") or {}),
        **params,
    }


def _module(config: dict):
    """The rotary module GPTModel builds for this config, and the arguments it was given."""
    rope = _rope(config)
    rope_type = rope.get("rope_type", rope.get("type", "default"))
    if config.get("qk_rope_head_dim"):
        # Multi-latent attention (DeepSeek) rotates a separate qk_rope_head_dim part, which
        # Megatron-Core's MLA builds apart from GPTModel's rotary embedding (not mapped here).
        raise _protocol.CannotExpress(
            "multi-latent attention's rotated part (qk_rope_head_dim): this runner maps "
            "GPTModel's rotary embedding only"
        )
    head_dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    common = dict(
        kv_channels=head_dim,
        # GPT-NeoX names the rotated share rotary_pct; Megatron's rotary_percent is the same.
        rotary_percent=config.get("partial_rotary_factor", config.get("rotary_pct", 1.0)),
        rotary_base=rope["rope_theta"],
        use_cpu_initialization=True,
    )
    if rope_type == "default":
        kwargs = {}
    elif rope_type == "linear":
        kwargs = {"seq_len_interpolation_factor": rope["factor"]}
    elif rope_type == "llama3":
        for key, fixed in LLAMA3_FIXED.items():
            if rope.get(key, fixed) != fixed:
                raise _protocol.CannotExpress(
                    f"llama3 {key} {rope[key]} (Megatron-Core's _apply_scaling fixes it at {fixed})"
                )
        kwargs = {"rope_scaling": True, "rope_scaling_factor": rope["factor"]}
    elif rope_type == "yarn":
        if rope.get("attention_factor") is not None:
            raise _protocol.CannotExpress(
                "YaRN's attention_factor (Megatron-Core has no such field)"
            )
        kwargs = dict(
            scaling_factor=rope["factor"],
            original_max_position_embeddings=rope.get(
                "original_max_position_embeddings", config["max_position_embeddings"]
            ),
            beta_fast=rope.get("beta_fast", 32.0),
            beta_slow=rope.get("beta_slow", 1.0),
            # None where the config has none: the factor is then 0.1·ln(s) + 1, as in HF.
            mscale=rope.get("mscale"),
            mscale_all_dim=rope.get("mscale_all_dim"),
            correction_range_round_to_int=rope.get("truncate", True),
        )
        with _cuda_is_cpu():
            return YarnRotaryEmbedding(**common, **kwargs), {**common, **kwargs}, rope_type
    else:
        raise _protocol.CannotExpress(
            f"RoPE scaling type {rope_type!r} (Megatron-Core has no code for it)"
        )
    return RotaryEmbedding(**common, **kwargs), {**common, **kwargs}, rope_type


def measure(model: dict) -> dict:
    config, context, positions = model["config"], model["context"], model["positions"]
    module, kwargs, rope_type = _module(config)
    yarn = isinstance(module, YarnRotaryEmbedding)
    with _cuda_is_cpu():
        # What GPTModel.forward asks for a sequence of `context` tokens: (context, 1, 1, dim)
        # angles, the two halves repeated, and for YaRN the factor attention puts on cos/sin.
        emb, factor = module(context) if yarn else (module(context), 1.0)
    pairs = emb.shape[-1] // 2
    # The table's row at position 1 is the frequency a run uses, whatever the type: YaRN keeps
    # no blended inv_freq, and linear scaling multiplies the positions, not the frequencies.
    inv_freq = emb[1, 0, 0, :pairs]
    index = torch.as_tensor(positions)
    table = emb[index]

    def rotate(x, pos):
        # The unfused path apply_rotary_pos_emb takes (apply_rope_fusion False, bshd):
        # x as (seq, batch, heads, dim) with the table rows at those positions.
        return rope_utils._apply_rotary_pos_emb_bshd(
            x.view(len(pos), 1, 1, -1), emb[pos], rotary_interleaved=False, mscale=factor
        ).view(len(pos), -1)

    notes = [
        "Megatron-Core reads no config.json; the mapping is Megatron-Bridge's (LlamaBridge passes "
        "only the llama3 factor; low/high_freq_factor and original_max_position_embeddings are "
        "fixed at 1, 4, 8192 in RotaryEmbedding._apply_scaling).",
        "Its forward moves inv_freq to torch.cuda.current_device(); here that call returns "
        "the CPU.",
    ]
    if yarn:
        notes.append(
            "Attention multiplies YaRN's cos and sin by the factor "
            "(_yarn_get_concentration_factor_from_config), the factor the forward returns."
        )
    if rope_type == "linear":
        notes.append(
            "Linear scaling multiplies the positions by 1/factor (seq_len_interpolation_factor)."
        )
    cls = type(module)
    source = {"llama3": cls._apply_scaling, "linear": cls.get_freqs_non_repeated}.get(
        rope_type, cls.get_emb if yarn else cls.__init__
    )
    return {
        layer["name"]: {
            "inv_freq": inv_freq.double().tolist(),
            "attention_factor": float(factor),
            "angles": table[:, 0, 0, :pairs].double().tolist(),
            "forward_angles": _protocol.forward_probe(rotate, positions, pairs, "half"),
            "source": _protocol.source_of(source),
            "how": f"{cls.__name__}({', '.join(f'{k}={v}' for k, v in kwargs.items())})"
            f"({context}), as GPTModel builds it from the config's head_dim, rope_theta and "
            "rope_scaling",
            "notes": notes,
        }
        for layer in model["layer_types"]
    }


if __name__ == "__main__":
    _protocol.run("megatron-core", importlib.metadata.version("megatron-core"), measure)
