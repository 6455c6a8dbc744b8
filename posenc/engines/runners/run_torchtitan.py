"""torchtitan's rotary tables for a config.json, built by torchtitan's own RoPE modules.

torchtitan never reads a config.json's rope keys: a model is a named flavor in its model
package (``llama3_configs["8B"]``, ``gptoss_configs["20b"]``) that fixes a ``RoPE.Config``;
its HF state-dict adapters convert weights only. So the config.json keys are mapped onto the
``RoPE.Config`` fields of the RoPE class the family's flavors use (Llama 3: ``ComplexRoPE``,
GPT-OSS: ``CosSinRoPE``), with ``max_seq_len`` the run's context, and the built module's cache
(cos/sin or complex cis at every position) and forward are read.
"""

from __future__ import annotations

import dataclasses
import math
from importlib.metadata import version

import _protocol
import torch
from torchtitan.models.common.rope import ComplexRoPE, CosSinRoPE
from torchtitan.models.gpt_oss import _make_gptoss_attn_config


class _Frequencies(torch.overrides.TorchFunctionMode):
    """Records the frequencies ``_precompute_cache`` multiplies the positions by (the second
    argument of its ``torch.outer``): torchtitan keeps only the product table."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is torch.outer:
            self.seen.append(args[1].clone())
        return func(*args, **(kwargs or {}))


# RoPE.Config's own fields (those of Module.Config, param_init and sharding, say nothing here).
_ROPE_FIELDS = [f.name for f in dataclasses.fields(ComplexRoPE.Config) if f.name != "param_init"]
_ROPE_FIELDS = [f for f in _ROPE_FIELDS if f != "sharding_config"]


def _rope_config(config: dict, rope_class, context: int, head_dim: int):
    """config.json's rope keys under RoPE.Config's names (llama3/__init__.py, gpt_oss/...)."""
    rope = config.get("rope_scaling") or config.get("rope_parameters") or {}
    kind = rope.get("rope_type", rope.get("type", "default"))
    theta = config.get("rope_theta", rope.get("rope_theta", 10000.0))
    fields = {"dim": head_dim, "max_seq_len": context, "theta": theta}
    if kind == "llama3" and rope_class is ComplexRoPE:  # CosSinRoPE raises on Llama scaling
        fields |= {
            "scaling": "llama",
            "scaling_factor": rope["factor"],
            "low_freq_factor": rope["low_freq_factor"],
            "high_freq_factor": rope["high_freq_factor"],
            "original_max_position_embeddings": rope["original_max_position_embeddings"],
        }
    elif kind == "yarn":
        fields |= {
            "scaling": "yarn",
            "rope_factor": rope["factor"],
            "original_seq_len": rope["original_max_position_embeddings"],
        }
        fields |= {k: rope[k] for k in ("beta_fast", "beta_slow", "truncate") if k in rope}
        if "mscale" in rope or "mscale_all_dim" in rope or "attention_factor" in rope:
            raise _protocol.CannotExpress(
                "torchtitan's RoPE.Config has no mscale, mscale_all_dim or attention_factor"
            )
    elif kind != "default":
        raise _protocol.CannotExpress(
            f"torchtitan's RoPE.Config has no {kind!r} scaling (it has none, llama, yarn)"
        )
    return rope_class.Config(**fields)


def measure(model: dict) -> dict:
    config, context = model["config"], model["context"]
    family = config.get("model_type")
    # The families torchtitan has a model for, and the RoPE class their flavors build.
    rope_class = {"llama": ComplexRoPE, "gpt_oss": CosSinRoPE}.get(family)
    if rope_class is None:
        raise _protocol.CannotExpress(f"torchtitan {version('torchtitan')} has no {family} model")
    heads = config["num_attention_heads"]
    head_dim = config.get("head_dim") or config["hidden_size"] // heads
    cfg = _rope_config(config, rope_class, context, head_dim)
    with _Frequencies() as seen:
        rope = cfg.build()
    positions = torch.as_tensor(model["positions"])
    pairs = head_dim // 2
    if rope_class is ComplexRoPE:  # complex cis per pair; rotates adjacent dims (2i, 2i + 1)
        cis = rope.cache[positions]
        cos, sin, layout = cis.real, cis.imag, "interleaved"
    else:  # [cos(dim), sin(dim)] per position; rotate_half (dims i and i + pairs)
        row = rope.cache[positions]
        cos, sin, layout = row[:, :pairs], row[:, head_dim : head_dim + pairs], "half"
    angles, _ = _protocol.angles_from_cos_sin(cos, sin)
    notes = [
        "torchtitan maps no config.json rope keys itself (its named flavors fix them): the "
        "runner passes the config's values under RoPE.Config's names"
    ]
    attention_factor = None  # the Llama model has no attention factor for its scaling
    if family == "gpt_oss":
        # GPT-OSS folds YaRN's mscale into its softmax scale (m² on q·k, i.e. m on q and k).
        attn_cfg = _make_gptoss_attn_config(
            dim=config["hidden_size"],
            layer_id=0,
            n_heads=heads,
            n_kv_heads=config.get("num_key_value_heads", heads),
            head_dim=head_dim,
            rope=cfg,
        )
        with torch.device("meta"):  # no weights: only softmax_scale is read
            attn = attn_cfg.build()
        attention_factor = math.sqrt(attn.softmax_scale * math.sqrt(head_dim))
        notes.append(
            "the YaRN attention factor is folded into the softmax scale (gpt_oss/model.py)"
        )
    if family == "llama" and cfg.scaling == "llama":
        flavor = {"scaling_factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0}
        flavor["original_max_position_embeddings"] = 8192
        differ = {k: (getattr(cfg, k), v) for k, v in flavor.items() if getattr(cfg, k) != v}
        if differ:
            notes.append(
                "torchtitan's own llama3 flavors (llama3/__init__.py) leave the llama scaling at "
                f"RoPE.Config's defaults; this config differs (config, default): {differ}"
            )

    def rotate(x, pos):  # RoPE.forward takes (batch, seq, heads, head_dim) query and key
        q, _ = rope(x[None, :, None, :], x[None, :, None, :], pos[None, :])
        return q[0, :, 0, :]

    layer = {
        "inv_freq": seen.seen[0].double().tolist(),
        "attention_factor": attention_factor,
        "angles": angles,
        "forward_angles": _protocol.forward_probe(rotate, model["positions"], pairs, layout),
        "source": _protocol.source_of(rope_class),
        "how": f"{rope_class.__name__}.Config("
        + ", ".join(f"{f}={getattr(cfg, f)}" for f in _ROPE_FIELDS)
        + ").build() from config.json's head_dim, rope_theta, rope_scaling",
        "notes": notes,
    }
    return {lt["name"]: layer for lt in model["layer_types"]}


if __name__ == "__main__":
    _protocol.run("torchtitan", version("torchtitan"), measure)
