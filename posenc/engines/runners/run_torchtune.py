"""torchtune's rotary tables for a config.json, built by torchtune's own model builders.

torchtune never reads a config.json's rope keys: a model is one of its named builders
(``llama3_1_8b()`` etc.), whose component builder (``llama3_1(...)``) makes the rope module
from a handful of arguments; its HF checkpointer reads config.json only for the weight layout.
So the config's keys are mapped onto the component builder of the model's family, the builder
is run (one layer, a vocabulary of one: no weights worth the name) and the rope module of its
first attention layer is read: its ``theta`` buffer (the frequencies), its ``cache`` (cos, sin at
every position up to ``max_seq_len``) and its ``forward``.
"""

from __future__ import annotations

from importlib.metadata import version

import _protocol
import torch
from torchtune.models.llama3 import llama3
from torchtune.models.llama3_1 import llama3_1
from torchtune.models.phi3 import phi3
from torchtune.models.qwen2 import qwen2


def _scaling(config: dict) -> tuple[str, dict]:
    rope = config.get("rope_scaling") or config.get("rope_parameters") or {}
    return rope.get("rope_type", rope.get("type", "default")), rope


def _builder(config: dict, context: int):
    """(component builder, its rope arguments, how) for the config's family, as torchtune's
    named builders call it; CannotExpress where torchtune has no such model or scaling."""
    family, (kind, rope) = config.get("model_type"), _scaling(config)
    theta = config.get("rope_theta", rope.get("rope_theta"))
    if family == "llama" and kind == "llama3":
        # llama3_1/_component_builders.py passes only scale_factor to Llama3ScaledRoPE; its
        # low/high_freq_factor and old_context_len stay at their defaults (1, 4, 8192).
        return (
            llama3_1,
            {"rope_base": theta, "scale_factor": rope["factor"]},
            f"llama3_1(rope_base=rope_theta={theta}, scale_factor=rope_scaling.factor="
            f"{rope['factor']}, max_seq_len={context}) (llama3_2's builder makes the same "
            "Llama3ScaledRoPE call)",
        )
    if family == "llama" and kind == "default":
        return llama3, {"rope_base": theta}, f"llama3(rope_base=rope_theta={theta})"
    if family == "qwen2" and kind == "default":
        return qwen2, {"rope_base": theta}, f"qwen2(rope_base=rope_theta={theta})"
    if family == "phi3" and kind == "default":
        return phi3, {"rope_base": theta}, f"phi3(rope_base=rope_theta={theta})"
    if family in ("llama", "qwen2", "phi3"):
        raise _protocol.CannotExpress(
            f"torchtune's {family} builder takes no rope scaling of type {kind!r} "
            "(its only scaled rope is Llama3ScaledRoPE)"
        )
    raise _protocol.CannotExpress(f"torchtune {version('torchtune')} has no {family} model")


def measure(model: dict) -> dict:
    config, context = model["config"], model["context"]
    build, rope_args, how = _builder(config, context)
    heads, hidden = config["num_attention_heads"], config["hidden_size"]
    head_dim = config.get("head_dim", hidden // heads)
    if head_dim != hidden // heads:
        # Every torchtune builder derives head_dim = embed_dim // num_heads.
        raise _protocol.CannotExpress(
            f"torchtune's builders derive head_dim as hidden_size // heads = {hidden // heads}; "
            f"the config's head_dim is {head_dim}"
        )
    decoder = build(
        vocab_size=1,  # the rope does not depend on these: kept tiny so nothing large is made
        num_layers=1,
        intermediate_dim=1,
        num_heads=heads,
        num_kv_heads=config.get("num_key_value_heads", heads),
        embed_dim=hidden,
        max_seq_len=context,
        **rope_args,
    )
    rope = decoder.layers[0].attn.pos_embeddings
    positions = torch.as_tensor(model["positions"])
    pairs = head_dim // 2
    cache = rope.cache[positions]
    if cache.dim() == 3:  # (pos, pairs, [cos, sin]): rotates adjacent dims (2i, 2i+1)
        cos, sin, layout = cache[..., 0], cache[..., 1], "interleaved"
    else:  # (pos, [cos(dim), sin(dim)]): rotate_half, dims i and i + pairs
        cos, sin, layout = cache[:, :pairs], cache[:, head_dim : head_dim + pairs], "half"
    angles, _ = _protocol.angles_from_cos_sin(cos, sin)

    def rotate(x, pos):  # torchtune's forward takes (batch, seq, heads, head_dim)
        return rope(x[None, :, None, :], input_pos=pos[None, :])[0, :, 0, :]

    notes = [
        "torchtune maps no config.json rope keys itself: its named builders fix them; the "
        "runner passes the config's values to the family's component builder"
    ]
    kind, scaling = _scaling(config)
    if kind == "llama3":
        fixed = {"low_freq_factor": 1.0, "high_freq_factor": 4.0}
        fixed["original_max_position_embeddings"] = 8192
        differ = {k: scaling.get(k) for k, v in fixed.items() if scaling.get(k, v) != v}
        notes.append(
            "Llama3ScaledRoPE's low_freq_factor, high_freq_factor and old_context_len are not "
            "passed by torchtune's llama3_1/llama3_2 builders and stay 1, 4, 8192"
            + (f"; this config differs: {differ}" if differ else " (as this config has them)")
        )
    layer = {
        "inv_freq": rope.theta.double().tolist(),
        "attention_factor": None,  # torchtune's rope modules have no attention factor
        "angles": angles,
        "forward_angles": _protocol.forward_probe(rotate, model["positions"], pairs, layout),
        "source": _protocol.source_of(type(rope)),
        "how": how + f"; read {type(rope).__name__} of layer 0 (theta, cache, forward)",
        "notes": notes,
    }
    return {lt["name"]: layer for lt in model["layer_types"]}


if __name__ == "__main__":
    _protocol.run("torchtune", version("torchtune"), measure)
