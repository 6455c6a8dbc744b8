"""LitGPT's rotary tables for a config.json, read from its GPT model's own rope cache.

LitGPT never reads a config.json's rope keys: a model is one of its named ``Config``s
(litgpt/config.py), and convert_hf_checkpoint converts weights only. So the config.json keys
are mapped onto the ``Config`` fields the way LitGPT's own named configs spell them (e.g.
Llama 3.1: ``rope_adjustments=dict(factor, low_freq_factor, high_freq_factor,
original_max_seq_len)``; Gemma 3: ``rope_local_base_freq`` and ``rope_indices``), a one-layer
GPT is made on the meta device (no weights), and ``GPT.rope_cache`` builds the real cos/sin.
"""

from __future__ import annotations

from importlib.metadata import version

import _protocol
import torch
from litgpt.config import Config
from litgpt.model import GPT, apply_rope, build_rope_cache

# The architectures LitGPT has named configs for (a model type outside these has no LitGPT model).
FAMILIES = {
    "llama",
    "mistral",
    "qwen2",
    "qwen3",
    "phi3",
    "gemma",
    "gemma2",
    "gemma3",
    "gemma3_text",
}


class _Frequencies(torch.overrides.TorchFunctionMode):
    """Records the frequencies build_rope_cache multiplies the positions by (the second
    argument of its ``torch.outer`` calls: global, then local): LitGPT keeps only the table."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is torch.outer:
            self.seen.append(args[1].clone())
        return func(*args, **(kwargs or {}))


def _adjustments(config: dict) -> dict | None:
    """config.json's rope_scaling as LitGPT's rope_adjustments (GPT.rope_cache's names)."""
    rope = config.get("rope_scaling") or config.get("rope_parameters") or {}
    kind = rope.get("rope_type", rope.get("type", "default"))
    if kind == "default":
        return None
    if kind == "linear":
        return {"factor": rope["factor"]}
    original = {"original_max_seq_len": rope.get("original_max_position_embeddings")}
    if kind == "llama3":
        keys = ("factor", "low_freq_factor", "high_freq_factor")
        return {k: rope[k] for k in keys} | original
    if kind == "yarn":
        # GPT.rope_cache demands beta_fast/beta_slow; a config that omits them means YaRN's
        # defaults (32, 1), as transformers reads it. mscale/mscale_all_dim pass through.
        extra = {k: rope[k] for k in ("mscale", "mscale_all_dim") if k in rope}
        betas = {"beta_fast": rope.get("beta_fast", 32.0), "beta_slow": rope.get("beta_slow", 1.0)}
        return {"factor": rope["factor"]} | betas | original | extra
    raise _protocol.CannotExpress(
        f"LitGPT's build_rope_cache has no {kind!r} scaling (it knows llama3, yarn and linear)"
    )


def measure(model: dict) -> dict:
    config, context = model["config"], model["context"]
    if config.get("model_type") not in FAMILIES:
        raise _protocol.CannotExpress(
            f"LitGPT {version('litgpt')} has no {config.get('model_type')} model in config.py"
        )
    heads = config["num_attention_heads"]
    head_dim = config.get("head_dim") or config["hidden_size"] // heads
    fields = {
        "n_layer": 1,
        "n_embd": config["hidden_size"],
        "n_head": heads,
        "n_query_groups": config.get("num_key_value_heads", heads),
        "head_size": head_dim,
        "rotary_percentage": config.get("partial_rotary_factor", 1.0),
        "rope_base": config.get("rope_theta", 10000),
        "rope_adjustments": _adjustments(config),
        "block_size": context,
        "padded_vocab_size": 1,
        "intermediate_size": 1,
    }
    if "rope_local_base_freq" in config:  # Gemma 3: sliding layers turn by a local base
        fields["rope_local_base_freq"] = config["rope_local_base_freq"]
        fields["rope_indices"] = [1]
    cfg = Config(**fields)
    with torch.device("meta"):
        gpt = GPT(cfg)  # meta: builds no weights; only rope_cache below makes real tensors
    gpt.max_seq_length = context
    with _Frequencies() as seen:
        cos, sin = gpt.rope_cache(device=torch.device("cpu"))
    positions = torch.as_tensor(model["positions"])
    pairs = cfg.rope_n_elem // 2
    mscale = gpt.transformer.h[0].attn.mscale  # on q and k each, via the softmax scale
    notes = [
        "LitGPT maps no config.json rope keys itself (its named Configs fix them): the runner "
        "passes the config's values under the names LitGPT's own configs use"
    ]
    rope = config.get("rope_scaling") or {}
    if "truncate" in rope:
        notes.append(
            f"rope_scaling.truncate={rope['truncate']} is not passed: GPT.rope_cache forwards "
            "only factor, beta_fast, beta_slow, original_max_seq_len, mscale, mscale_all_dim, "
            "and build_rope_cache then truncates (extra_config.get('truncate', True))"
        )
    if (config.get("rope_scaling") or {}).get("rope_type", rope.get("type")) == "yarn":
        notes.append(
            "build_rope_cache's YaRN blend weights the interpolated (scaled) frequencies by "
            "1 - ramp, the reverse of YaRN's: the fastest pairs are scaled by 1/factor and the "
            "slowest kept (litgpt/model.py:1022: theta_interpolation * (1 - ramp) + "
            "theta_extrapolation * ramp)"
        )
        notes.append(
            "its attention_scaling is 1 unless the config gives mscale or mscale_all_dim "
            "(litgpt/model.py:980): "
            "YaRN's default 0.1 ln(factor) + 1 is not applied"
        )
    layers = {}
    for lt in model["layer_types"]:
        # GPT.forward picks cos[..., rope_indices[block]]: 0 the global base, 1 the local one.
        which = 1 if lt["kind"] == "sliding" and cfg.rope_local_base_freq is not None else 0
        c, s = (cos[..., which], sin[..., which]) if cos.dim() == 3 else (cos, sin)
        angles, scale = _protocol.angles_from_cos_sin(c[positions, :pairs], s[positions, :pairs])

        def rotate(x, pos, c=c, s=s):  # apply_rope takes (B, ..., T, head) and (1, T, n_elem)
            return apply_rope(x[None], c[pos][None], s[pos][None])[0]

        layers[lt["name"]] = {
            "inv_freq": seen.seen[which].double().tolist(),
            # build_rope_cache folds YaRN's attention_scaling into cos/sin; the attention
            # multiplies the softmax scale by mscale² for mscale_all_dim.
            # (rounded to float32's precision: |cos, sin| of a float32 table is 1 ± 1e-7)
            "attention_factor": round(scale * mscale, 6),
            "angles": angles,
            "forward_angles": _protocol.forward_probe(rotate, model["positions"], pairs, "half"),
            "source": _protocol.source_of(build_rope_cache),
            "how": f"GPT(Config({', '.join(f'{k}={v}' for k, v in fields.items())})).rope_cache()"
            f" on config.json's keys; table index {which} (GPT.forward's rope_indices)",
            "notes": notes,
        }
    return layers


if __name__ == "__main__":
    _protocol.run("litgpt", version("litgpt"), measure)
