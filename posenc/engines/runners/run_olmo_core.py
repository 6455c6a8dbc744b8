"""olmo-core's rotary frequencies and angles for a config.json (see _protocol.py).

olmo-core reads no config.json: its models are built from its own TransformerConfig
(``llama_like``, ``gemma3_like``), and its Hugging Face code only exports (each RoPE scaling
config's ``to_hf_config``). So a config.json is mapped here by inverting those exports:
``linear`` -> PIRoPEScalingConfig, ``llama3`` -> StepwiseRoPEScalingConfig, ``yarn`` ->
YaRNRoPEScalingConfig; every other scaling type has no olmo-core class.
"""

from __future__ import annotations

import importlib.metadata

import _protocol
import torch
from olmo_core.nn import rope as olmo_rope
from olmo_core.nn.transformer.config import TransformerConfig

CPU = torch.device("cpu")


def _rope_dict(config: dict, kind: str) -> dict:
    """The config's rope parameters for a layer kind, in either of HF's spellings: per layer
    type under rope_parameters, or rope_theta + rope_scaling (Gemma 3's sliding layers: only
    rope_local_base_freq, unscaled)."""
    params = config.get("rope_parameters") or {}
    if "full_attention" in params or "sliding_attention" in params:
        return params.get("full_attention" if kind == "full" else "sliding_attention") or {}
    if kind == "sliding" and "rope_local_base_freq" in config:
        return {"rope_theta": config["rope_local_base_freq"]}
    return {
        "rope_theta": config.get("rope_theta", 10000),
        **(config.get("rope_scaling") or {}),
        **params,
    }


def _scaling(rope: dict):
    """The olmo-core scaling config whose ``to_hf_config`` gives back ``rope``."""
    rope_type = rope.get("rope_type", rope.get("type", "default"))
    if rope_type == "default":
        return None
    if rope_type == "linear":
        return olmo_rope.PIRoPEScalingConfig(factor=rope["factor"])
    if rope_type == "llama3":
        return olmo_rope.StepwiseRoPEScalingConfig(
            factor=rope["factor"],
            low_freq_proportion=1.0 - 1.0 / rope["low_freq_factor"],
            high_freq_proportion=1.0 / rope["high_freq_factor"],
            old_context_len=rope["original_max_position_embeddings"],
        )
    if rope_type == "yarn":
        # olmo-core's YaRN always rounds the ramp bounds and always uses 0.1·ln(s) + 1.
        if rope.get("truncate", True) is False:
            raise _protocol.CannotExpress(
                "YaRN with truncate: false (olmo-core's YaRNRoPEScalingConfig always floors/ceils "
                "the ramp bounds)"
            )
        for key in ("mscale", "mscale_all_dim", "attention_factor"):
            if rope.get(key) is not None:
                raise _protocol.CannotExpress(f"YaRN's {key} (olmo-core has no such field)")
        return olmo_rope.YaRNRoPEScalingConfig(
            factor=rope["factor"],
            beta_fast=rope.get("beta_fast", 32),
            beta_slow=rope.get("beta_slow", 1),
            old_context_len=rope["original_max_position_embeddings"],
        )
    raise _protocol.CannotExpress(
        f"RoPE scaling type {rope_type!r} (olmo-core has no class for it)"
    )


def _transformer(config: dict) -> tuple[TransformerConfig, int]:
    """The TransformerConfig olmo-core's own builders give for this architecture."""
    heads = config["num_attention_heads"]
    head_dim = config.get("head_dim") or config["hidden_size"] // heads
    common = dict(
        d_model=config["hidden_size"],
        vocab_size=config.get("vocab_size", 32000),
        n_layers=config.get("num_hidden_layers", 1),
        n_heads=heads,
        n_kv_heads=config.get("num_key_value_heads", heads),
        head_dim=head_dim,
    )
    # GPT-NeoX names the rotated share rotary_pct (transformers maps it to partial_rotary_factor).
    if config.get("partial_rotary_factor", config.get("rotary_pct", 1.0)) != 1.0:
        raise _protocol.CannotExpress("partial_rotary_factor (llama_like has no argument for it)")
    if config.get("model_type") in ("gemma3", "gemma3_text"):
        # gemma3_like: local (sliding) blocks at rope_local_base_freq, global blocks at
        # rope_theta. Its with_rope_scaling refuses named blocks, so the global block's RoPE
        # gets the scaling directly, as HF's Gemma 3 scales only its full-attention layers.
        full, local = _rope_dict(config, "full"), _rope_dict(config, "sliding")
        built = TransformerConfig.gemma3_like(
            hidden_size=config.get("intermediate_size", 4 * config["hidden_size"]),
            local_rope_theta=local.get("rope_theta", 10000),
            global_rope_theta=full.get("rope_theta", 1_000_000),
            **common,
        )
        built.block["global"].sequence_mixer.rope.scaling = _scaling(full)
        if _scaling(local) is not None:
            built.block["local"].sequence_mixer.rope.scaling = _scaling(local)
        return built, head_dim
    rope = _rope_dict(config, "full")
    built = TransformerConfig.llama_like(
        rope_theta=rope.get("rope_theta", 10000),
        rope_scaling=_scaling(rope),
        **common,
    )
    return built, head_dim


