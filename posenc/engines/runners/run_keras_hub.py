"""KerasHub's rotary frequencies and angles for a config.json (see _protocol.py).

KerasHub reads a config.json through its Hugging Face loader: utils/transformers/preset_loader.py
picks a converter by model_type, whose convert_backbone_config gives the backbone's arguments.
The runner calls that converter, then builds the backbone with the arguments that do not touch
the rotary code shrunk (vocabulary, layers, widths: no weights worth the name), so the backbone's
own code constructs each layer's rotary layer, which is read and run here.
"""

from __future__ import annotations

import os

os.environ.setdefault("KERAS_BACKEND", "torch")  # before keras is imported: KerasHub on torch

import importlib.metadata  # noqa: E402

import _protocol  # noqa: E402
import torch  # noqa: E402
from keras_hub.src.utils.transformers import (  # noqa: E402
    convert_gemma3,
    convert_gpt_oss,
    convert_llama3,
    convert_qwen,
)

# preset_loader.py's dispatch for the architectures with rotary layers read here.
CONVERTERS = {
    "llama": convert_llama3,
    "qwen2": convert_qwen,
    "gemma3": convert_gemma3,
    "gemma3_text": convert_gemma3,
    "gpt_oss": convert_gpt_oss,
}


def _backbone(config: dict):
    """The backbone KerasHub's loader builds, sizes unrelated to RoPE made tiny."""
    model_type = config.get("model_type")
    if model_type not in CONVERTERS:
        raise _protocol.CannotExpress(
            f"model_type {model_type!r} (KerasHub's transformers loader has no converter for it)"
        )
    converter = CONVERTERS[model_type]
    defaults = {
        "vocab_size": 32,
        "tie_word_embeddings": False,
        "intermediate_size": 8,
        "num_hidden_layers": 1,
        "use_sliding_window": False,
        "sliding_window": None,
        "num_local_experts": 1,
        "num_experts_per_tok": 1,
        "rms_norm_eps": 1e-6,
    }
    kwargs = converter.convert_backbone_config({**defaults, **config})
    head_dim = kwargs.get("head_dim") or kwargs["hidden_dim"] // kwargs["num_query_heads"]
    # One head whose width is the head_dim (where the backbone derives it from hidden_dim);
    # six layers so Gemma 3's 5-local-1-global pattern has both kinds.
    tiny = dict(
        vocabulary_size=32,
        num_layers=6,
        num_query_heads=1,
        num_key_value_heads=1,
        intermediate_dim=8,
        hidden_dim=head_dim,
    )
    if "head_dim" in kwargs:
        tiny["hidden_dim"] = 8
    kwargs.update(tiny)
    return converter.backbone_cls(**kwargs), kwargs, head_dim, converter


def _rope_of(layer):
    """A decoder layer's rotary layer (each model names its attention and rotary differently)."""
    for name in ("_self_attention_layer", "self_attention_layer", "attention"):
        attention = getattr(layer, name, None)
        if attention is not None:
            return getattr(attention, "rotary_embedding_layer", None) or attention.rope_layer
    raise AttributeError(f"no attention layer in {type(layer).__name__}")


def _rotary(backbone, kind: str):
    """The rotary layer of the backbone's first layer of that kind (Gemma 3 marks its
    sliding layers; in the others every layer has the same rotary layer)."""
    for layer in backbone.transformer_layers:
        if getattr(layer, "use_sliding_window_attention", None) == (kind == "sliding"):
            return _rope_of(layer)
    return _rope_of(backbone.transformer_layers[0])


def measure(model: dict) -> dict:
    config, positions = model["config"], model["positions"]
    backbone, kwargs, head_dim, converter = _backbone(config)
    pairs = head_dim // 2
    pos = torch.as_tensor(positions)
    layers = {}
    for layer in model["layer_types"]:
        rope = _rotary(backbone, layer["kind"])
        inv_freq = rope._get_inverse_freq(head_dim)
        # The layer's own cos/sin at the positions (its call computes them from `positions`
        # the same way), for a (1, n, head_dim) input; YaRN folds its factor into both.
        probe = torch.zeros(1, len(positions), head_dim)
        cos, sin = rope._compute_cos_sin_embedding(probe, positions=pos)
        angles, scale = _protocol.angles_from_cos_sin(cos[0, :, :pairs], sin[0, :, :pairs])

        def rotate(x, p, rope=rope):
            return rope(x[None], positions=p)[0]

        notes = [
            f"KerasHub {converter.__name__.rsplit('.', 1)[-1]}.convert_backbone_config gave: "
            + ", ".join(
                f"{k}={v}" for k, v in sorted(kwargs.items()) if "rope" in k or "wavelength" in k
            ),
            f"Mean magnitude of its cos/sin (the factor it applies): {scale:.9g}.",
        ]
        if config.get("model_type") == "qwen2" and config.get("rope_scaling"):
            notes.append("convert_qwen drops rope_scaling: the Qwen2 backbone runs unscaled RoPE.")
        if config.get("model_type", "").startswith("gemma3"):
            notes.append(
                "Gemma3Backbone fixes the bases at 10000 (sliding) and 1000000 (global) and "
                "the pattern at 5 sliding : 1 global, whatever the config says."
            )
        if config.get("model_type") == "gpt_oss":
            notes.append(
                "GptOssAttention fixes YaRN's beta_fast 32, beta_slow 1, "
                "original_max_position_embeddings 4096 and truncate False; only the "
                "factor comes from the config."
            )
        layers[layer["name"]] = {
            "inv_freq": torch.as_tensor(inv_freq).double().tolist(),
            "attention_factor": scale if rope.rope_type == "yarn" else 1.0,
            "angles": angles,
            "forward_angles": _protocol.forward_probe(rotate, positions, pairs, "half"),
            "source": _protocol.source_of(type(rope)._get_inverse_freq),
            "how": f"{converter.backbone_cls.__name__}(**convert_backbone_config(config)) with "
            f"tiny non-rotary sizes; its {type(rope).__name__}("
            f"max_wavelength={rope.max_wavelength}, "
            f"scaling_factor={rope.scaling_factor}, rope_type={rope.rope_type!r}) at the positions",
            "notes": notes,
        }
    return layers


if __name__ == "__main__":
    _protocol.run("keras-hub", importlib.metadata.version("keras-hub"), measure)