def measure(model: dict) -> dict:
    config, context, positions = model["config"], model["context"], model["positions"]
    built, head_dim = _transformer(config)
    gemma = isinstance(built.block, dict)
    layers = {}
    for layer in model["layer_types"]:
        block = (
            built.block[("global" if layer["kind"] == "full" else "local")]
            if gemma
            else built.block
        )
        rope_config = block.sequence_mixer.rope
        module = rope_config.build(head_size=head_dim)
        scaling = rope_config.scaling
        if scaling is None:
            inv_freq, factor = (
                olmo_rope.compute_inv_freqs(rope_config.theta, module.rotary_dim, CPU),
                1.0,
            )
            source = olmo_rope.compute_inv_freqs
        else:
            inv_freq, factor = scaling.compute_scaled_inv_freq(
                rope_config.theta, module.rotary_dim, CPU
            )
            source = type(scaling).compute_scaled_inv_freq
        pairs = module.rotary_dim // 2
        # The tables a run of `context` tokens uses: (context, rotary_dim) sin and cos, the
        # two halves repeated (rotate_half layout), already multiplied by the factor.
        buffers = module.get_buffers(context, CPU)
        index = torch.as_tensor(positions)
        angles, scale = _protocol.angles_from_cos_sin(
            buffers.pos_cos[index, :pairs], buffers.pos_sin[index, :pairs]
        )

        def rotate(x, pos, module=module, buffers=buffers):
            # olmo-core's forward, one position at a time (start_pos), on its own tables.
            rows = []
            for p, row in zip(pos.tolist(), x):
                q = row.view(1, 1, 1, -1)
                out, _ = module(
                    q,
                    q,
                    head_first=True,
                    start_pos=p,
                    pos_sin=buffers.pos_sin,
                    pos_cos=buffers.pos_cos,
                )
                rows.append(out.view(-1))
            return torch.stack(rows)

        layers[layer["name"]] = {
            "inv_freq": inv_freq.double().tolist(),
            "attention_factor": float(factor),
            "angles": angles,
            "forward_angles": _protocol.forward_probe(rotate, positions, pairs, "half"),
            "source": _protocol.source_of(source),
            "how": (
                f"TransformerConfig.{'gemma3_like' if gemma else 'llama_like'}(rope_theta="
                f"{rope_config.theta}, scaling={type(scaling).__name__ if scaling else None}) from "
                "the config's rope_theta/rope_scaling (each scaling class built as the inverse of "
                f"its to_hf_config); RoPEConfig.build(head_size={head_dim}).get_buffers({context})"
            ),
            "notes": [
                "olmo-core has no config.json reader: the mapping inverts its HF export "
                "(to_hf_config of PIRoPEScalingConfig, StepwiseRoPEScalingConfig, "
                "YaRNRoPEScalingConfig).",
                "Its table multiplies sin and cos by the factor (mean magnitude read back: "
                f"{scale:.9g}).",
            ]
            + (
                [
                    "olmo-core's YaRN factor is always 0.1·ln(factor) + 1 "
                    "(get_attention_rescale_factor)."
                ]
                if isinstance(scaling, olmo_rope.YaRNRoPEScalingConfig)
                else []
            )
            + (
                [
                    "gemma3_like's with_rope_scaling refuses named blocks: the scaling is set "
                    "on the global block's RoPEConfig directly."
                ]
                if gemma
                else []
            ),
        }
    return layers


if __name__ == "__main__":
    _protocol.run("olmo-core", importlib.metadata.version("ai2-olmo-core"), measure)
